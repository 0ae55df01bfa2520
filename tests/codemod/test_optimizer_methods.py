"""An optimizer's own methods reach the optimizer the prepared one wraps (codemod/optimizer_methods.py).

``AcceleratedOptimizer`` answers torch's Optimizer API only: SAM's ``first_step``/``second_step``
and Sophia's ``update_hessian`` raised AttributeError at the first step of the converted survey
scripts. A scheduler whose optimizer steps only through such methods takes its cadence from them.
"""

from __future__ import annotations

import ast

from regcomp_lint.codemod.convert import convert_source

SAM_SCRIPT = """\
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class SAM(torch.optim.Optimizer):
    def __init__(self, params, base_optimizer, rho=0.05, **kwargs):
        super().__init__(params, dict(rho=rho, **kwargs))
        self.base_optimizer = base_optimizer(self.param_groups, **kwargs)
        self.param_groups = self.base_optimizer.param_groups

    def first_step(self, zero_grad=False):
        pass

    def second_step(self, zero_grad=False):
        self.base_optimizer.step()


model = torch.nn.Linear(4, 2)
optimizer = SAM(model.parameters(), torch.optim.SGD, lr=0.1)
scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=200)
loader = DataLoader(TensorDataset(torch.randn(8, 4), torch.randint(0, 2, (8,))), batch_size=4)
print(optimizer.defaults)


def train():
    for x, y in loader:
        F.cross_entropy(model(x), y).backward()
        optimizer.first_step(zero_grad=True)
        F.cross_entropy(model(x), y).backward()
        optimizer.second_step(zero_grad=True)


for epoch in range(3):
    train()
    scheduler.step()
"""

HESSIAN_SCRIPT = """\
import torch

model = torch.nn.Linear(4, 2)
optimizer = MyOptimizer(model.parameters(), lr=0.1)
print(optimizer.lr)
for step in range(10):
    model(torch.randn(2, 4)).sum().backward()
    optimizer.step()
    optimizer.zero_grad()
    if step % 5 == 4:
        model(torch.randn(2, 4)).sum().backward()
        optimizer.update_hessian()
        optimizer.zero_grad()
"""


def _converted(source: str, name: str) -> tuple[str, list[str]]:
    result = convert_source(source, name)
    assert result.refused is None, result.refused
    ast.parse(result.text)
    return result.text, result.notes


def test_sam_steps_go_through_the_wrapped_optimizer():
    out, notes = _converted(SAM_SCRIPT, "sam.py")
    assert "optimizer.optimizer.first_step(zero_grad=True)" in out
    assert "optimizer.optimizer.second_step(zero_grad=True)" in out
    assert any("optimizer.first_step (line" in n and "(.optimizer)" in n for n in notes), notes


def test_the_optimizer_api_is_left_on_the_prepared_optimizer():
    out, _ = _converted(SAM_SCRIPT, "sam.py")
    assert "print(optimizer.defaults)" in out  # AcceleratedOptimizer passes it on
    assert "optimizer.optimizer.defaults" not in out


def test_a_scheduler_of_an_optimizer_stepped_by_its_own_methods_keeps_its_epoch_cadence():
    """No ``optimizer.step()``: the epoch loop's scheduler.step() is per epoch against first_step()."""
    out, notes = _converted(SAM_SCRIPT, "sam.py")
    assert "scheduler)" not in out.split("accelerator.prepare(")[1].split("\n")[0]
    assert any(n.startswith("scheduler steps once per epoch") for n in notes), notes


def test_an_optimizer_built_on_another_is_prepared_without_device_placement():
    """prepare() reloads the state dict: SAM's groups would no longer be its base optimizer's, and
    the scheduler would move an LR nothing steps with (the fixture's losses parted at the first decay)."""
    out, notes = _converted(SAM_SCRIPT, "sam.py")
    assert "    model, optimizer, loader, device_placement=[True, False, True]\n" in out
    assert any(n.startswith("optimizer shares its parameter groups") for n in notes), notes


