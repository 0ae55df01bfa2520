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

Session 25: the ``if`` must leave before a step of an optimizer the conversion prepares
(``opt.step()``, ``scaler.step(opt)``, or a helper's parameter its callers hand the optimizer to),
not any ``.step()`` (a scheduler's). A test of a Python number reads the same:
``math.isnan(loss.item())``, ``not math.isfinite(x)``, ``loss.item() != loss.item()``
(:data:`~regcomp_lint.knowledge.torch_api.NUMBER_NON_FINITE_TESTS`) become the torch test of the
gathered tensor (``loss`` itself for ``loss.item()``; ``torch.as_tensor(x, device=...)`` of any
other value, a number or a tensor). A 2-process replica with a NaN sample and
``if math.isnan(loss.item()): continue`` ended with NaN weights on both ranks before, with equal
finite weights after.

Session 26: an optimizer stepped through a list (``for o in opts: o.step()``, ``[o.step() for o
in optimizers]``, ``for o in (opt1, opt2)``) is an optimizer step too: the loop's (or the
comprehension's) name goes by an optimizer when it runs over a list or tuple of them, written
out or bound to a name in the function (``opts = [opt1, opt2]``).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

import libcst as cst

from regcomp_lint.codemod.builders import expression
from regcomp_lint.codemod.per_process import LOOP_OWN, NESTED
from regcomp_lint.codemod.tree import argument_for, code, find_all, find_own, key_of, parameter_names, single_target
from regcomp_lint.knowledge.torch_api import NAN_TEST, NON_FINITE_TESTS, NUMBER_NON_FINITE_TESTS

if TYPE_CHECKING:
    from regcomp_lint.codemod.plain import PlainPlanner


def gather_finite_skips(planner: PlainPlanner, backwards: list[cst.Call]) -> None:
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
                    if (
                        isinstance(stmt, cst.If)
                        and id(stmt) not in done
                        and _skips_a_step(planner, stmt, after[index + 1 :], function)
                    ):
                        done.add(id(stmt))
                        _gather_tests(planner, stmt, function)
            child = anc


def _skips_a_step(planner: PlainPlanner, if_: cst.If, later: list[cst.BaseStatement], function: cst.CSTNode) -> bool:
    """``if_`` leaves (its body holds a ``continue``, ``break`` or ``return`` of its own) and a
    later statement of its block steps an optimizer: ``opt.step()`` or ``scaler.step(opt)`` (a
    scheduler's or another object's ``step()`` is no optimizer step to skip)."""
    leaves = [*find_own(if_.body, cst.Continue, LOOP_OWN), *find_own(if_.body, cst.Break, LOOP_OWN)]
    leaves += find_own(if_.body, cst.Return, NESTED)
    if not leaves:
        return False
    optimizers = _optimizer_names(planner, function)
    return any(
        isinstance(c.func, cst.Attribute)
        and c.func.attr.value == "step"
        and (key_of(c.func.value) in optimizers or (c.args and key_of(c.args[0].value) in optimizers))
        for stmt in later
        for c in find_all(stmt, cst.Call)
    )


def _optimizer_names(planner: PlainPlanner, function: cst.CSTNode) -> set[str]:
    """The keys the optimizers go by in ``function``: the planner's, and a parameter of ``function``
    its callers hand one of them to (``train_epoch(model, opt, loader)`` steps ``optim``)."""
    names = set(planner.optimizers)
    if isinstance(function, cst.FunctionDef):
        for param in parameter_names(function):
            for _, call in planner.graph.callers_of(function):
                passed = argument_for(planner.tree, function, call, param)
                if passed is not None and key_of(passed) in planner.optimizers:
                    names.add(param)
    return names | _listed_optimizers(function, names)


def _listed_optimizers(function: cst.CSTNode, optimizers: set[str]) -> set[str]:
    """The names a loop or comprehension of ``function`` binds to each of a list or tuple of
    ``optimizers``: ``o`` of ``for o in opts`` (``opts = [opt1, opt2]``) or ``for o in (opt1, opt2)``."""
    lists: set[str] = set()
    for assign in find_all(function, cst.Assign):
        bound = single_target(assign)
        if bound is not None and _optimizer_list(bound[1], optimizers):
            lists.add(bound[0])
    return {
        loop.target.value
        for loop in find_all(function, (cst.For, cst.CompFor))
        if isinstance(loop.target, cst.Name) and (key_of(loop.iter) in lists or _optimizer_list(loop.iter, optimizers))
    }


def _optimizer_list(value: cst.BaseExpression, optimizers: set[str]) -> bool:
    """``[opt1, opt2]`` / ``(opt1, opt2)``: a list or tuple written out of optimizers only."""
    return (
        isinstance(value, (cst.List, cst.Tuple))
        and bool(value.elements)
        and all(key_of(element.value) in optimizers for element in value.elements)
    )


@dataclass(frozen=True)
class _Test:
    """A test of one value for NaN/inf: ``torch.isfinite(loss)`` (``number`` None: the call stays,
    its argument gathered) or a test of a Python number, ``math.isnan(loss.item())``, ``x != x``
    (``number``: the torch test that replaces it)."""

    node: cst.BaseExpression
    reduction: str
    number: str | None = None


def _gather_tests(planner: PlainPlanner, if_: cst.If, function: cst.CSTNode) -> None:
    tree = planner.tree
    tests = [test for node in find_all(if_.test, (cst.Call, cst.Comparison)) if (test := _test(planner, node))]
    if (
        not tests
        or not isinstance(function, (cst.FunctionDef, cst.Module))
        or not planner.can_reach_accelerator(function)
    ):
        return
    acc = planner.accelerator_in(function)
    for test in tests:
        if test.number is not None:
            planner.imports.append(("torch", None))
        planner.edits.on(test.node, partial(_gathered, test=test, acc=acc, module=planner.module))
        planner.notes.append(
            f"{code(test.node).strip()} at line {tree.line(test.node)} decides the optimizer step after the backward, "
            f"whose all-reduce has mixed every process's gradients: it now reads the loss of every process "
            f"({acc}.gather(...).{test.reduction}()), so every process skips or steps alike"
        )


def _test(planner: PlainPlanner, node: cst.Call | cst.Comparison) -> _Test | None:
    if isinstance(node, cst.Comparison):
        one = node.comparisons[0] if len(node.comparisons) == 1 else None
        if one is not None and isinstance(one.operator, cst.NotEqual) and code(node.left) == code(one.comparator):
            return _Test(node, NON_FINITE_TESTS[NAN_TEST], NAN_TEST)
        return None
    if len(node.args) != 1:
        return None
    for name, reduction in NON_FINITE_TESTS.items():
        if planner.tree.resolves_to(node.func, name):
            return _Test(node, reduction)
    for name, torch_test in NUMBER_NON_FINITE_TESTS.items():
        if planner.tree.resolves_to(node.func, name):
            return _Test(node, NON_FINITE_TESTS[torch_test], torch_test)
    return None


def _gathered(updated: cst.Call | cst.Comparison, test: _Test, acc: str, module: cst.Module) -> cst.CSTNode:
    gather = expression(f"{acc}.gather(x)", module)
    assert isinstance(gather, cst.Call)
    if test.number is None:
        assert isinstance(updated, cst.Call)
        value = updated.args[0].value
        inner = updated.with_changes(
            args=[updated.args[0].with_changes(value=gather.with_changes(args=[cst.Arg(value)]))]
        )
        return cst.Call(func=cst.Attribute(value=inner, attr=cst.Name(test.reduction)))
    value = updated.left if isinstance(updated, cst.Comparison) else updated.args[0].value
    if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value == "item":
        tensor = value.func.value  # `loss.item()`: the tensor itself
    else:  # a number or a tensor, as the test read it: a tensor on the device for the gather
        as_tensor = expression(f"torch.as_tensor(x, device={acc}.device)", module)
        assert isinstance(as_tensor, cst.Call)
        tensor = as_tensor.with_changes(args=[cst.Arg(value), *as_tensor.args[1:]])
    torch_test = expression(f"{test.number}(x)", module)
    assert isinstance(torch_test, cst.Call)
    inner = torch_test.with_changes(args=[cst.Arg(gather.with_changes(args=[cst.Arg(tensor)]))])
    return cst.Call(func=cst.Attribute(value=inner, attr=cst.Name(test.reduction)))
