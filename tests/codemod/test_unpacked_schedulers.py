"""Schedulers unpacked from a factory's tuple (issue 12): ``optimizer, scheduler =
build_optimizer(model, cfg)`` and ``model, optimizer, scheduler = setup(cfg)``, the factory in
the same file or in another module of the project (codemod/schedulers.py, through the roles'
``unpacked_origin`` and ``bound_cadence``). One stepped once per optimizer step is prepared
(accelerate's prepared scheduler steps once per process, in step with the sharded data); one
stepped once per epoch stays unprepared, as a ``scheduler = StepLR(...)`` would."""

from __future__ import annotations

import textwrap

import pytest

from regcomp_lint.api import lint_source
from regcomp_lint.codemod import ConversionResult, ConvertOptions, convert_source

FACTORY = """
def build_optimizer(model, cfg):
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg["lr"])
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / 10))
    return optimizer, scheduler
"""
SETUP = """
def setup(cfg):
    model = torch.nn.Linear(2, 1)
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg["lr"])
    scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=0.1, total_steps=12)
    return model, optimizer, scheduler
"""
SCHEDULER_FACTORY = """
def make_scheduler(optimizer):
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / 10))
"""
BUILT = {
    "build_optimizer": "model = torch.nn.Linear(2, 1)\noptimizer, scheduler = build_optimizer(model, cfg)\n",
    "setup": "model, optimizer, scheduler = setup(cfg)\n",
    "make_scheduler": (
        "model = torch.nn.Linear(2, 1)\noptimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "scheduler = make_scheduler(optimizer)\n"
    ),
}
FACTORIES = {"build_optimizer": FACTORY, "setup": SETUP, "make_scheduler": SCHEDULER_FACTORY}
PER_STEP = """
loader = DataLoader(torch.randn(8, 2), batch_size=2)
for epoch in range(3):
    for x in loader:
        loss = model(x).sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
"""
PER_EPOCH = """
loader = DataLoader(torch.randn(8, 2), batch_size=2)
for epoch in range(3):
    for x in loader:
        loss = model(x).sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    scheduler.step()
"""
#: the optimizer steps in a training function of the file, the scheduler beside it or per epoch
TRAIN_EPOCH = """
def train_epoch(model, loader, optimizer, scheduler):
    for x in loader:
        loss = model(x).sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
"""
HEAD = "import torch\nfrom torch.utils.data import DataLoader\n"


def _script(factory: str, loop: str, elsewhere: bool, helpers: str = "") -> str:
    head = HEAD + (f"\nfrom optim import {factory}\n" if elsewhere else textwrap.dedent(FACTORIES[factory]))
    body = textwrap.indent(BUILT[factory] + textwrap.dedent(loop).lstrip("\n"), "    ")
    return head + helpers + "\n\ndef main(cfg):\n" + body + "\n\nif __name__ == '__main__':\n    main({'lr': 0.1})\n"


def _convert(tmp_path, factory: str, loop: str, elsewhere: bool, helpers: str = "") -> ConversionResult:
    if elsewhere:
        (tmp_path / "optim.py").write_text("import torch\n" + textwrap.dedent(FACTORIES[factory]))
    text = _script(factory, loop, elsewhere, helpers)
    result = convert_source(text, str(tmp_path / "train.py"), ConvertOptions())
    assert result.refused is None, result.refused
    return result


def _prepare_line(result: ConversionResult) -> str:
    (line,) = [line.strip() for line in result.text.splitlines() if ".prepare(" in line]
    return line


def _lint_clean(result: ConversionResult) -> None:
    """The lint reads the same roles: what the converter prepared or left is not flagged."""
    findings = [d for d in lint_source(result.text, "train.py") if d.code == "RC402"]
    assert not findings, "\n".join(f"{d.location} {d.message}" for d in findings)


@pytest.mark.parametrize("elsewhere", [False, True], ids=["same-file", "other-module"])
def test_a_per_step_scheduler_unpacked_with_its_optimizer_is_prepared(tmp_path, elsewhere):
    result = _convert(tmp_path, "build_optimizer", PER_STEP, elsewhere)
    assert _prepare_line(result) == (
        "model, optimizer, loader, scheduler = accelerator.prepare(model, optimizer, loader, scheduler)"
    )
    lines = result.text.splitlines()
    unpacking = lines.index("    optimizer, scheduler = build_optimizer(model, cfg)")
    assert unpacking < lines.index("    " + _prepare_line(result))  # rebound after the unpacking
    assert not any("left unprepared" in note for note in result.notes), result.notes
    _lint_clean(result)


@pytest.mark.parametrize("elsewhere", [False, True], ids=["same-file", "other-module"])
def test_a_per_epoch_scheduler_unpacked_with_its_optimizer_stays_unprepared(tmp_path, elsewhere):
    result = _convert(tmp_path, "build_optimizer", PER_EPOCH, elsewhere)
    assert _prepare_line(result) == "model, optimizer, loader = accelerator.prepare(model, optimizer, loader)"
    line = _script("build_optimizer", PER_EPOCH, elsewhere).splitlines().index("        scheduler.step()") + 1
    assert any(n.startswith(f"scheduler steps once per epoch (line {line}): left unprepared") for n in result.notes), (
        result.notes
    )
    _lint_clean(result)


