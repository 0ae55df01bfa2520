"""The roles of a script's objects (analysis/training_roles.py): what RC402 and regcomp-fix both read."""

from __future__ import annotations

import ast
import textwrap

import pytest

from regcomp_lint.analysis.bindings import Where
from regcomp_lint.analysis.file_context import FileContext
from regcomp_lint.analysis.training_objects import Kind
from regcomp_lint.analysis.training_roles import Cadence, Origin, TrainingRoles
from regcomp_lint.checks.base import Rule
from regcomp_lint.files.source import SourceFile
from regcomp_lint.lint.engine import walk

HEAD = """\
import torch
from torch.utils.data import DataLoader, DistributedSampler
from torch.optim.lr_scheduler import StepLR, OneCycleLR
model = torch.nn.Linear(4, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
"""


class _Wheres(Rule):
    """Where each call sits (the point the roles are asked from)."""

    code, name, message = "RC000", "wheres", ""

    def __init__(self, ctx: FileContext) -> None:
        super().__init__(ctx)
        self.bindings = ctx.semantic.bindings
        self.wheres: dict[int, Where] = {}

    def visit_Call(self, node: ast.Call) -> None:
        self.wheres[id(node)] = self.bindings.here(node)


class Roles:
    """A script's roles, and the origin of whatever a top-level ``name = ...`` builds."""

    def __init__(self, body: str) -> None:
        src = HEAD + textwrap.dedent(body)
        tree = ast.parse(src)
        self.ctx = FileContext(SourceFile("t.py", src), tree)
        self.roles: TrainingRoles = self.ctx.semantic.training_roles  # asked before the walk: fed by it
        recorder = _Wheres(self.ctx)
        walk(self.ctx, [recorder])
        self.wheres = recorder.wheres
        self.tree = tree

    def origin_of(self, name: str) -> object:
        """What the first ``name = ...`` anywhere in the file assigns, as the roles see it."""
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Assign) and any(binding_key_of(t) == name for t in node.targets):
                return self.roles.origin(node.value, self.wheres[id(node.value)])
        raise AssertionError(f"no assignment to {name}")

    def built(self, name: str) -> Origin:
        found = self.origin_of(name)
        assert isinstance(found, Origin), name
        return found


def binding_key_of(target: ast.expr) -> str | None:
    if isinstance(target, ast.Name):
        return target.id
    if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
        return f"{target.value.id}.{target.attr}"
    return None


# -- loaders -------------------------------------------------------------------------------------
def test_factory_calls_are_separate_objects():
    roles = Roles("""
        def make_loader(ds):
            return DataLoader(ds, batch_size=8)
        train_dl = make_loader(train_ds)
        val_dl = make_loader(val_ds)
        for x in train_dl:
            model(x).sum().backward()
            opt.step()
        for x in val_dl:
            model(x)
    """)
    train, val = roles.built("train_dl"), roles.built("val_dl")
    assert train.kind is val.kind is Kind.DATALOADER
    assert train.call is not val.call and train.built is val.built
    assert roles.roles.is_training_loader(train)
    assert not roles.roles.is_training_loader(val)


