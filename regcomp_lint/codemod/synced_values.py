"""Values every process computes alike: an evaluation of the synchronized model on whole data.

DDP keeps the prepared model's weights equal on every process. A function of the script that
evaluates it (``acc, val_loss = valid_one_epoch(model, valid_loader, criterion, device)``) in
eval mode, on a loader the conversion leaves whole and drawing no random numbers, returns the
same value on every process: an early stop decided by it (Kaggle's patience counter) ends every
process's loop at the same epoch, so it does not make the step counts differ. Anything else a
loop ends on (a training loss, a sharded loader's metric, a random draw) still does.

One function often does both (``run_epoch(loader, train_mode)``: ``model.train(train_mode)``,
the step under ``if train_mode:``); called with the flag a constant ``False`` it evaluates, so
the call is read with that flag bound: ``model.train(False)`` is eval mode and the branches the
binding never enters are left out.
"""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst

from regcomp_lint.analysis.own_callees import function_called
from regcomp_lint.codemod.roles import bindings
from regcomp_lint.codemod.tree import Tree, find_all, key_of, parameter_names
from regcomp_lint.knowledge import torch_api

#: How deep the evaluation's own calls into the file's functions are followed.
_MAX_DEPTH = 2


def evaluates_alike(tree: Tree, call: cst.Call, sharded: set[str]) -> bool:
    """``call`` runs a function of this file that evaluates in eval mode on what it is handed,
    none of it in ``sharded`` (the loaders the conversion prepares), and draws nothing random."""
    defs = _functions_by_name(tree)
    function = _local_function(defs, call)
    if function is None:
        return False
    for arg in call.args:
        if arg.star:
            return False
        value = arg.value
        if isinstance(value, (cst.Integer, cst.Float, cst.SimpleString)):
            continue
        key = key_of(value)
        if key is None or key in sharded or key.split(".")[0] in sharded:
            return False
    flags = _constant_flags(function, call)
    functions = [function, *_callees(defs, function, _MAX_DEPTH)]
    calls = _calls_within(tree, functions, lambda c: _skipped(tree, function, c, flags))
    if calls is None:
        return False
    if not any(_sets_eval_mode(c, flags) for c in calls):
        return False  # in train mode dropout draws from each process's generator
    # a parameter is what the caller hands in (checked above for `function`), not the loader of that name
    names = {n.value for n in find_all(function, cst.Name)} - set(parameter_names(function))
    names |= {n.value for f in functions[1:] for n in find_all(f, cst.Name)}
    return not (names & sharded)


def loop_evaluates_alike(tree: Tree, outer: cst.For | cst.While, loop: cst.For, sharded: frozenset[str]) -> bool:
    """``for x, y in val_loader:`` written inline in the training loop ``outer``: the same reading
    as :func:`evaluates_alike` for a loop rather than a function. It iterates a loader the
    conversion leaves whole (also through ``tqdm(...)`` or ``enumerate(...)``), names nothing in
    ``sharded``, draws nothing random, trains nothing, and runs in eval mode: ``model.eval()``
    inside it, or in ``outer`` before it with no ``train()`` call between."""
    source = loop.iter
    while isinstance(source, cst.Call) and source.args and not source.args[0].star:
        source = source.args[0].value  # tqdm(val_loader, ...), enumerate(val_loader)
    key = key_of(source)
    if key is None or key in sharded or key.split(".")[0] in sharded:
        return False
    if {n.value for n in find_all(loop, cst.Name)} & sharded:
        return False
    calls = _calls_within(tree, [loop], lambda call: False)  # type: ignore[list-item]
    if calls is None:
        return False
    if any(_sets_eval_mode(c, {}) for c in calls):
        return True
    start = tree.line(loop)
    before = [c for c in find_all(outer.body, cst.Call, enter_functions=False) if tree.line(c) < start]
    for call in sorted(before, key=tree.line, reverse=True):
        if _sets_eval_mode(call, {}):
            return True
        if isinstance(call.func, cst.Attribute) and call.func.attr.value == "train":
            return False
    return False


def _functions_by_name(tree: Tree) -> dict[str, list[cst.FunctionDef]]:
    defs: dict[str, list[cst.FunctionDef]] = {}
    for function in find_all(tree.module, cst.FunctionDef):
        defs.setdefault(function.name.value, []).append(function)
    return defs


