"""Refusals name the class, function and line of what they refuse (survey 13's message review)."""

from __future__ import annotations

from regcomp_lint.codemod import convert_source


def test_an_optimizer_a_layer_builds_for_itself_names_the_layer_and_line():
    """The forward-forward example: each layer builds Adam(self.parameters()) in its __init__."""
    text = (
        "import torch\nfrom torch.optim import Adam\n\n\nclass Layer(torch.nn.Linear):\n"
        "    def __init__(self, i, o):\n        super().__init__(i, o)\n        self.opt = Adam(self.parameters(), lr=0.03)\n\n"
        "    def train_step(self, x):\n        loss = self.forward(x).pow(2).mean()\n        self.opt.zero_grad()\n"
        "        loss.backward()\n        self.opt.step()\n\n\nlayer = Layer(4, 4)\nfor _ in range(3):\n"
        "    layer.train_step(torch.randn(2, 4))\n"
    )
    result = convert_source(text, "train.py")
    assert result.refused is not None
    assert "the optimizer is built from self.parameters() in Layer.__init__() (line 6)" in result.refused


def test_no_optimizer_found_names_what_the_script_steps_instead():
    """FastSpeech2: ``optimizer = get_optimizer(model, config)`` from a module not beside the
    script, stepped by ``step_and_update_lr()`` (survey 14: the refusal named no line)."""
    text = (
        "import torch\nfrom src.optimizer.optimizer import get_optimizer\n\n"
        "model = torch.nn.Linear(4, 1)\noptimizer = get_optimizer(model, {}, cur_step=0)\n"
        "for step in range(3):\n"
        "    optimizer.zero_grad()\n    model(torch.randn(2, 4)).sum().backward()\n    optimizer.step_and_update_lr()\n"
    )
    result = convert_source(text, "train.py")
    assert result.refused is not None
    assert "optimizer = get_optimizer(...) at line 5" in result.refused, result.refused
    assert "stepped by optimizer.step_and_update_lr() at line 9" in result.refused, result.refused


def test_a_wrap_made_before_the_trainer_is_handed_the_model_names_the_hand_over():
    """Survey 15's MNIST example (a Trainer class handed a model that run() wrapped in DDP, or in
    DataParallel on one process) was refused as "does not wrap the trained model in place"."""
    text = """\
import torch
import torch.nn.functional as F
from torch import distributed, nn


class Trainer:
    def __init__(self, model, optimizer, loader):
        self.model = model
        self.optimizer = optimizer
        self.loader = loader

    def fit(self, epochs):
        for _ in range(epochs):
            for x, y in self.loader:
                loss = F.cross_entropy(self.model(x), y)
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()


def run(loader):
    model = nn.Linear(4, 2)
    if distributed.is_initialized():
        model = nn.parallel.DistributedDataParallel(model)
    else:
        model = nn.DataParallel(model)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    trainer = Trainer(model, optimizer, loader)
    trainer.fit(2)
"""
    result = convert_source(text, "main.py")
    assert result.refused is not None
    assert (
        "nn.parallel.DistributedDataParallel(...) at line 24 wraps model, then handed to Trainer(...) at line 28"
        in result.refused
    ), result.refused


def test_no_optimizer_found_names_an_optimizer_the_model_holds():
    """Sweep 15 (a DCGAN tutorial port): ``netD.optimizer.step()``, an optimizer the model class of
    another module builds for itself; the refusal named nothing the script does."""
    text = (
        "import torch\nfrom DCGAN.model import Generator, Discriminator\n\n"
        "netD = Discriminator()\n"
        "for x in [torch.randn(2, 4)]:\n"
        "    netD.zero_grad()\n    netD(x).sum().backward()\n    netD.optimizer.step()\n"
    )
    result = convert_source(text, "train.py")
    assert result.refused is not None
    assert "netD.optimizer.step() at line 8 uses an optimizer kept on netD" in result.refused, result.refused


