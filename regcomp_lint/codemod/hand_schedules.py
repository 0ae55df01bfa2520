"""A learning rate the script sets by hand in its training loop, once its loader is prepared.

YOLOv3's trainer computes ``batches_done = len(dataloader) * epoch + batch_i`` and writes
``g['lr'] = lr`` into every param group from burn-in and step thresholds counted in batches.
``prepare()`` shards the loader: on N processes each counts its own share, so the thresholds
arrive after N times the data (a prepared scheduler would step N times per optimizer step to
keep the schedule; a hand-written one cannot be told). Exact on one process, so the conversion
goes on, naming the line.
"""

from __future__ import annotations

import libcst as cst

from regcomp_lint.codemod.tree import Function, Tree, find_all


def hand_lr_notes(tree: Tree, training: set[Function], loaders: list[str]) -> list[str]:
    """One note for the first ``group["lr"] = ...`` in a training function, when a training loader
    is prepared (see the module docstring)."""
    if not loaders:
        return []
    for function in tree.in_source_order(training):
        for assign in find_all(function, cst.Assign, enter_functions=False):
            if any(_is_lr_item(target.target) for target in assign.targets) and _moves_with_the_loop(tree, assign):
                return [
                    f"the learning rate is set by hand at line {tree.line(assign)}: with {', '.join(loaders)} prepared, "
                    "each process counts only its own batches, so on N processes a schedule counted in batches or "
                    "epochs of batches reaches each point after N times the data (a scheduler given to "
                    "accelerator.prepare() steps N times per optimizer step to keep its pace)"
                ]
    return []


def _moves_with_the_loop(tree: Tree, assign: cst.Assign) -> bool:
    """The value reads a name the enclosing loops bind (``lr`` computed from ``batches_done``, the
    step counter itself), not a fixed setting (``args.learning_rate_weights``)."""
    loops = [a for a in tree.ancestors(assign) if isinstance(a, (cst.For, cst.While))]
    if not loops:
        return False
    outer = loops[-1]
    bound = {n.value for loop in loops if isinstance(loop, cst.For) for n in find_all(loop.target, cst.Name)}
    for inner in find_all(outer.body, cst.Assign):
        bound |= {n.value for t in inner.targets for n in find_all(t.target, cst.Name)}
    for nested in find_all(outer.body, cst.For):
        bound |= {n.value for n in find_all(nested.target, cst.Name)}
    return any(n.value in bound for n in find_all(assign.value, cst.Name))


def _is_lr_item(target: cst.BaseAssignTargetExpression) -> bool:
    """``g["lr"]`` / ``param_group['lr']``."""
    if not isinstance(target, cst.Subscript) or len(target.slice) != 1:
        return False
    index = target.slice[0].slice
    return (
        isinstance(index, cst.Index)
        and isinstance(index.value, cst.SimpleString)
        and index.value.evaluated_value == "lr"
    )
