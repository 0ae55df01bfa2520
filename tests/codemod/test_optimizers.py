"""Optimizers found by what builds and steps them (codemod/optimizers.py), here: a factory in
another module of the project."""

from __future__ import annotations

import pytest

from regcomp_lint.codemod import convert_source

TRAIN = """\
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

from optim_utils import build_optimizer

model = nn.Linear(4, 1)
loader = DataLoader(TensorDataset(torch.randn(64, 4), torch.randn(64, 1)), batch_size=8)
optimizer = build_optimizer(model, 0.1)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)
for epoch in range(2):
    for x, y in loader:
        loss = nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    scheduler.step()
"""


@pytest.mark.parametrize(
    "factory",
    [
        "import torch\n\n\ndef build_optimizer(model, lr):\n    return torch.optim.SGD(model.parameters(), lr=lr)\n",
        "from torch.optim import AdamW\n\n\ndef build_optimizer(model, lr):\n    opt = AdamW(model.parameters(), lr=lr)\n"
        "    return opt\n",
    ],
)
def test_an_optimizer_factory_of_another_module_is_followed(tmp_path, factory):
    (tmp_path / "optim_utils.py").write_text(factory)
    result = convert_source(TRAIN, str(tmp_path / "train.py"))
    assert result.refused is None, result.refused
    assert "model, optimizer, loader = accelerator.prepare(model, optimizer, loader)" in result.text
    # its scheduler steps once per epoch on that optimizer: left unprepared
    assert any(n.startswith("scheduler steps once per epoch") for n in result.notes), result.notes


def test_a_function_of_another_module_returning_no_optimizer_is_not_one(tmp_path):
    (tmp_path / "optim_utils.py").write_text("def build_optimizer(model, lr):\n    return make_something(model)\n")
    result = convert_source(TRAIN, str(tmp_path / "train.py"))
    assert result.refused is not None and "no optimizer found" in result.refused


TUPLE_FACTORY = """\
import torch


def build_optimizer_and_scheduler(model, cfg):
    optimizer = torch.optim.SGD(model.parameters(), lr=cfg["lr"], momentum=0.9)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=cfg["epochs"])
    return optimizer, scheduler
"""


@pytest.mark.parametrize("module", ["optim", "utils.optim"])
def test_an_optimizer_and_scheduler_factory_of_another_module_returning_a_tuple_is_followed(tmp_path, module):
    """A supernet trainer's optimizer, scheduler = build_optimizer_and_scheduler(model, cfg) from
    utils/optim.py: it was refused (no optimizer found)."""
    path = tmp_path.joinpath(*module.split(".")).with_suffix(".py")
    path.parent.mkdir(exist_ok=True)
    if module == "utils.optim":
        (tmp_path / "utils" / "__init__.py").write_text("")
    path.write_text(TUPLE_FACTORY)
    text = (
        TRAIN.replace("from optim_utils import build_optimizer", f"from {module} import build_optimizer_and_scheduler")
        .replace(
            "optimizer = build_optimizer(model, 0.1)",
            'optimizer, scheduler = build_optimizer_and_scheduler(model, {"lr": 0.1, "epochs": 2})',
        )
        .replace("scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)\n", "")
    )
    result = convert_source(text, str(tmp_path / "train.py"))
    assert result.refused is None, result.refused
    # the scheduler steps once per epoch: left unprepared, its LR moves as in the original
    assert "model, optimizer, loader = accelerator.prepare(model, optimizer, loader)" in result.text


def test_a_tuple_of_another_module_without_an_optimizer_is_not_one(tmp_path):
    (tmp_path / "optim.py").write_text("def build_optimizer_and_scheduler(model, cfg):\n    return make(model), None\n")
    text = TRAIN.replace(
        "from optim_utils import build_optimizer", "from optim import build_optimizer_and_scheduler"
    ).replace(
        "optimizer = build_optimizer(model, 0.1)", "optimizer, scheduler = build_optimizer_and_scheduler(model, {})"
    )
    result = convert_source(text, str(tmp_path / "train.py"))
    assert result.refused is not None and "no optimizer found" in result.refused