def test_a_model_made_in_another_method_names_where_it_is_made():
    """Sweep 15 (a graph-to-text trainer class): ``self.model`` built in a method other than
    ``__init__``, its optimizer in ``train()``; the refusal named neither line. (Built in
    ``__init__`` it now converts: tests/codemod/test_trainer_models.py.)"""
    text = (
        "import torch\n\n\nclass Trainer:\n    def build(self):\n        self.model = torch.nn.Linear(4, 1)\n\n"
        "    def train(self, data):\n        optimizer = torch.optim.AdamW(self.model.parameters())\n"
        "        for x in data:\n            optimizer.zero_grad()\n            self.model(x).sum().backward()\n"
        "            optimizer.step()\n"
    )
    result = convert_source(text, "train.py")
    assert result.refused is not None
    assert (
        "the model self.model, whose optimizer Trainer.train() (line 8) builds, is bound in build() at line 6, "
        "not in Trainer.__init__()" in result.refused
    ), result.refused


def test_a_model_made_in_init_and_its_optimizer_in_train_converts():
    """The sweep-15 graph-to-text trainer as it was: ``self.model`` built in ``__init__``, a local
    optimizer in ``train()`` (refused until trainer_models.py)."""
    text = (
        "import torch\n\n\nclass Trainer:\n    def __init__(self):\n        self.model = torch.nn.Linear(4, 1)\n\n"
        "    def train(self, data):\n        optimizer = torch.optim.AdamW(self.model.parameters())\n"
        "        for x in data:\n            optimizer.zero_grad()\n            self.model(x).sum().backward()\n"
        "            optimizer.step()\n"
    )
    result = convert_source(text, "train.py")
    assert result.refused is None, result.refused
    assert "        self.accelerator = Accelerator(dynamo_plugin=dynamo_plugin, cpu=True)\n" in result.text
    assert "        self.model, optimizer = self.accelerator.prepare(self.model, optimizer)\n" in result.text


def test_no_optimizer_found_names_an_engines_optimizer_it_zeroes():
    """Sweep 15 (a VeOmni engine smoke test): ``engine.optimizer_step()`` and
    ``engine.optimizer.zero_grad()``; the refusal named nothing."""
    text = (
        "import torch\nfrom engines import Engine\n\n"
        "engine = Engine()\n"
        "for x in [torch.randn(2, 4)]:\n"
        "    engine.module(x).sum().backward()\n    engine.optimizer_step()\n    engine.optimizer.zero_grad()\n"
    )
    result = convert_source(text, "smoke.py")
    assert result.refused is not None
    assert "engine.optimizer.zero_grad() at line 8 uses an optimizer kept on engine" in result.refused, result.refused


def test_no_optimizer_found_names_a_trainers_optimizer_made_in_init():
    """Sweep 15 (a saliency-detection Trainer): ``self.optimizer = parser_optimizer(cfg,
    self.model)`` in ``__init__`` from a module not beside the script, zeroed in ``__train``."""
    text = (
        "import torch\nfrom core.train_libs import parser_optimizer\n\n\nclass Trainer:\n"
        "    def __init__(self, model):\n        self.model = model\n"
        "        self.optimizer = parser_optimizer({}, self.model)\n\n"
        "    def run(self, data):\n        for x in data:\n            self.optimizer.zero_grad()\n"
        "            self.model(x).sum().backward()\n            self.optimizer.step()\n"
    )
    result = convert_source(text, "trainer.py")
    assert result.refused is not None
    assert "self.optimizer = parser_optimizer(...) at line 8" in result.refused, result.refused
    assert "kept on self" not in result.refused


def test_no_optimizer_found_names_the_factory_optimizer_a_gan_trainer_steps_not_its_models():
    """survey25c tofu_dcgan: ``self.netD = torch.compile(netD)``, ``self.optimizerD =
    get_optimizer(config["optimizer"], self.netD)`` from a package not beside the script, and
    ``self.netD.zero_grad()`` (DCGAN zeroes the model): the refusal named the compiled model as the
    would-be optimizer, not the factory the optimizer comes from."""
    text = (
        "import torch\nfrom tofu.models import get_model\nfrom tofu.optimizers import get_optimizer\n\n\n"
        "class DCGANTrainer:\n    def __init__(self, config):\n"
        "        netD = get_model(config).to('cpu')\n        self.netD = torch.compile(netD)\n"
        "        self.optimizerD = get_optimizer(config, self.netD)\n\n"
        "    def train_epoch(self, data):\n        for x in data:\n            self.netD.zero_grad()\n"
        "            self.netD(x).sum().backward()\n            self.optimizerD.step()\n"
    )
    result = convert_source(text, "trainer.py")
    assert result.refused is not None
    assert (
        "self.optimizerD = get_optimizer(...) at line 10 (from tofu.optimizers, which is not a file the conversion "
        "can read beside the script), stepped by self.optimizerD.step() at line 16, is not one"
    ) in result.refused, result.refused
    assert "self.netD = torch.compile" not in result.refused


