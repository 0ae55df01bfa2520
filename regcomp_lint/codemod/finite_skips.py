"""A skip of the optimizer step on a non-finite loss, decided after the backward, from every process.

Survey 24b informer_ws: ``loss.backward()`` then ``if not torch.isfinite(loss): opt.zero_grad();
continue`` before ``opt.step()``. The backward has already all-reduced the gradients, so a NaN on
one process makes every process's gradients NaN; deciding from its own loss, that process skips
the step while the others step on the NaN gradients, and the processes' weights part. The test
reads the loss gathered from every process instead (``torch.isfinite(accelerator.gather(loss)).all()``,
``torch.isnan(...).any()``): every process skips exactly when its gradients hold a non-finite
loss's, as the one process of the original did. On one process ``gather`` returns the loss as it
is. Every process reaches the test together: it stands after the backward, which every process
runs (a per-process skip before it is refused by ``uneven_guards``).
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

import libcst as cst

from regcomp_lint.codemod.builders import expression
from regcomp_lint.codemod.per_process import LOOP_OWN, NESTED
from regcomp_lint.codemod.tree import code, find_all, find_own
from regcomp_lint.knowledge.torch_api import NON_FINITE_TESTS

if TYPE_CHECKING:
    from regcomp_lint.codemod.rewrites import Planner


def gather_finite_skips(planner: Planner, backwards: list[cst.Call]) -> None:
    """Rewrite the test of each ``if`` that follows a backward in its block (or a block around
    it, within its function), leaves by ``continue``/``break``/``return`` before an ``X.step()``,
    and tests a value with :data:`~regcomp_lint.knowledge.torch_api.NON_FINITE_TESTS`."""
    tree = planner.tree
    done: set[int] = set()
    for backward in backwards:
        function = tree.function_of(backward)
        child: cst.CSTNode = backward
        for anc in tree.ancestors(backward):
            if anc is function:
                break
            if isinstance(anc, cst.IndentedBlock) and child in anc.body:
                after = list(anc.body[anc.body.index(child) + 1 :])
                for index, stmt in enumerate(after):
                    if isinstance(stmt, cst.If) and id(stmt) not in done and _skips_a_step(stmt, after[index + 1 :]):
                        done.add(id(stmt))
                        _gather_tests(planner, stmt, function)
            child = anc


def _skips_a_step(if_: cst.If, later: list[cst.BaseStatement]) -> bool:
    """``if_`` leaves (its body holds a ``continue``, ``break`` or ``return`` of its own) and a
    later statement of its block calls a ``.step()``."""
    leaves = [*find_own(if_.body, cst.Continue, LOOP_OWN), *find_own(if_.body, cst.Break, LOOP_OWN)]
    leaves += find_own(if_.body, cst.Return, NESTED)
    steps = [
        c
        for stmt in later
        for c in find_all(stmt, cst.Call)
        if isinstance(c.func, cst.Attribute) and c.func.attr.value == "step"
    ]
    return bool(leaves) and bool(steps)


def _gather_tests(planner: Planner, if_: cst.If, function: cst.CSTNode) -> None:
    tree = planner.tree
    calls = [
        (c, reduction)
        for c in find_all(if_.test, cst.Call)
        if len(c.args) == 1 and (reduction := _reduction(planner, c)) is not None
    ]
    if (
        not calls
        or not isinstance(function, (cst.FunctionDef, cst.Module))
        or not planner.can_reach_accelerator(function)
    ):
        return
    acc = planner.accelerator_in(function)
    for call, reduction in calls:
        planner.edits.on(call, partial(_gathered, acc=acc, reduction=reduction, module=planner.module))
        planner.notes.append(
            f"{code(call).strip()} at line {tree.line(call)} decides the optimizer step after the backward, whose "
            f"all-reduce has mixed every process's gradients: it now reads the loss of every process "
            f"({acc}.gather(...).{reduction}()), so every process skips or steps alike"
        )


def _reduction(planner: Planner, call: cst.Call) -> str | None:
    for name, reduction in NON_FINITE_TESTS.items():
        if planner.tree.resolves_to(call.func, name):
            return reduction
    return None


def _gathered(updated: cst.Call, acc: str, reduction: str, module: cst.Module) -> cst.CSTNode:
    value = updated.args[0].value
    gathered = expression(f"{acc}.gather(x)", module)
    assert isinstance(gathered, cst.Call)
    inner = updated.with_changes(
        args=[updated.args[0].with_changes(value=gathered.with_changes(args=[cst.Arg(value)]))]
    )
    return cst.Call(func=cst.Attribute(value=inner, attr=cst.Name(reduction)))