HAND_UPDATED = """\
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 1)

    def init_hidden(self):
        weight = next(self.parameters())
        return weight.new_zeros(1)

    def forward(self, x):
        return self.fc(x)


model = Net()
lr = 0.1
for step in range(3):
    model.zero_grad()
    model(torch.randn(2, 4)).sum().backward()
    for p in model.parameters():
        p.data.add_(p.grad, alpha=-lr)
"""


@pytest.mark.parametrize("update", ["p.data.add_(p.grad, alpha=-lr)", "p.data -= lr * p.grad", "p.sub_(lr * p.grad)"])
def test_parameters_updated_by_hand_convert_with_the_model_prepared_alone(update):
    """pytorch/examples' word language model: no optimizer, a hand-written SGD step. The model
    is prepared alone, the update stays (it reads the gradients DDP averaged), and fp16's loss
    scaling is kept off: the update would read scaled gradients."""
    result = convert_source(HAND_UPDATED.replace("p.data.add_(p.grad, alpha=-lr)", update), "train.py")
    assert result.refused is None, result.refused
    assert "model = accelerator.prepare(model)\n" in result.text
    assert 'Accelerator(dynamo_plugin=dynamo_plugin, mixed_precision="no", cpu=True)' in result.text
    assert "    accelerator.backward(model(torch.randn(2, 4)).sum())\n" in result.text
    assert f"        {update}\n" in result.text
    assert any(f"updated by hand ({update!r}, line 24)" in note for note in result.notes), result.notes


def test_parameters_updated_by_hand_of_a_model_built_outside_the_training_code_are_refused_naming_the_update():
    """The Hogwild-style worker that is handed its model: nowhere to prepare it."""
    text = HAND_UPDATED.replace(
        "model = Net()\nlr = 0.1\nfor step in range(3):\n", "lr = 0.1\n\n\ndef train(model):\n  for step in range(3):\n"
    )
    refused = convert_source(text, "train.py").refused
    assert refused is not None, "converted"
    assert "the parameters are updated by hand ('p.data.add_(p.grad, alpha=-lr)' at line 26)" in refused, refused
    assert "model is not built where the training code can be prepared" in refused, refused


def test_a_builtin_fed_parameters_is_not_named_as_a_would_be_optimizer():
    refused = convert_source(
        HAND_UPDATED.replace("        p.data.add_(p.grad, alpha=-lr)\n", "        pass\n"), "train.py"
    ).refused
    assert refused is not None and "no optimizer found" in refused and "next(self.parameters())" not in refused, refused


BESIDE_TRACED = """\
import torch
import torch.nn as nn

model = nn.Linear(4, 4)
param_groups = [dict(params=[model.bias], lr=0.1)]
opt1 = torch.optim.SGD(param_groups, momentum=0.9)
opt2 = torch.optim.Adam([p for p in model.parameters() if p.ndim == 2], lr=1e-3)
optimizers = [opt1, opt2]
for step in range(5):
    loss = model(torch.randn(2, 4)).sum()
    loss.backward()
    for o in optimizers:
        o.step()
        o.zero_grad()
"""


def test_an_untraced_optimizer_beside_a_traced_one_of_the_only_model_is_prepared_too():
    """airbench's SGD over hand-built param groups beside its Muon: it was silently left out of
    prepare() (fp16 would step it on scaled gradients)."""
    result = convert_source(BESIDE_TRACED, "train.py")
    assert result.refused is None, result.refused
    assert "model, opt1, opt2 = accelerator.prepare(model, opt1, opt2)\noptimizers = [opt1, opt2]\n" in result.text
    assert any("opt1 = torch.optim.SGD(...) at line 6: its parameters cannot be traced" in n for n in result.notes)