def _local_function(defs: dict[str, list[cst.FunctionDef]], call: cst.Call) -> cst.FunctionDef | None:
    """The file's one function of the name ``call`` calls (:mod:`~regcomp_lint.analysis.own_callees`)."""
    return function_called(defs.get(call.func.value, [])) if isinstance(call.func, cst.Name) else None


def _callees(defs: dict[str, list[cst.FunctionDef]], function: cst.FunctionDef, depth: int) -> list[cst.FunctionDef]:
    if depth <= 0:
        return []
    found: list[cst.FunctionDef] = []
    for call in find_all(function, cst.Call):
        callee = _local_function(defs, call)
        if callee is not None and callee is not function and callee not in found:
            found += [callee, *_callees(defs, callee, depth - 1)]
    return found


def _constant_flags(function: cst.FunctionDef, call: cst.Call) -> dict[str, bool]:
    """The parameters of ``function`` that ``call`` fills with ``True``, ``False`` or ``None``
    (as False), by position or keyword, and that ``function`` never rebinds:
    ``run_epoch(val_loader, train_mode=False)`` (as :func:`~regcomp_lint.analysis.training_loops.constant_flags`)."""
    params = [p.name.value for p in function.params.params]
    flags: dict[str, bool] = {}
    for index, arg in enumerate(call.args):
        value = arg.value
        if not isinstance(value, cst.Name) or value.value not in _CONSTANTS:
            continue
        name = arg.keyword.value if arg.keyword is not None else params[index] if index < len(params) else None
        if name is not None:
            flags[name] = _CONSTANTS[value.value]
    return {name: value for name, value in flags.items() if not bindings(function, name)}  # never rebound


_CONSTANTS = {"True": True, "False": False, "None": False}


def _flag_value(test: cst.BaseExpression, flags: dict[str, bool]) -> bool | None:
    """What ``test`` is under ``flags``: ``train_mode`` or ``not train_mode``; None otherwise."""
    if isinstance(test, cst.Name) and test.value in flags:
        return flags[test.value]
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = _flag_value(test.expression, flags)
        return None if inner is None else not inner
    return None


def _skipped(tree: Tree, function: cst.FunctionDef, node: cst.CSTNode, flags: dict[str, bool]) -> bool:
    """``node`` (in ``function``) sits in a branch of an ``if`` on a flag that the binding never enters."""
    if not flags or not tree.contains(function, node):
        return False
    child: cst.CSTNode = node
    for anc in tree.ancestors(node):
        if anc is function:
            return False
        if isinstance(anc, cst.If) and child is not anc.test:
            value = _flag_value(anc.test, flags)
            if value is not None and (value is False) == (child is anc.body):
                return True
        child = anc
    return False


def _sets_eval_mode(call: cst.Call, flags: dict[str, bool]) -> bool:
    """``model.eval()``, or ``model.train(False)`` / ``model.train(train_mode)`` with the flag bound False."""
    func = call.func
    if not isinstance(func, cst.Attribute):
        return False
    if func.attr.value == "eval":
        return not call.args
    if func.attr.value != "train" or len(call.args) != 1 or call.args[0].keyword is not None:
        return False
    value = call.args[0].value
    return isinstance(value, cst.Name) and (value.value == "False" or flags.get(value.value) is False)


def _calls_within(
    tree: Tree, functions: list[cst.FunctionDef], skipped: Callable[[cst.Call], bool]
) -> list[cst.Call] | None:
    """Every call in ``functions`` (the evaluation and the file's functions it calls) but those
    ``skipped`` (in a branch the call's flags never enter); None when one of them draws a random
    number, trains (``backward``) or talks to the other processes."""
    calls = [c for f in functions for c in find_all(f, cst.Call) if not skipped(c)]
    for call in calls:
        if tree.resolves_to(call.func, *torch_api.RANDOM_VALUES) or tree.resolves_under(
            call.func, *torch_api.UNSEEDED_RANDOM_MODULES, "torch.distributed"
        ):
            return None
        if isinstance(call.func, cst.Attribute) and call.func.attr.value in ("backward", "step"):
            return None
    return calls