PRETRAIN_THEN_FACTORY = """\
import torch
from training.trainer import build_optimizer


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = torch.nn.Linear(4, 4)
        self.head = torch.nn.Linear(4, 1)

    def forward(self, x):
        return self.head(self.enc(x))


def pretrain(model, data):
    optimizer = torch.optim.Adam(list(model.enc.parameters()), lr=1e-3)
    for x in data:
        optimizer.zero_grad()
        model.enc(x).sum().backward()
        optimizer.step()


def train(model, data):
    optimizer = build_optimizer(model, {})
    for x in data:
        optimizer.zero_grad()
        model(x).sum().backward()
        optimizer.step()


def main():
    model = Net()
    data = [torch.randn(2, 4)]
    pretrain(model, data)
    train(model, data)


if __name__ == "__main__":
    main()
"""


def test_a_backward_outside_the_trained_code_names_the_optimizer_it_steps_that_is_not_known():
    """survey25c ecg_ablation: pretrain_dae() builds ``torch.optim.Adam(model.dae.parameters())``,
    train_model() steps ``optimizer = build_optimizer(model, cfg)`` of a module not beside the script:
    the refusal said the backward of train_model() runs outside the code that trains the model built
    in pretrain_dae(), naming neither the optimizer it steps nor where it comes from."""
    result = convert_source(PRETRAIN_THEN_FACTORY, "run.py")
    assert result.refused is not None
    assert (
        "the backward() at line 27 runs outside the code that trains the model built in pretrain(): train() steps "
        "optimizer = build_optimizer(...) at line 24 (from training.trainer, which is not a file the conversion can "
        "read beside the script), stepped by optimizer.step() at line 28, which the conversion cannot tell is an "
        "optimizer"
    ) in result.refused, result.refused


TWO_TRAININGS = """\
import torch
from torch.utils.data import DataLoader, TensorDataset


def train_for_trial(model, loader, lr):
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def main():
    loader = DataLoader(TensorDataset(torch.randn(32, 4), torch.randn(32, 1)), batch_size=8)
    for lr in (0.1, 0.01):
        train_for_trial(torch.nn.Linear(4, 1), loader, lr)
    final_model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.AdamW(final_model.parameters(), lr=0.1)
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(final_model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    main()
"""


def test_optimizers_built_in_several_places_are_named_with_their_lines():
    """Survey 22c's SciBERT trainer: an Optuna search trains in train_for_trial(), the final model in
    main(); the refusal named the two functions but not where their optimizers are built (survey 22b made
    the same change, _optimizer_place; this is its one-process case)."""
    from regcomp_lint.codemod import convert_source

    result = convert_source(TWO_TRAININGS, "train.py")
    assert result.refused is not None
    assert (
        "optimizers are built in several places (train_for_trial() (optimizer = torch.optim.AdamW(...) at line 6), "
        "main() (optimizer = torch.optim.AdamW(...) at line 19))"
    ) in result.refused


EMA_AFTER_RESUME = """\
import copy

import torch
from torch.utils.data import DataLoader, TensorDataset

resume = False
loader = DataLoader(TensorDataset(torch.randn(32, 4), torch.randn(32, 1)), batch_size=8)
model = torch.nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
if resume:
    state = torch.load("ckpt.pt")
    optimizer.load_state_dict(state["optimizer"])
    optimizers = [optimizer]
# EMA model
ema_model = copy.deepcopy(model).eval().requires_grad_(False)
for x, y in loader:
    loss = torch.nn.functional.mse_loss(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
"""


def test_a_refusal_quoting_a_statement_leaves_its_comment_out():
    """Survey 22c's IDDM trainer: the refusal quoted the comment line above the EMA copy as if it
    were code ("# EMA model ema_model = copy.deepcopy(model)... at line 169")."""
    from regcomp_lint.codemod import convert_source

    result = convert_source(EMA_AFTER_RESUME, "train.py")
    assert result.refused is not None
    assert (
        "not converted: ema_model = copy.deepcopy(model).eval().requires_grad_(False) at line 15" in result.refused
    ), result.refused