def test_an_untraced_optimizer_beside_two_models_is_refused_naming_it():
    text = (
        BESIDE_TRACED.replace("model = nn.Linear(4, 4)\n", "model = nn.Linear(4, 4)\nhead = nn.Linear(4, 4)\n")
        .replace(
            "opt2 = torch.optim.Adam([p for p in model.parameters() if p.ndim == 2], lr=1e-3)\n",
            "opt2 = torch.optim.Adam([p for p in model.parameters() if p.ndim == 2], lr=1e-3)\n"
            "opt3 = torch.optim.Adam(head.parameters())\n",
        )
        .replace("loss = model(torch.randn(2, 4)).sum()", "loss = head(model(torch.randn(2, 4))).sum()")
    )
    refused = convert_source(text, "train.py").refused
    assert refused is not None and "opt1 = torch.optim.SGD(...) at line 7 is built from parameters" in refused, refused


SUBMODULE_GROUPS = """\
import torch


def train(model, data):
    hidden, rest = [], []
    for block in model.blocks:
        for p in block.parameters():
            (hidden if p.ndim >= 2 else rest).append(p)
    for p in model.head.parameters():
        rest.append(p)
    optimizer = torch.optim.AdamW([dict(params=hidden), dict(params=rest, weight_decay=0.0)], lr=1e-3)
    for x in data:
        optimizer.zero_grad()
        loss = model(x).sum()
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    train(torch.nn.Sequential(), [torch.randn(2, 4)])
"""


def test_param_groups_filled_from_a_loop_over_submodules_belong_to_the_model():
    """Sweep 15 (a Muon-style trainer): `for block in model.blocks: for p in block.parameters()`
    made the loop variable `block` a model: `block, optimizer = accelerator.prepare(block, optimizer)`
    left the model itself unprepared (and with a second branch, `model, model, block, ...`)."""
    result = convert_source(SUBMODULE_GROUPS, "train.py")
    assert result.refused is None, result.refused
    assert "model, optimizer = accelerator.prepare(model, optimizer)\n" in result.text
    assert "block" not in next(n for n in result.notes if n.startswith("prepared:"))


EVAL_CHOSEN = """\
import torch
import torch.nn as nn


def build_optim(model, optim, lr):
    optim_cls = eval(optim, dict(torch=torch))
    return optim_cls(list(model.parameters()), lr=lr)


model = nn.Linear(4, 1)
optim = build_optim(model, "torch.optim.AdamW", 1e-3)
for step in range(10):
    loss = model(torch.randn(8, 4)).pow(2).mean()
    loss.backward()
    if step % 5 == 0:
        grads = [p.grad.detach() for p in model.parameters() if p.grad is not None]
        grad_norm = torch.linalg.vector_norm(torch.stack(torch._foreach_norm(grads)))
    optim.step()
    optim.zero_grad()
"""


def test_an_optimizer_whose_class_is_evaluated_is_named_first_in_the_refusal():
    """A face-recognition trainer (survey 21e): ``optim = build_optim(model, args.optim, ...)``, whose
    class comes from ``eval(args.optim)``. The refusal named only a gradient-norm line
    (``torch._foreach_norm(grads)``, "fed model parameters but is not used as an optimizer"), not the
    optimizer the script zeroes and steps."""
    refused = convert_source(EVAL_CHOSEN, "train.py").refused
    assert refused is not None and "no optimizer found" in refused, refused
    assert "optim = build_optim(...) at line 11, stepped by optim.step() at line 18" in refused, refused
    assert refused.index("optim = build_optim(") < refused.index("_foreach_norm"), refused