@pytest.mark.parametrize("elsewhere", [False, True], ids=["same-file", "other-module"])
@pytest.mark.parametrize(
    "loop,prepared",
    [
        (
            "loader = DataLoader(torch.randn(8, 2), batch_size=2)\n"
            "for epoch in range(3):\n    train_epoch(model, loader, optimizer, scheduler)\n",
            "model, optimizer, loader, scheduler = accelerator.prepare(model, optimizer, loader, scheduler)",
        ),
        (
            "loader = DataLoader(torch.randn(8, 2), batch_size=2)\n"
            "for epoch in range(3):\n    train_epoch(model, loader, optimizer, None)\n    scheduler.step()\n",
            "model, optimizer, loader = accelerator.prepare(model, optimizer, loader)",
        ),
    ],
    ids=["per-step-in-the-training-function", "per-epoch-around-it"],
)
def test_an_unpacked_scheduler_stepped_through_a_training_function(tmp_path, elsewhere, loop, prepared):
    helpers = TRAIN_EPOCH
    if "None" in loop:
        helpers = TRAIN_EPOCH.replace("        scheduler.step()\n", "")
    result = _convert(tmp_path, "build_optimizer", loop, elsewhere, helpers)
    assert _prepare_line(result) == prepared


@pytest.mark.parametrize("elsewhere", [False, True], ids=["same-file", "other-module"])
def test_model_optimizer_and_per_step_scheduler_unpacked_from_setup(tmp_path, elsewhere):
    result = _convert(tmp_path, "setup", PER_STEP, elsewhere)
    assert _prepare_line(result) == (
        "model, optimizer, loader, scheduler = accelerator.prepare(model, optimizer, loader, scheduler)"
    )
    _lint_clean(result)


@pytest.mark.parametrize("elsewhere", [False, True], ids=["same-file", "other-module"])
def test_model_optimizer_and_per_epoch_scheduler_unpacked_from_setup(tmp_path, elsewhere):
    result = _convert(tmp_path, "setup", PER_EPOCH, elsewhere)
    assert _prepare_line(result) == "model, optimizer, loader = accelerator.prepare(model, optimizer, loader)"
    assert any(n.startswith("scheduler steps once per epoch") for n in result.notes), result.notes
    _lint_clean(result)


@pytest.mark.parametrize("elsewhere", [False, True], ids=["same-file", "other-module"])
def test_a_scheduler_a_factory_returns_alone_is_sorted_by_its_steps(tmp_path, elsewhere):
    per_step = _convert(tmp_path, "make_scheduler", PER_STEP, elsewhere)
    assert _prepare_line(per_step) == (
        "model, optimizer, loader, scheduler = accelerator.prepare(model, optimizer, loader, scheduler)"
    )
    _lint_clean(per_step)
    per_epoch = _convert(tmp_path, "make_scheduler", PER_EPOCH, elsewhere)
    assert _prepare_line(per_epoch) == "model, optimizer, loader = accelerator.prepare(model, optimizer, loader)"
    assert any(n.startswith("scheduler steps once per epoch") for n in per_epoch.notes), per_epoch.notes
    _lint_clean(per_epoch)


def test_a_per_step_scheduler_unpacked_without_a_prepared_loader_stays_unprepared(tmp_path):
    """Full-batch training: every process takes the original's steps, so the scheduler keeps
    stepping once per step unprepared, as a ``scheduler = LambdaLR(...)`` would."""
    loop = "for it in range(10):\n    loss = model(torch.randn(8, 2)).sum()\n    loss.backward()\n    optimizer.step()\n    scheduler.step()\n"
    result = _convert(tmp_path, "build_optimizer", loop, elsewhere=True)
    assert _prepare_line(result) == "model, optimizer = accelerator.prepare(model, optimizer)"
    assert any(n.startswith("scheduler steps once per optimizer step, and no DataLoader") for n in result.notes)


GAN_OPTIM = """
import torch


def build_optimizers(generator, discriminator, cfg):
    opt_g = torch.optim.Adam(generator.parameters(), lr=cfg["lr"])
    opt_d = torch.optim.Adam(discriminator.parameters(), lr=cfg["lr"])
    sched_g = torch.optim.lr_scheduler.StepLR(opt_g, step_size=1, gamma=0.9)
    sched_d = torch.optim.lr_scheduler.StepLR(opt_d, step_size=1, gamma=0.9)
    return opt_g, opt_d, sched_g, sched_d
"""
GAN = """
import torch
from torch.utils.data import DataLoader

from optim import build_optimizers


def main(cfg):
    generator = torch.nn.Linear(2, 2)
    discriminator = torch.nn.Linear(2, 1)
    opt_g, opt_d, sched_g, sched_d = build_optimizers(generator, discriminator, cfg)
    loader = DataLoader(torch.randn(8, 2), batch_size=2)
    for epoch in range(3):
        for x in loader:
            d_loss = discriminator(generator(x).detach()).mean() - discriminator(x).mean()
            opt_d.zero_grad()
            d_loss.backward()
            opt_d.step()
            g_loss = -discriminator(generator(x)).mean()
            opt_g.zero_grad()
            g_loss.backward()
            opt_g.step()
        sched_g.step()
        sched_d.step()
"""


def test_schedulers_of_two_optimizers_unpacked_from_another_module_each_follow_their_own(tmp_path):
    """``opt_g, opt_d, sched_g, sched_d = build_optimizers(...)``: each scheduler is compared with
    the optimizer it is built on there (both per epoch here: neither is prepared)."""
    (tmp_path / "optim.py").write_text(textwrap.dedent(GAN_OPTIM))
    result = convert_source(textwrap.dedent(GAN), str(tmp_path / "train.py"), ConvertOptions())
    assert result.refused is None, result.refused
    assert "sched" not in _prepare_line(result)
    for key in ("sched_g", "sched_d"):
        assert any(n.startswith(f"{key} steps once per epoch") for n in result.notes), result.notes