@pytest.mark.parametrize(
    "loop",
    [
        # an iterator drawn from inside the training loop
        "it = iter(train_dl)\nfor step in range(10):\n    x = next(it)\n    model(x).sum().backward()\n",
        # a comprehension whose element runs the training step
        "def step(x):\n    model(x).sum().backward()\n    return 1\nlosses = [step(x) for x in train_dl]\n",
        # a function handed the loader as a parameter
        "def fit(loader):\n    for x in loader:\n        model(x).sum().backward()\nfor epoch in range(2):\n    fit(train_dl)\n",
        # through progress bars and cycles, named or inline
        "from tqdm.auto import tqdm\nbar = tqdm(train_dl)\nfor i, x in enumerate(bar):\n    model(x).sum().backward()\n",
        "import itertools\nit = itertools.cycle(train_dl)\nfor step in range(10):\n    model(next(it)).sum().backward()\n",
        # a trainer class handed the loader, kept as self.loader by __init__
        """class Trainer:
    def __init__(self, net, loader):
        self.net = net
        self.loader = loader
    def fit(self):
        for x in tqdm(self.loader):
            self.net(x).sum().backward()
from tqdm import tqdm
Trainer(model, train_dl).fit()
""",
        # handed once, outside any loop, to a function that runs the epochs itself (fastai's fit)
        "def fit(epochs, loader):\n    for epoch in range(epochs):\n        for x in loader:\n"
        "            model(x).sum().backward()\nfit(3, train_dl)\n",
        # a closure that runs the step, handed to the optimizer (LBFGS/PINN trainers, survey 23d's ParWH)
        "def closure():\n    opt.zero_grad()\n    loss = model(x).sum()\n    loss.backward()\n    return loss\n"
        "for epoch in range(2):\n    for x in train_dl:\n        loss = opt.step(closure)\n",
    ],
)
def test_training_loaders_by_dataflow(loop):
    roles = Roles("train_dl = DataLoader(ds)\n" + loop)
    assert roles.roles.is_training_loader(roles.built("train_dl"))


def test_a_loader_handed_to_a_trainer_only_for_evaluation_is_not_a_training_loader():
    roles = Roles("""
        class Trainer:
            def __init__(self, loader, val_loader):
                self.loader, self.val_loader = loader, val_loader
            def fit(self):
                for x in self.loader:
                    model(x).sum().backward()
                for x in self.val_loader:
                    model(x)
        train_dl = DataLoader(ds)
        val_dl = DataLoader(ds)
        Trainer(train_dl, val_loader=val_dl).fit()
    """)
    assert roles.roles.is_training_loader(roles.built("train_dl"))
    assert not roles.roles.is_training_loader(roles.built("val_dl"))


def test_a_loader_handed_once_to_an_evaluation_function_is_not_a_training_loader():
    roles = Roles(
        "val_dl = DataLoader(ds)\n"
        "def validate(loader):\n    return sum(model(x).sum() for x in loader)\n"
        "for x in range(3):\n    model(x).sum().backward()\n"
        "validate(val_dl)\n"
    )
    assert not roles.roles.is_training_loader(roles.built("val_dl"))


@pytest.mark.parametrize(
    "sampler",
    [
        "sampler=DistributedSampler(ds)",
        "sampler=s",  # through a name bound on one branch only
    ],
)
def test_sharded_by_sampler(sampler):
    roles = Roles(f"s = DistributedSampler(ds) if ddp else None\ndl = DataLoader(ds, {sampler})\n")
    assert roles.roles.sharded_by_sampler(roles.built("dl"))


@pytest.mark.parametrize(
    "body",
    [
        # a worker mp.spawn starts: its first parameter is the rank
        """
        import torch.multiprocessing as mp
        def run(rank, world_size):
            idx = torch.arange(1000)
            idx = idx.split(idx.size(0) // world_size)[rank]
            dl = DataLoader(idx.to(rank), batch_size=50)
        mp.spawn(run, args=(2,), nprocs=2)
        """,
        # torchrun's environment, through two names
        """
        import os
        rank = int(os.environ["RANK"])
        part = ds[rank::2]
        dl = DataLoader(part)
        """,
        "dl = DataLoader(torch.utils.data.Subset(ds, range(torch.distributed.get_rank(), 100, 2)))\n",
        # the ImageNet example's namespace field, set from the spawn index
        """
        import torch.multiprocessing as mp
        def main_worker(gpu, args):
            args.rank = gpu
            part = torch.utils.data.Subset(ds, range(args.rank, 100, args.world_size))
            dl = DataLoader(part)
        mp.spawn(main_worker, nprocs=2, args=(args,))
        """,
    ],
)
def test_a_loader_of_data_split_by_rank_is_already_sharded(body):
    roles = Roles(body)
    assert roles.roles.shard_reason(roles.built("dl")).startswith("built from data split by rank (line ")