def test_a_models_configure_optimizer_in_the_singular_is_its_optimizer():
    """build-nanogpt's forks (survey22a ddpinfo_trainer): ``raw_model.configure_optimizer(...)``.
    Before: refused, "no optimizer found ... model.configure_optimizer(...) at line 17"."""
    text = (
        "import torch\n\n\n"
        "class Net(torch.nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.fc = torch.nn.Linear(2, 1)\n\n"
        "    def forward(self, x):\n"
        "        return self.fc(x)\n\n"
        "    def configure_optimizer(self, weight_decay, learning_rate):\n"
        "        return torch.optim.AdamW(self.parameters(), lr=learning_rate, weight_decay=weight_decay)\n\n\n"
        "model = Net()\n"
        "optimizer = model.configure_optimizer(weight_decay=0.1, learning_rate=1e-3)\n"
        "for _ in range(3):\n"
        "    optimizer.zero_grad()\n"
        "    model(torch.randn(4, 2)).sum().backward()\n"
        "    optimizer.step()\n"
    )
    result = convert_source(text, "train.py")
    assert result.refused is None, result.refused
    assert "model, optimizer = accelerator.prepare(model, optimizer)\n" in result.text


IDDM_FACTORY = """\
import torch


def optimizer_initializer(model, optim, init_lr, device):
    model_param = model.parameters()
    if optim == "adam":
        optimizer = torch.optim.Adam(params=model_param, lr=init_lr)
    elif optim == "sgd":
        optimizer = torch.optim.SGD(params=model_param, lr=init_lr, momentum=0.937)
    else:
        optimizer = torch.optim.AdamW(params=model_param, lr=init_lr)
    return optimizer
"""


def test_a_factory_of_another_module_handed_the_model_by_keyword(tmp_path):
    """Survey 22c's IDDM super-resolution trainer: ``optimizer_initializer(model=model, optim=optim,
    init_lr=init_lr, device=device)`` of utils/initializer.py. Handed by keyword, the model was not
    seen, and the refusal said the call "is not one the conversion can tell is an optimizer"."""
    (tmp_path / "optim_utils.py").write_text(IDDM_FACTORY)
    text = TRAIN.replace("from optim_utils import build_optimizer", "from optim_utils import optimizer_initializer")
    text = text.replace(
        "build_optimizer(model, 0.1)", 'optimizer_initializer(model=model, optim="sgd", init_lr=0.1, device="cpu")'
    )
    result = convert_source(text, str(tmp_path / "train.py"))
    assert result.refused is None, result.refused
    assert "model, optimizer, loader = accelerator.prepare(model, optimizer, loader)" in result.text


TWO_WORKERS = """import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP


def train_worker(rank, world_size):
    dist.init_process_group("gloo", rank=rank, world_size=world_size)
    model = DDP(torch.nn.Linear(2, 1))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for x in torch.randn(4, 3, 2):
        optimizer.zero_grad()
        model(x).sum().backward()
        optimizer.step()


def pretrain_worker(rank, world_size):
    dist.init_process_group("gloo", rank=rank, world_size=world_size)
    model = DDP(torch.nn.Linear(2, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for x in torch.randn(4, 3, 2):
        optimizer.zero_grad()
        model(x).sum().backward()
        optimizer.step()


if __name__ == "__main__":
    PRETRAIN = False
    if PRETRAIN:
        mp.spawn(pretrain_worker, args=(2,), nprocs=2)
    else:
        mp.spawn(train_worker, args=(2,), nprocs=2)
"""


def test_optimizers_built_in_several_functions_are_refused_naming_each_line():
    """Survey 22b (arp_spawn: a train_worker() and a pretrain_worker(), each spawned, each with its
    own DDP model and optimizer): the refusal named the two functions but not where in them."""
    refused = convert_source(TWO_WORKERS, "train.py").refused
    assert refused is not None, "converted"
    assert "optimizers are built in several places" in refused, refused
    assert "train_worker() (optimizer = torch.optim.AdamW(...) at line 10)" in refused, refused
    assert "pretrain_worker() (optimizer = torch.optim.SGD(...) at line 20)" in refused, refused


