"""Training metrics counted over one shard and divided by the whole data set.

A training loop that counts as it goes -- ``correct += (pred.argmax(1) == y).sum().item()`` --
and reports ``correct / len(train_loader.dataset)`` counts, once its loader is prepared, only
the batches of its own process while still dividing by every sample: on N processes it shows
1/N of the accuracy (survey 14: 50 % for 100 % on two processes). Training is unaffected, so
the conversion goes on and names the line; a loop that already combines its counts across
processes is left without a note. An evaluation function handed the prepared loader (survey26b
gnn_timm: ``train_acc = test(train_loader)``, ``return correct / len(loader.dataset)``) reports
one shard's count over the whole set the same way, and is named with the call that hands it.
"""

from __future__ import annotations

import libcst as cst

from regcomp_lint.codemod.tree import Function, Tree, code, find_all, key_of, parameter_names

#: Calls that already combine a count across processes.
_COMBINING = ("gather_for_metrics", "gather", "reduce", "all_reduce", "all_gather")


def shard_metric_notes(tree: Tree, training: set[Function], loaders: list[str]) -> list[str]:
    """One note per division of a count by ``len(<prepared loader>.dataset)`` in a training function."""
    if not loaders:
        return []
    notes: list[str] = []
    for function in tree.in_source_order(training):
        handed = parameter_names(function) if isinstance(function, cst.FunctionDef) else []
        notes += _divisions(tree, function, {*loaders, *(h for h in handed if _iterated(function, h))})
    for function, parameter, loader, call in _handed_loaders(tree, training, loaders):
        if _iterated(function, parameter):
            handed_to = f"{loader} (handed to {function.name.value}() at line {tree.line(call)})"
            notes += _divisions(tree, function, {parameter}, handed_to)
    return notes


def _divisions(tree: Tree, function: Function, keys: set[str], named: str | None = None) -> list[str]:
    """A note per ``x / len(<loader>.dataset)`` in ``function`` with a loader of ``keys``, unless
    the function combines its values across processes."""
    if any(isinstance(c.func, cst.Attribute) and c.func.attr.value in _COMBINING for c in find_all(function, cst.Call)):
        return []
    notes: list[str] = []
    for division in find_all(function, cst.BinaryOperation, enter_functions=False):
        if not isinstance(division.operator, cst.Divide):
            continue
        loader = _dataset_length_of(division.right)
        if loader is None or loader not in keys:
            continue
        notes.append(
            f"`{code(division).strip()}` at line {tree.line(division)} divides what this process counted over its "
            f"share of {named or loader} by the whole data set's length: on N processes it reports 1/N of the value "
            "(training is unchanged); sum the count across processes first (accelerator.reduce(..., 'sum'))"
        )
    return notes


def _handed_loaders(
    tree: Tree, training: set[Function], loaders: list[str]
) -> list[tuple[cst.FunctionDef, str, str, cst.Call]]:
    """(function, its parameter, the prepared loader, the call) for each call of a function of
    the script, not a training one, that hands it a prepared loader by position
    (``test(train_loader)``); the first call per function and parameter."""
    found: list[tuple[cst.FunctionDef, str, str, cst.Call]] = []
    seen: set[tuple[int, str]] = set()
    for call in find_all(tree.module, cst.Call):
        function = tree.function_named(call)
        if function is None or function in training:
            continue
        parameters = parameter_names(function)
        for index, arg in enumerate(call.args):
            if arg.keyword is not None or arg.star or index >= len(parameters):
                break
            loader = key_of(arg.value)
            if loader in loaders and (id(function), parameters[index]) not in seen:
                seen.add((id(function), parameters[index]))
                found.append((function, parameters[index], loader, call))
    return found


def _dataset_length_of(node: cst.BaseExpression) -> str | None:
    """``len(train_loader.dataset)`` -> ``train_loader``."""
    if (
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Name)
        and node.func.value == "len"
        and len(node.args) == 1
        and isinstance(node.args[0].value, cst.Attribute)
        and node.args[0].value.attr.value == "dataset"
    ):
        return key_of(node.args[0].value.value)
    return None


def _iterated(function: Function, name: str) -> bool:
    """``for ... in name`` (through ``enumerate``/``tqdm``) in the function."""
    for loop in find_all(function, cst.For, enter_functions=False):
        if any(isinstance(n, cst.Name) and n.value == name for n in find_all(loop.iter, cst.Name)) or (
            isinstance(loop.iter, cst.Name) and loop.iter.value == name
        ):
            return True
    return False