def test_a_rank_that_only_places_the_data_does_not_split_it():
    roles = Roles("""
        import torch.multiprocessing as mp
        def run(rank):
            x = torch.randn(8, 4).to(rank)
            dl = DataLoader(TensorDataset(x.cuda(rank), torch.zeros(8, device=rank)))
        mp.spawn(run, nprocs=2)
    """)
    assert roles.roles.shard_reason(roles.built("dl")) is None


def test_a_factory_s_loader_with_its_own_sampler_is_sharded():
    roles = Roles("""
        import os
        def prepare_dataloader(dataset, batch_size):
            sampler = DistributedSampler(dataset) if "RANK" in os.environ else None
            return DataLoader(dataset, batch_size=batch_size, sampler=sampler)
        dl = prepare_dataloader(ds, 32)
    """)
    assert roles.roles.shard_reason(roles.built("dl")) == "sharded by its DistributedSampler"


def test_a_plain_loader_is_not_sharded():
    roles = Roles("dl = DataLoader(ds, shuffle=True)\n")
    assert not roles.roles.sharded_by_sampler(roles.built("dl"))


# -- scheduler cadence ---------------------------------------------------------------------------
TRAIN_EPOCH = """\
def train_epoch(loader, optimizer):
    for x in loader:
        model(x).sum().backward()
        optimizer.step()
"""


@pytest.mark.parametrize(
    "body,cadence,line",
    [
        # stepped beside the optimizer: once per optimizer step
        (
            "sched = OneCycleLR(opt, 1.0, total_steps=10)\nfor x in dl:\n    opt.step()\n    sched.step()\n",
            Cadence.PER_STEP,
            9,
        ),
        # the optimizer steps in a function the epoch loop calls: once per epoch
        (
            TRAIN_EPOCH
            + "sched = StepLR(opt, 1)\nfor epoch in range(3):\n    train_epoch(dl, opt)\n    sched.step()\n",
            Cadence.PER_EPOCH,
            13,
        ),
        # both handed to a function as parameters: the same loop there
        (
            "def fit(o, s):\n    for x in dl:\n        o.step()\n        s.step()\nsched = StepLR(opt, 1)\nfit(opt, sched)\n",
            Cadence.PER_STEP,
            9,
        ),
        # scaler.step(optimizer) is the optimizer's step
        (
            "scaler = torch.amp.GradScaler()\nsched = StepLR(opt, 1)\nfor epoch in range(3):\n    for x in dl:\n"
            "        scaler.step(opt)\n    sched.step()\n",
            Cadence.PER_EPOCH,
            11,
        ),
        # a fast-forward loop on resume does not decide
        (
            "sched = StepLR(opt, 1)\nfor _ in range(start):\n    sched.step()\nfor epoch in range(3):\n"
            "    for x in dl:\n        opt.step()\n    sched.step()\n",
            Cadence.PER_EPOCH,
            8,
        ),
    ],
)
def test_cadence(body, cadence, line):
    roles = Roles(body)
    found, step = roles.roles.cadence(roles.built("sched"))
    assert found is cadence
    assert step is not None and step.lineno == line


def test_cadence_is_unknown_without_a_step():
    roles = Roles("sched = StepLR(opt, 1)\nfor x in dl:\n    opt.step()\n")
    assert roles.roles.cadence(roles.built("sched")) == (Cadence.UNKNOWN, None)


def test_a_prepared_optimizer_is_the_optimizer_it_was_prepared_from():
    """The lint reads scripts already converted: ``opt`` after ``prepare`` is still ``opt``."""
    roles = Roles(
        "sched = StepLR(opt, 1)\nmodel, opt = accelerator.prepare(model, opt)\n"
        "for epoch in range(3):\n    for x in dl:\n        opt.step()\n    sched.step()\n"
    )
    assert roles.roles.cadence(roles.built("sched"))[0] is Cadence.PER_EPOCH


