"""Values every process computes alike: an evaluation of the synchronized model on whole data.

DDP keeps the prepared model's weights equal on every process. A function of the script that
evaluates it (``acc, val_loss = valid_one_epoch(model, valid_loader, criterion, device)``) in
eval mode, on a loader the conversion leaves whole and drawing no random numbers, returns the
same value on every process: an early stop decided by it (Kaggle's patience counter) ends every
process's loop at the same epoch, so it does not make the step counts differ. Anything else a
loop ends on (a training loss, a sharded loader's metric, a random draw) still does.
"""

from __future__ import annotations

import libcst as cst

from regcomp_lint.codemod.tree import Tree, find_all, key_of
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
    functions = [function, *_callees(defs, function, _MAX_DEPTH)]
    calls = _calls_within(tree, functions)
    if calls is None:
        return False
    if not any(isinstance(c.func, cst.Attribute) and c.func.attr.value == "eval" and not c.args for c in calls):
        return False  # in train mode dropout draws from each process's generator
    names = {n.value for f in functions for n in find_all(f, cst.Name)}
    return not (names & sharded)


def _functions_by_name(tree: Tree) -> dict[str, list[cst.FunctionDef]]:
    defs: dict[str, list[cst.FunctionDef]] = {}
    for function in find_all(tree.module, cst.FunctionDef):
        defs.setdefault(function.name.value, []).append(function)
    return defs


def _local_function(defs: dict[str, list[cst.FunctionDef]], call: cst.Call) -> cst.FunctionDef | None:
    """The file's one function of the name ``call`` calls (None when none or several have it)."""
    if not isinstance(call.func, cst.Name):
        return None
    found = defs.get(call.func.value, [])
    return found[0] if len(found) == 1 else None


def _callees(defs: dict[str, list[cst.FunctionDef]], function: cst.FunctionDef, depth: int) -> list[cst.FunctionDef]:
    if depth <= 0:
        return []
    found: list[cst.FunctionDef] = []
    for call in find_all(function, cst.Call):
        callee = _local_function(defs, call)
        if callee is not None and callee is not function and callee not in found:
            found += [callee, *_callees(defs, callee, depth - 1)]
    return found


def _calls_within(tree: Tree, functions: list[cst.FunctionDef]) -> list[cst.Call] | None:
    """Every call in ``functions`` (the evaluation and the file's functions it calls); None when
    one of them draws a random number, trains (``backward``) or talks to the other processes."""
    calls = [c for f in functions for c in find_all(f, cst.Call)]
    for call in calls:
        if tree.resolves_to(call.func, *torch_api.RANDOM_VALUES) or tree.resolves_under(
            call.func, *torch_api.UNSEEDED_RANDOM_MODULES, "torch.distributed"
        ):
            return None
        if isinstance(call.func, cst.Attribute) and call.func.attr.value in ("backward", "step"):
            return None
    return calls
