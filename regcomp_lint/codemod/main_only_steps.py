"""A scheduler stepped by the main process alone, named in a note.

Survey 25d pdiff: ``if accelerator.is_main_process: scheduler.step()``. Only the main process's
learning rate moves; every other process trains on at its first one and the ranks part. RC402
names it (session 25: its own message, no fix). The converter leaves the step where the script
put it (the conversion trains as the original did, this defect included) and says so in a note,
on a script that already uses Accelerate and on a plain or DDP one alike (``if rank == 0:``); an
Accelerate script left unchanged (its launch decides the backend, as pdiff's ``.sh`` does) says it
in the reason it is left so.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from regcomp_lint.analysis.training_objects import Kind
from regcomp_lint.codemod.checkpoint_writes import under_rank_test
from regcomp_lint.codemod.lint_view import lint_view
from regcomp_lint.codemod.tree import code, find_all

if TYPE_CHECKING:
    from regcomp_lint.codemod.rewrites import Planner


def main_only_scheduler_steps(planner: Planner) -> list[str]:
    """A note for each ``X.step()`` of a scheduler (as the lint's roles see ``X``) that runs on the
    main process alone (:func:`~regcomp_lint.codemod.checkpoint_writes.under_rank_test`)."""
    tree = planner.tree
    view = lint_view(tree)
    notes = []
    for call in find_all(tree.module, cst.Call):
        func = call.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "step"):
            continue
        origin = view.origin(func.value, callers=True)
        if origin is None or origin.kind is not Kind.SCHEDULER or not under_rank_test(planner, call):
            continue
        notes.append(
            f"{code(call).strip()} at line {tree.line(call)} runs on the main process alone (under a test of the "
            "rank): on every other process the learning rate never moves and the ranks train apart (RC402); left "
            "as the original has it: step it on every process"
        )
    return notes