def test_a_scheduler_of_another_library_built_on_the_optimizer():
    roles = Roles("from timm.scheduler import create_scheduler\nsched = create_scheduler(opt, 10)\n")
    assert roles.built("sched").kind is Kind.SCHEDULER


@pytest.mark.parametrize(
    "body,kind",
    [
        ("sched = getattr(torch.optim.lr_scheduler, 'StepLR')(opt, 2)\n", Kind.SCHEDULER),
        ("sched = getattr(torch.optim.lr_scheduler, args.scheduler)(opt, 2)\n", Kind.SCHEDULER),
        ("sched = getattr(torch.optim, args.optimizer)(model.parameters(), lr=0.1)\n", Kind.OPTIMIZER),
        ("import torchvision.models as models\nsched = models.__dict__[args.arch]()\n", Kind.MODEL),
        ("from utils import PolyLR\nsched = PolyLR(opt, 100)\n", Kind.SCHEDULER),
    ],
)
def test_classes_picked_by_name_and_schedulers_named_lr(body, kind):
    """Research scripts pick their optimizer, scheduler and architecture by a flag; segmentation
    code steps a ``PolyLR(optimizer, ...)`` of its own utils."""
    assert Roles("args = None\n" + body).built("sched").kind is kind


def test_an_optimizer_wrapper_is_not_a_scheduler():
    roles = Roles("from mylib import Lookahead\nlook = Lookahead(opt)\n")
    assert roles.origin_of("look") is None


# -- optimizers (analysis/optimizer_sources.py) --------------------------------------------------
@pytest.mark.parametrize(
    "body,owners,construct",
    [
        ("o = model.configure_optimizers(0.1, 6e-4)\n", ["model"], "model.configure_optimizers"),
        # build-nanogpt's forks name it in the singular (survey22a ddpinfo_trainer)
        ("o = raw_model.configure_optimizer(weight_decay=0.1)\n", ["raw_model"], "raw_model.configure_optimizer"),
        (
            "from timm.optim import create_optimizer_v2\no = create_optimizer_v2(model, 'adamw')\n",
            ["model"],
            "create_optimizer_v2",
        ),
        (
            "def make(m, lr):\n    groups = [{'params': [p for p in m.parameters()]}]\n    return torch.optim.AdamW(groups, lr=lr)\n"
            "o = make(model, 0.1)\n",
            ["model"],
            "make() (returns torch.optim.AdamW)",
        ),
        ("class Muon(torch.optim.Optimizer):\n    pass\no = Muon(model.parameters())\n", ["model"], "Muon"),
        # a course script's get_SGD(): the class picked by name into a local first (survey23g mlcc_mixup),
        # the local shadowing the script's `import torch.optim as optim`
        (
            "import torch.optim as optim\ndef get_SGD(net, name='SGD', lr=0.1):\n"
            "    optim = getattr(torch.optim, name)\n    return optim(net.parameters(), lr=lr)\n"
            "o = get_SGD(model, 'SGD', 0.1)\n",
            ["model"],
            "get_SGD() (returns optim)",
        ),
        ("opt_cls = torch.optim.SGD\no = opt_cls(model.parameters(), lr=0.1)\n", ["model"], "opt_cls"),
        # an optimizer of a library we do not know, used as one
        (
            "from mylib import Sophia\no = Sophia(model.parameters())\nfor x in dl:\n    o.step()\n    o.zero_grad()\n",
            ["model"],
            "Sophia",
        ),
    ],
)
def test_optimizer_sources(body, owners, construct):
    roles = Roles(body)
    built = roles.built("o")
    assert built.kind is Kind.OPTIMIZER
    call = next(
        n.value for n in ast.walk(roles.tree) if isinstance(n, ast.Assign) and binding_key_of(n.targets[0]) == "o"
    )
    optimizers = roles.roles.optimizers
    source = optimizers.source(call, roles.wheres[id(call)])
    if source is None:  # known by use only
        assert optimizers.used_as_optimizer(call)
        assert optimizers.fed_parameters(call, roles.wheres[id(call)]) == owners
    else:
        assert (source.owners, source.construct) == (owners, construct)


