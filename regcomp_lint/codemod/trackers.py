"""Experiment trackers log from the main process only.

``wandb.init(project=...)`` ran in one process; launched on several, every process starts its own
run (N runs per launch, each logging its shard's loss). After the ``Accelerator`` exists, in the
block that creates it, the call gets ``mode=None if accelerator.is_main_process else "disabled"``:
the main process keeps the mode it had (``None`` reads ``WANDB_MODE``; a mode the call already
chooses is kept the same way: ``mode=(x) if accelerator.is_main_process else "disabled"``), the
others' ``wandb.log`` calls become no-ops
(:data:`~regcomp_lint.knowledge.training_libraries.TRACKER_RUNS`). A call that runs under a rank
test or comes before the ``Accelerator``, and
trackers with no such switch (TensorBoard's ``SummaryWriter``, MLflow), are named in a note.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import libcst as cst

from regcomp_lint.codemod.builders import expression, keyword, with_keyword
from regcomp_lint.codemod.checkpoint_writes import under_rank_test
from regcomp_lint.codemod.tree import Block, code, find_all
from regcomp_lint.knowledge.training_libraries import TRACKER_RUNS, TRACKERS_WITHOUT_SWITCH

if TYPE_CHECKING:
    from regcomp_lint.codemod.rewrites import Planner


def _switched_off(name: str, value: cst.BaseExpression) -> Callable[[cst.CSTNode], cst.CSTNode]:
    def edit(updated: cst.CSTNode) -> cst.CSTNode:
        assert isinstance(updated, cst.Call)
        return with_keyword(updated, name, value)

    return edit


def _operand(text: str) -> str:
    """``text`` as the first operand of a conditional expression (a conditional or lambda itself
    in parentheses)."""
    parsed = cst.parse_expression(text)
    return f"({text})" if isinstance(parsed, (cst.IfExp, cst.Lambda, cst.NamedExpr)) and not parsed.lpar else text


def log_from_main_process(planner: Planner, block: Block, accelerator_at: int) -> None:
    """Switch off the tracker runs of the other processes in ``block`` from ``accelerator_at`` on;
    note the trackers of the file it cannot switch (see the module docstring)."""
    tree = planner.tree
    acc = planner.acc_key
    left: list[str] = []
    for call in find_all(tree.module, cst.Call):
        run = next((name for name in TRACKER_RUNS if tree.resolves_to(call.func, name)), None)
        switchless = run is None and tree.resolves_to(call.func, *TRACKERS_WITHOUT_SWITCH)
        if (run is None and not switchless) or under_rank_test(planner, call):
            continue
        shown = f"{code(call.func)}() at line {tree.line(call)}"
        if switchless:
            left.append(shown)
            continue
        assert run is not None
        name, off = TRACKER_RUNS[run]
        index = planner.project(block, call)
        if index is None or index < accelerator_at or any(a.star for a in call.args):
            left.append(shown)
            continue
        chosen = keyword(call, name)
        kept = "None" if chosen is None else _operand(code(chosen.value).strip())
        planner.edits.on(
            call, _switched_off(name, expression(f"{kept} if {acc}.is_main_process else {off}", planner.module))
        )
        planner.notes.append(
            f"{shown} gets {name}={kept} if {acc}.is_main_process else {off}: one run per launch, logged by the main "
            "process (the others' log calls do nothing)"
        )
    if left:
        planner.notes.append(
            f"{', '.join(left)} logs from every process of a launch (one run or event file each); start it under "
            f"`if {acc}.is_main_process:` and log there, or use accelerator.init_trackers()"
        )