def test_a_base_optimizer_class_through_a_name_and_a_wrapped_instance_count_too():
    named = SAM_SCRIPT.replace("SAM(model.parameters(), torch.optim.SGD,", "SAM(model.parameters(), base,").replace(
        "model = torch.nn.Linear(4, 2)\n", "model = torch.nn.Linear(4, 2)\nbase = torch.optim.SGD\n"
    )
    named = named.replace("        self.param_groups = self.base_optimizer.param_groups\n", "")
    assert "device_placement=[True, False, True]" in _converted(named, "sam.py")[0]
    lookahead = HESSIAN_SCRIPT.replace(
        "optimizer = MyOptimizer(model.parameters(), lr=0.1)\n",
        "inner = torch.optim.SGD(model.parameters(), lr=0.1)\noptimizer = Lookahead(inner)\n",
    )
    out = _converted(lookahead, "look.py")[0]
    assert "    model, inner, optimizer, device_placement=[True, False, False]\n" in out, out


def test_a_plain_optimizer_keeps_the_plain_prepare_call():
    out, _ = _converted(HESSIAN_SCRIPT, "hessian.py")
    assert "device_placement" not in out


def test_methods_and_attributes_after_prepare_only():
    out, notes = _converted(HESSIAN_SCRIPT, "hessian.py")
    assert "optimizer.optimizer.update_hessian()" in out
    assert "optimizer.zero_grad()" in out and "optimizer.optimizer.zero_grad()" not in out
    assert "print(optimizer.optimizer.lr)" in out  # printed after prepare(): the wrapper has no lr


def test_idempotent():
    out, _ = _converted(SAM_SCRIPT, "sam.py")
    again = convert_source(out, "sam.py")
    assert again.refused is None and again.text == out


CLOSURE_VALUE_SCRIPT = """\
import torch

net = torch.nn.Linear(3, 1)
optimizer_ADAM = torch.optim.Adam(net.parameters(), lr=1e-2)
optimizer_LBFGS = torch.optim.LBFGS(net.parameters(), lr=1e-1)
ub, yb = torch.randn(8, 3), torch.randn(8, 1)


def closure():
    optimizer_LBFGS.zero_grad()
    loss = torch.mean((yb - net(ub)) ** 2)
    loss.backward()
    return loss


total = 0.0
for epoch in range(4):
    if epoch < 2:
        loss = optimizer_ADAM.step(closure)
    else:
        loss = optimizer_LBFGS.step(closure)
    total += loss.item()
optimizer_LBFGS.step(closure)
"""


def test_a_step_whose_value_is_read_goes_through_the_wrapped_optimizer():
    """ParWH's LBFGS trainer (survey23d): ``loss = optimizer.step(closure)``; accelerate's
    ``AcceleratedOptimizer.step`` returns None, so the converted script raised TypeError at
    ``loss * bs``. The wrapped optimizer's step returns the closure's loss as before."""
    out, notes = _converted(CLOSURE_VALUE_SCRIPT, "parwh.py")
    assert "loss = optimizer_ADAM.optimizer.step(closure)" in out
    assert "loss = optimizer_LBFGS.optimizer.step(closure)" in out
    assert "\noptimizer_LBFGS.step(closure)\n" in out  # its value unread: through the wrapper
    assert any("returns None" in n and "line 19" in n for n in notes), notes


LARC_SCRIPT = """\
import torch
from apex.parallel.LARC import LARC

model = torch.nn.Linear(4, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
optimizer = LARC(optimizer=optimizer, trust_coefficient=0.001, clip=False)
for step in range(10):
    model(torch.randn(2, 4)).sum().backward()
    optimizer.step()
    optimizer.zero_grad()
    print(optimizer.optim.param_groups[0]["lr"])
"""


def test_an_optimizer_wrapper_prepare_does_not_wrap_keeps_its_own_attributes():
    """apex's ``LARC`` is no ``torch.optim.Optimizer``: prepare() hands it back as it is, so
    ``optimizer.optimizer.optim`` raised AttributeError at SwAV's first logged step (survey23a)."""
    out, notes = _converted(LARC_SCRIPT, "larc.py")
    assert 'print(optimizer.optim.param_groups[0]["lr"])' in out
    assert "optimizer.optimizer" not in out
    assert any("LARC" in n and "prepare() hands it back as it is" in n for n in notes), notes