def test_an_optimizer_built_by_a_method_of_the_trainer_holds_its_self_model():
    """A trainer's ``self.optimizer = self._build_optimizer()``, its groups filled from ``self.model``."""
    roles = Roles(
        "class Trainer:\n"
        "    def __init__(self):\n"
        "        self.model = torch.nn.Linear(4, 2)\n"
        "        self.optimizer = self._build_optimizer(0.1)\n"
        "    def _build_optimizer(self, lr):\n"
        "        decay, no_decay = [], []\n"
        "        for name, p in self.model.named_parameters():\n"
        "            (no_decay if p.ndim < 2 else decay).append(p)\n"
        "        return torch.optim.AdamW([{'params': decay}, {'params': no_decay}], lr=lr)\n"
    )
    call = next(
        n.value
        for n in ast.walk(roles.tree)
        if isinstance(n, ast.Assign) and binding_key_of(n.targets[0]) == "self.optimizer"
    )
    source = roles.roles.optimizers.source(call, roles.wheres[id(call)])
    assert source is not None and source.owners == ["self.model"], source
    assert source.construct == "self._build_optimizer() (returns torch.optim.AdamW)"


@pytest.mark.parametrize(
    "body",
    [
        "o = sum(p.numel() for p in model.parameters())\n",  # an int fed parameters
        "from mylib import EMA\no = EMA(model.parameters())\nfor x in dl:\n    o.step(model.parameters())\n",  # stepped with parameters
        "o = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n",
    ],
)
def test_not_optimizers(body):
    assert Roles(body).origin_of("o") is None


def test_a_scheduler_stepped_with_a_metric_is_stepped_by_value():
    """ReduceLROnPlateau: prepared, it would see the metric once per process (patience / N)."""
    roles = Roles(
        "from torch.optim.lr_scheduler import ReduceLROnPlateau\nsched = ReduceLROnPlateau(opt, patience=2)\n"
        "for epoch in range(3):\n    for x in dl:\n        opt.step()\n    sched.step(val_loss)\n"
    )
    found, step = roles.roles.cadence(roles.built("sched"))
    assert found is Cadence.BY_VALUE and step is not None and step.lineno == 11


@pytest.mark.parametrize(
    "body",
    [
        # DINO / timm style: a param-group helper handed the model
        "import utils\no = torch.optim.AdamW(utils.get_params_groups(model), lr=1e-3)\n",
        # a model of another file, known as a module by what the script does with it
        "from models import Transformer\nnet = Transformer()\nnet.train()\n"
        "o = torch.optim.Adam(net.get_trainable_parameters())\n",
        "from models import Transformer\nnet = Transformer()\ndef fit(m):\n    m.train()\nfit(net)\n"
        "o = torch.optim.Adam(net.get_trainable_parameters())\n",
        # Barlow Twins: LARS groups filled by a loop over the model's parameters
        "weights, biases = [], []\nfor p in model.parameters():\n    (biases if p.ndim == 1 else weights).append(p)\n"
        "groups = [{'params': weights}, {'params': biases}]\no = torch.optim.SGD(groups, lr=0.1)\n",
    ],
)
def test_an_optimizer_built_through_a_param_group_helper_optimizes_the_model(body):
    roles = Roles(body)
    call = next(
        n.value for n in ast.walk(roles.tree) if isinstance(n, ast.Assign) and binding_key_of(n.targets[0]) == "o"
    )
    source = roles.roles.optimizers.source(call, roles.wheres[id(call)])
    assert source is not None and source.owners == (["net"] if "net" in body else ["model"])


