"""The roles of schedulers a script unpacks from a factory's tuple or gets from a scheduler
factory (analysis/training_roles.py): what RC402 and regcomp-fix both read (issue 12)."""

from __future__ import annotations

import ast
import dataclasses

import pytest

from regcomp_lint.analysis.training_objects import Kind
from regcomp_lint.analysis.training_roles import Cadence, Origin
from tests.test_training_roles import Roles

FACTORY = """
def build(m):
    o = torch.optim.AdamW(m.parameters())
    s = OneCycleLR(o, max_lr=0.1, total_steps=10)
    return o, s
"""
PER_STEP = "for epoch in range(2):\n    for x in dl:\n        o.step()\n        s.step()\n"
PER_EPOCH = "for epoch in range(2):\n    for x in dl:\n        o.step()\n    s.step()\n"


def _unpacking(roles: Roles) -> tuple[ast.Assign, ast.Call]:
    found = next(
        node
        for node in ast.walk(roles.tree)
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Tuple) and isinstance(node.value, ast.Call)
    )
    assert isinstance(found.value, ast.Call)
    return found, found.value


@pytest.mark.parametrize(
    "loop,cadence", [(PER_STEP, Cadence.PER_STEP), (PER_EPOCH, Cadence.PER_EPOCH)], ids=["per-step", "per-epoch"]
)
def test_a_scheduler_unpacked_from_a_local_factory(loop, cadence):
    roles = Roles(FACTORY + "o, s = build(model)\n" + loop)
    _, call = _unpacking(roles)
    found = roles.roles.unpacked_origin(call, roles.wheres[id(call)], 1)
    assert isinstance(found, Origin) and found.kind is Kind.SCHEDULER
    assert roles.roles.cadence(found)[0] is cadence
    optimizer = roles.roles.unpacked_origin(call, roles.wheres[id(call)], 0)
    assert isinstance(optimizer, Origin) and optimizer.kind is Kind.OPTIMIZER


@pytest.mark.parametrize(
    "loop,cadence", [(PER_STEP, Cadence.PER_STEP), (PER_EPOCH, Cadence.PER_EPOCH)], ids=["per-step", "per-epoch"]
)
@pytest.mark.parametrize("through_a_function", [False, True], ids=["here", "through-a-function"])
def test_a_scheduler_unpacked_from_a_call_the_roles_cannot_see_into(loop, cadence, through_a_function):
    """Another module's ``o, s = build(model)``: the steps of the names bound there decide, also
    where they are handed to a function of the file."""
    if through_a_function:
        body = "\n".join("    " + line for line in loop.splitlines()[1:])
        loop = f"def epoch(dl, o, s):\n{body}\nfor e in range(2):\n    epoch(dl, o, s)\n"
        if cadence is Cadence.PER_EPOCH:
            loop = "def epoch(dl, o):\n    for x in dl:\n        o.step()\nfor e in range(2):\n    epoch(dl, o)\n    s.step()\n"
    roles = Roles("from optim import build\no, s = build(model)\n" + loop)
    assign, call = _unpacking(roles)
    assert roles.roles.unpacked_origin(call, roles.wheres[id(call)], 1) is None
    after = dataclasses.replace(roles.wheres[id(call)], pos=(assign.end_lineno or 0, assign.end_col_offset or 0))
    targets = assign.targets[0]
    assert isinstance(targets, ast.Tuple)
    found, step = roles.roles.bound_cadence(targets.elts[1], targets.elts[0], after)
    assert found is cadence and step is not None


@pytest.mark.parametrize(
    "head",
    [
        "from optim import make_scheduler\n",
        "def make_scheduler(o):\n    return OneCycleLR(o, max_lr=0.1, total_steps=10)\n",
    ],
    ids=["other-module", "same-file"],
)
def test_a_scheduler_factory_handed_the_optimizer_and_stepped_is_a_scheduler(head):
    """Fed the optimizer (so its parameters) and stepped without arguments, as an optimizer is."""
    roles = Roles(
        head + "sched = make_scheduler(opt)\n" + PER_EPOCH.replace("o.step", "opt.step").replace("s.step", "sched.step")
    )
    found = roles.built("sched")
    assert found.kind is Kind.SCHEDULER
    assert roles.roles.cadence(found)[0] is Cadence.PER_EPOCH


def test_an_optimizer_wrapper_named_a_schedule_is_still_an_optimizer():
    """attention-is-all-you-need's ``ScheduledOptim(Adam(...))`` is zeroed: an optimizer."""
    roles = Roles(
        "from optim import ScheduledOptim\noptimizer = ScheduledOptim(torch.optim.Adam(model.parameters()), 2.0)\n"
        "for x in dl:\n    optimizer.zero_grad()\n    model(x).sum().backward()\n    optimizer.step()\n"
    )
    assert roles.built("optimizer").kind is Kind.OPTIMIZER