def test_an_optimizer_wrapper_class_of_the_script_without_optimizer_base_keeps_its_attributes():
    own = LARC_SCRIPT.replace(
        "from apex.parallel.LARC import LARC\n",
        "\n\nclass LARC(object):\n    def __init__(self, optimizer, trust_coefficient=0.02, clip=True):\n"
        "        self.optim = optimizer\n\n    def step(self):\n        self.optim.step()\n\n"
        "    def zero_grad(self):\n        self.optim.zero_grad()\n\n",
    )
    out = _converted(own, "larc.py")[0]
    assert 'print(optimizer.optim.param_groups[0]["lr"])' in out
    assert "optimizer.optimizer" not in out
    assert "print(optimizer.optimizer.lr)" in _converted(HESSIAN_SCRIPT, "hessian.py")[0]  # unknown class: wrapped


def test_a_scheduler_of_the_base_optimizer_keeps_its_epoch_cadence():
    """Survey 25b: ``CosineAnnealingLR(optimizer.base_optimizer, ...)`` stepped once per epoch was
    prepared (its cadence unknown: built on an attribute, not on the optimizer the roles know), so on
    2 processes it stepped twice per epoch (replica, T_max=10: LR 0.090451 after the first epoch for
    the original's 0.097553, 0.0 at the fifth, back at 0.1 at the tenth). The base optimizer steps
    when the optimizer holding it does."""
    source = SAM_SCRIPT.replace("CosineAnnealingLR(optimizer,", "CosineAnnealingLR(optimizer.base_optimizer,")
    out, notes = _converted(source, "sam.py")
    assert "scheduler" not in out.split("accelerator.prepare(")[1].split(")")[0], out
    assert any(n.startswith("scheduler steps once per epoch") for n in notes), notes


def test_a_scheduler_of_the_base_optimizer_stepped_per_batch_is_still_prepared():
    source = SAM_SCRIPT.replace("CosineAnnealingLR(optimizer,", "CosineAnnealingLR(optimizer.base_optimizer,")
    source = source.replace(
        "        optimizer.second_step(zero_grad=True)\n",
        "        optimizer.second_step(zero_grad=True)\n        scheduler.step()\n",
    ).replace("    train()\n    scheduler.step()\n", "    train()\n")
    out, _ = _converted(source, "sam.py")
    assert "scheduler" in out.split("accelerator.prepare(")[1].split(")")[0], out


LARS_AROUND = """\
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class LARS(torch.optim.Optimizer):
    def __init__(self, optimizer, eps=1e-8):
        self.optim = optimizer
        self.eps = eps

    @property
    def param_groups(self):
        return self.optim.param_groups

    def step(self, closure=None):
        return self.optim.step(closure)


model = torch.nn.Linear(4, 2)
base_optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
optimizer = LARS(base_optimizer)
scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(base_optimizer, T_max=10)
loader = DataLoader(TensorDataset(torch.randn(8, 4), torch.randint(0, 2, (8,))), batch_size=4)
for epoch in range(10):
    for x, y in loader:
        optimizer.zero_grad()
        F.cross_entropy(model(x), y).backward()
        optimizer.step()
    scheduler.step()
"""


def test_a_scheduler_of_the_optimizer_a_wrapper_steps_keeps_its_epoch_cadence():
    """Survey 25b: torchlars' ``optimizer = LARS(base_optimizer)`` with the scheduler built on
    ``base_optimizer`` and stepped per epoch. Nothing calls ``base_optimizer.step()`` (the wrapper
    does), so the cadence was unknown and the scheduler prepared: replica on 2 processes, T_max=10,
    LR 0.090451 after the first epoch for the original's 0.097553, 0.0 at the fifth, 0.1 at the tenth."""
    out, notes = _converted(LARS_AROUND, "lars.py")
    assert "scheduler" not in out.split("accelerator.prepare(")[1].split(")")[0], out
    assert any(n.startswith("scheduler steps once per epoch") for n in notes), notes