def test_a_config_handed_to_a_helper_is_not_a_model():
    roles = Roles("import utils\no = torch.optim.AdamW(utils.groups(cfg), lr=1e-3)\n")
    call = next(
        n.value for n in ast.walk(roles.tree) if isinstance(n, ast.Assign) and binding_key_of(n.targets[0]) == "o"
    )
    assert roles.roles.optimizers.source(call, roles.wheres[id(call)]).owners == []


@pytest.mark.parametrize(
    "body,expected",
    [
        # "What is torch.nn really?": the model and its optimizer come back together
        (
            "def get_model(lr):\n    net = torch.nn.Linear(4, 2)\n    return net, torch.optim.SGD(net.parameters(), lr=lr)\n"
            "m, o = get_model(0.1)\n",
            {1: ([], [0], "get_model() (returns torch.optim.SGD)")},
        ),
        # named first, returned by name
        (
            "def get_model(lr):\n    net = torch.nn.Linear(4, 2)\n    opt = torch.optim.Adam(net.parameters())\n"
            "    return net, opt\nm, o = get_model(0.1)\n",
            {1: ([], [0], "get_model() (returns torch.optim.Adam)")},
        ),
        # the optimizer and its scheduler built for a model handed in
        (
            "def build(net):\n    opt = torch.optim.SGD(net.parameters(), lr=0.1)\n"
            "    return opt, StepLR(opt, 1)\no, s = build(model)\n",
            {0: (["model"], [], "build() (returns torch.optim.SGD)")},
        ),
        # tuples of another width: not this unpacking
        ("def get_model():\n    return model, opt, 3\nm, o = get_model()\n", {}),
        # returned values that are no optimizers
        ("def get_data():\n    return [1], [2]\na, b = get_data()\n", {}),
    ],
)
def test_optimizers_unpacked_from_a_helper_s_tuple(body, expected):
    roles = Roles(body)
    assign = next(n for n in ast.walk(roles.tree) if isinstance(n, ast.Assign) and isinstance(n.targets[0], ast.Tuple))
    call = assign.value
    assert isinstance(call, ast.Call)
    found = roles.roles.optimizers.unpacked_sources(call, roles.wheres[id(call)], 2)
    assert {i: (s.owners, beside, s.construct) for i, (s, beside) in found.items()} == expected


def test_a_scheduler_chosen_by_flags_is_stepped_through_the_name_every_branch_binds():
    """torchvision's references: ``main = StepLR`` or ``ExponentialLR`` by flag, chained with a warmup
    by ``SequentialLR`` or used as it is; ``lr_scheduler.step()`` once per epoch steps whichever it is."""
    roles = Roles(
        TRAIN_EPOCH + "if flag:\n    main = StepLR(opt, 1)\nelse:\n    main = OneCycleLR(opt, 1.0, total_steps=9)\n"
        "if warm:\n    warmup = torch.optim.lr_scheduler.LinearLR(opt)\n"
        "    sched = torch.optim.lr_scheduler.SequentialLR(opt, schedulers=[warmup, main], milestones=[1])\n"
        "else:\n    sched = main\n"
        "for epoch in range(3):\n    train_epoch(dl, opt)\n    sched.step()\n"
    )
    for name in ("main", "sched"):
        assert roles.roles.cadence(roles.built(name))[0] is Cadence.PER_EPOCH, name
    assert roles.roles.cadence(roles.built("warmup")) == (Cadence.WRAPPED, None)


def test_a_sampler_returned_by_a_data_helper_shards_its_loader():
    """torchvision's ``dataset, dataset_test, train_sampler, test_sampler = load_data(...)``."""
    roles = Roles(
        "def load_data(ds):\n    if ddp:\n        s = DistributedSampler(ds)\n    else:\n        s = None\n"
        "    return ds, s\n"
        "data, sampler = load_data(ds)\nloader = DataLoader(data, sampler=sampler)\n"
        "for x in loader:\n    model(x).sum().backward()\n"
    )
    assert roles.roles.shard_reason(roles.built("loader")) == "sharded by its DistributedSampler"
