"""Training metrics counted over one shard and divided by the whole data set.

A training loop that counts as it goes -- ``correct += (pred.argmax(1) == y).sum().item()`` --
and reports ``correct / len(train_loader.dataset)`` counts, once its loader is prepared, only
the batches of its own process while still dividing by every sample: on N processes it shows
1/N of the accuracy (survey 14: 50 % for 100 % on two processes). Training is unaffected, so
the conversion goes on and names the line; a loop that already combines its counts across
processes is left without a note.
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
        if any(
            isinstance(c.func, cst.Attribute) and c.func.attr.value in _COMBINING for c in find_all(function, cst.Call)
        ):
            continue
        handed = set(parameter_names(function)) if isinstance(function, cst.FunctionDef) else set()
        for division in find_all(function, cst.BinaryOperation, enter_functions=False):
            if not isinstance(division.operator, cst.Divide):
                continue
            loader = _dataset_length_of(division.right)
            if loader is None or (loader not in loaders and not (loader in handed and _iterated(function, loader))):
                continue
            notes.append(
                f"`{code(division).strip()}` at line {tree.line(division)} divides what this process counted over its "
                f"share of {loader} by the whole data set's length: on N processes it reports 1/N of the value "
                "(training is unchanged); sum the count across processes first (accelerator.reduce(..., 'sum'))"
            )
    return notes


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