PARAM_GROUP_HELPER = """\
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def param_groups(model):
    return [
        {"params": [p for n, p in model.named_parameters() if "bias" not in n], "weight_decay": 1e-4},
        {"params": [p for n, p in model.named_parameters() if "bias" in n], "weight_decay": 0.0},
    ]


def build_optimizer(groups, lr):
    optimizer = torch.optim.SGD(groups, lr=lr, momentum=0.9)
    return optimizer


def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 2))
    OPTIMIZER
    for step in range(3):
        optimizer.zero_grad()
        loss = model(torch.randn(8, 4)).pow(2).mean()
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    main()
"""


@pytest.mark.parametrize(
    "optimizer",
    [
        "groups = param_groups(model)\n    optimizer = build_optimizer(groups, 0.1)",
        "optimizer = build_optimizer(param_groups(model), lr=0.1)",
    ],
)
def test_a_factory_fed_a_param_group_helpers_groups_optimizes_the_model_handed_to_the_helper(optimizer):
    # survey 24a (SimCLR branches, LARS): `program_groups = prarmater_groups(args, model)` then
    # `lars_wrapper(program_groups, lr)`; refused before as "parameters whose model cannot be traced"
    result = convert_source(PARAM_GROUP_HELPER.replace("OPTIMIZER", optimizer), "train.py")
    assert result.refused is None, result.refused
    assert "model, optimizer = accelerator.prepare(model, optimizer)" in result.text


LARS_MODULE = """\
from torch.optim.optimizer import Optimizer


class LARS(Optimizer):
    def __init__(self, optimizer, trust_coef=0.001):
        self.optim = optimizer
        self.trust_coef = trust_coef

    @property
    def param_groups(self):
        return self.optim.param_groups

    def zero_grad(self):
        self.optim.zero_grad()

    def step(self, *args, **kwargs):
        return self.optim.step(*args, **kwargs)
"""

LARS_FACTORY = PARAM_GROUP_HELPER.replace("import torch\n", "import torch\nfrom lars import LARS\n", 1).replace(
    "    optimizer = torch.optim.SGD(groups, lr=lr, momentum=0.9)\n    return optimizer\n",
    "    base_optimizer = torch.optim.SGD(groups, lr=lr, momentum=0.9)\n    optimizer = LARS(base_optimizer)\n"
    "    return optimizer\n",
)
LARS_SCRIPT = LARS_FACTORY.replace(
    "OPTIMIZER", "groups = param_groups(model)\n    optimizer = build_optimizer(groups, 0.1)"
)


def test_an_optimizer_class_of_a_project_module_wrapping_the_factorys_optimizer_is_one(tmp_path):
    # survey 24a: lars_wrapper() returns LARS(SGD(groups)), LARS a torch.optim.Optimizer subclass of lars.py
    (tmp_path / "lars.py").write_text(LARS_MODULE)
    result = convert_source(LARS_SCRIPT, str(tmp_path / "train.py"))
    assert result.refused is None, result.refused
    assert "model, optimizer = accelerator.prepare(model, optimizer)" in result.text


def test_a_project_class_with_no_optimizer_base_is_not_an_optimizer_class(tmp_path):
    (tmp_path / "lars.py").write_text(LARS_MODULE.replace("class LARS(Optimizer):", "class LARS(object):"))
    result = convert_source(LARS_SCRIPT, str(tmp_path / "train.py"))
    assert result.refused is not None and "cannot be traced" in result.refused


def test_an_optimizer_handed_to_a_class_of_a_project_module_not_beside_the_script_names_that_class(tmp_path):
    # survey 24a's SimCLR trainer published without lars.py: the reason named only the SGD inside
    # lars_wrapper(), "built from parameters whose model cannot be traced"; what stops it is LARS(...)
    result = convert_source(LARS_SCRIPT, str(tmp_path / "train.py"))
    assert result.refused is not None
    assert "handed to LARS(...) at line 16, a class of the project module lars" in result.refused, result.refused
