"""Where a scheduler's ``.step()`` runs: once per optimizer step, or once per epoch.

A prepared scheduler (accelerate's ``AcceleratedScheduler``) steps once per process on every
call, which is right for a schedule sized in optimizer steps of one process and wrong for one
stepped per epoch (a ``StepLR`` would move twice per epoch on two processes). The cadence is read
from the loops around each call, followed through the functions the script calls: the scheduler
steps per optimizer step when its ``.step()`` sits in the same loop as the optimizer's, per epoch
when the optimizer steps in a loop nested inside the one that steps the scheduler. A ``.step()``
in a loop of its own, apart from training (``for _ in range(start_epoch): scheduler.step()`` on
resume), does not decide.
"""

from __future__ import annotations

from enum import Enum

import libcst as cst

from regcomp_lint.codemod.roles import CallGraph, bindings
from regcomp_lint.codemod.tree import Function, Tree, find_all, key_of, parameter_names

_MAX_DEPTH = 3


class Cadence(Enum):
    PER_STEP = "per optimizer step"
    PER_EPOCH = "per epoch"
    UNKNOWN = "unknown"


LoopPath = tuple[cst.CSTNode, ...]


def _own_loops(tree: Tree, node: cst.CSTNode, function: Function) -> LoopPath:
    loops = []
    for anc in tree.ancestors(node):
        if anc is function:
            break
        if isinstance(anc, (cst.For, cst.While)):
            loops.append(anc)
    return tuple(reversed(loops))


def loop_path(tree: Tree, graph: CallGraph, node: cst.CSTNode, scope: Function, depth: int = 0) -> LoopPath | None:
    """The loops (outermost first) that run ``node``, from ``scope`` down through the calls that
    reach it; None when calls from different loops reach it."""
    function = tree.function_of(node)
    own = _own_loops(tree, node, function)
    if function is scope or depth >= _MAX_DEPTH or isinstance(function, cst.Module):
        return own
    callers = graph.callers_of(function)
    if not callers:
        return own
    paths = {loop_path(tree, graph, call, scope, depth + 1) for _, call in callers}
    if len(paths) != 1 or None in paths:
        return None
    (outer,) = paths
    assert outer is not None
    return outer + own


def _receivers(
    tree: Tree, graph: CallGraph, function: Function, key: str, depth: int = 0
) -> list[tuple[Function, str]]:
    """(function, name) pairs under which ``key`` of ``function`` is seen: itself, and the parameters
    of the functions it is passed to (by position or keyword)."""
    found: list[tuple[Function, str]] = [(function, key)]
    owner = tree.class_of(function)
    if key.startswith("self.") and owner is not None:
        found += [(m, key) for m in owner.body.body if isinstance(m, cst.FunctionDef) and m is not function]
        return found
    # functions that read ``key`` as a global (a module-level script) or from the enclosing
    # function (a closure): ``def train(epoch): ... optimizer.step()`` beside ``scheduler.step()``
    inner = (
        [f for f in find_all(tree.module, cst.FunctionDef) if tree.class_of(f) is None]
        if isinstance(function, cst.Module)
        else [f for f in find_all(function, cst.FunctionDef) if f is not function]
    )
    found += [(f, key) for f in inner if "." not in key and key not in parameter_names(f) and not bindings(f, key)]
    if depth >= _MAX_DEPTH:
        return found
    for callee, call in graph.calls_from(function):
        positional = parameter_names(callee, keyword_only=False)
        if isinstance(call.func, cst.Attribute) and positional and positional[0] == "self":
            positional = positional[1:]
        position = 0
        for arg in call.args:
            if arg.star:
                break
            name = arg.keyword.value if arg.keyword is not None else None
            if name is None:
                name = positional[position] if position < len(positional) else None
                position += 1
            if name is not None and name in parameter_names(callee) and key_of(arg.value) == key:
                found += _receivers(tree, graph, callee, name, depth + 1)
    return found


def step_calls(tree: Tree, graph: CallGraph, scope: Function, key: str, *, through: bool = False) -> list[cst.Call]:
    """``key.step(...)`` calls (and with ``through``, ``X.step(key)`` like ``scaler.step(optimizer)``)."""
    calls: list[cst.Call] = []
    for function, name in _receivers(tree, graph, scope, key):
        for call in find_all(function, cst.Call, enter_functions=False):
            func = call.func
            if not isinstance(func, cst.Attribute) or func.attr.value != "step":
                continue
            if key_of(func.value) == name or (through and any(key_of(a.value) == name for a in call.args)):
                calls.append(call)
    return calls


def cadence(
    tree: Tree, graph: CallGraph, scope: Function, scheduler: str, value: cst.BaseExpression, optimizers: list[str]
) -> tuple[Cadence, cst.Call | None]:
    """How often ``scheduler`` steps, with the step call that decided it."""
    first = value.args[0].value if isinstance(value, cst.Call) and value.args else None
    built_on = [key_of(first)] if first is not None and key_of(first) in optimizers else optimizers
    scheduler_steps = step_calls(tree, graph, scope, scheduler)
    optimizer_steps = [c for o in built_on for c in step_calls(tree, graph, scope, str(o), through=True)]
    if not scheduler_steps or not optimizer_steps:
        return Cadence.UNKNOWN, None
    optimizer_paths = [loop_path(tree, graph, c, scope) for c in optimizer_steps]
    if any(p is None for p in optimizer_paths):
        return Cadence.UNKNOWN, None
    found: set[Cadence] = set()
    for call in scheduler_steps:
        path = loop_path(tree, graph, call, scope)
        if path is None:
            return Cadence.UNKNOWN, None
        if path and not any(other is not None and other[:1] == path[:1] for other in optimizer_paths):
            continue  # a loop apart from training (fast-forwarding the schedule on resume)
        for other in optimizer_paths:
            assert other is not None
            if other == path:
                found.add(Cadence.PER_STEP)
            elif len(other) > len(path) and other[: len(path)] == path:
                found.add(Cadence.PER_EPOCH)
            else:
                found.add(Cadence.UNKNOWN)
    if len(found) == 1:
        return found.pop(), scheduler_steps[0]
    return Cadence.UNKNOWN, None
