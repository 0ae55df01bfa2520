"""A learning rate the script sets by hand in its training loop, once its loader is prepared.

YOLOv3's trainer computes ``batches_done = len(dataloader) * epoch + batch_i`` and writes
``g['lr'] = lr`` into every param group from burn-in and step thresholds counted in batches.
``prepare()`` shards the loader: on N processes each counts its own share, so the thresholds
arrive after N times the data (a prepared scheduler would step N times per optimizer step to
keep the schedule; a hand-written one cannot be told). Exact on one process, so the conversion
goes on, naming the line. The same holds for a library schedule handed the step counter by hand
(PEFT's AdaLoRA ``update_and_allocate(global_step)`` against a ``total_step`` counted before
``prepare()``).
"""

from __future__ import annotations

import ast

import libcst as cst

from regcomp_lint.codemod.tree import Function, Tree, code, find_all
from regcomp_lint.knowledge.training_libraries import STEP_COUNTED_METHODS


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


def valued_batch_step_note(parsed: ast.Module | None, key: str, step: ast.Call, loaders: list[str]) -> str | None:
    """The note for ``key``, a scheduler stepped with a value (left unprepared), when that step
    runs inside a loop over one of the prepared ``loaders`` and is handed a counter that loop advances: the DeLA point-cloud trainer's timm
    ``scheduler.step(scheduler_step)`` with ``scheduler_step += 1`` per batch. Each process counts
    its own share of the batches, so on N processes the value reaches each point of the schedule
    after N times the data (a prepared scheduler would take the same value N times, no help).
    Exact on one process, so the conversion goes on, naming the line. None when the step runs
    outside such a loop (``scheduler.step(epoch)`` once per epoch moves as in the original)."""
    if parsed is None:
        return None
    for loop in ast.walk(parsed):
        if not isinstance(loop, (ast.For, ast.AsyncFor)):
            continue
        over = [n.id for n in ast.walk(loop.iter) if isinstance(n, ast.Name) and n.id in loaders]
        if over and any(node is step for stmt in loop.body for node in ast.walk(stmt)) and _counts_batches(loop, step):
            return (
                f"{key} steps with a value inside the loop over the prepared {over[0]} (line {step.lineno}): left "
                f"unprepared (a prepared scheduler would take the same value once per process); each process counts "
                f"only its own batches of {over[0]}, so on N processes a value counted in batches reaches each point "
                "of the schedule after N times the data: exact on one process; for N > 1 count it from "
                f"len({over[0]}) after prepare()"
            )
    return None


def _counts_batches(loop: ast.For | ast.AsyncFor, step: ast.Call) -> bool:
    """The value ``step`` is handed reads a counter the loop's body advances (``scheduler_step +=
    1``). A fraction of the prepared loader's own length (``epoch + i / len(trainloader)`` taken
    after prepare(), NNI's SAM trainer, survey 23g) keeps its pace on N processes and is no count."""
    counters = {n.target.id for n in ast.walk(loop) if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name)}
    handed = [a for a in step.args] + [k.value for k in step.keywords]
    return any(isinstance(n, ast.Name) and n.id in counters for a in handed for n in ast.walk(a))


def step_counted_notes(tree: Tree, training: set[Function], loaders: list[str]) -> list[str]:
    """A note for each ``x.update_and_allocate(step)`` (:data:`STEP_COUNTED_METHODS`) in a
    training loop handed a counter the loop advances, when a training loader is prepared: PEFT's
    AdaLoRA example, survey 22c (replica, tiny BART, init_r=12, target_r=2: 12 of 72 ranks kept by
    the original and by the conversion on 1 process, 72 of 72 on 2 processes, 12 of 72 again once
    ``total_step`` is counted per process). Exact on one process, so the conversion goes on."""
    if not loaders:
        return []
    notes: list[str] = []
    for function in tree.in_source_order(training):
        for call in find_all(function, cst.Call, enter_functions=False):
            func = call.func
            if not (isinstance(func, cst.Attribute) and func.attr.value in STEP_COUNTED_METHODS and call.args):
                continue
            if not _in_a_loop_reading(tree, call):
                continue
            shown = f"{func.attr.value}({code(call.args[0].value).strip()})"
            notes.append(
                f"{shown} at line {tree.line(call)} counts AdaLoRA's rank budget in optimizer steps (tinit, tfinal, "
                f"total_step): with {', '.join(loaders)} prepared, each of N processes takes 1/N of the steps, so on N "
                "processes the budget reaches only 1/N of its schedule (the prepared LR scheduler keeps its pace); "
                "set total_step from the prepared loader's length (len(loader) × epochs after prepare()) for N > 1"
            )
    return notes


def _in_a_loop_reading(tree: Tree, call: cst.Call) -> bool:
    """``call`` sits in a loop and its first argument reads a name the loops bind (``global_step``),
    not a constant."""
    bound = _loop_names(tree, call)
    return any(n.value in bound for n in find_all(call.args[0].value, cst.Name))


def _moves_with_the_loop(tree: Tree, assign: cst.Assign) -> bool:
    """The value reads a name the enclosing loops bind (``lr`` computed from ``batches_done``, the
    step counter itself), not a fixed setting (``args.learning_rate_weights``)."""
    bound = _loop_names(tree, assign)
    return any(n.value in bound for n in find_all(assign.value, cst.Name))


def _loop_names(tree: Tree, node: cst.CSTNode) -> set[str]:
    """The names the loops around ``node`` bind: their targets, and what the outermost one's body
    assigns (``x = ...``, ``step += 1``) or iterates into; empty outside a loop."""
    loops = [a for a in tree.ancestors(node) if isinstance(a, (cst.For, cst.While))]
    if not loops:
        return set()
    outer = loops[-1]
    bound = {n.value for loop in loops if isinstance(loop, cst.For) for n in find_all(loop.target, cst.Name)}
    for inner in find_all(outer.body, (cst.Assign, cst.AugAssign)):
        targets = [t.target for t in inner.targets] if isinstance(inner, cst.Assign) else [inner.target]
        bound |= {n.value for t in targets for n in find_all(t, cst.Name)}
    for nested in find_all(outer.body, cst.For):
        bound |= {n.value for n in find_all(nested.target, cst.Name)}
    return bound


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
