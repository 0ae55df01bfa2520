"""Datasets the script downloads are fetched by the main process first.

``datasets.MNIST("../data", train=True, download=True)`` ran in one process; launched on several,
every process would download into the same folder at once (a half-written archive, a
``FileExistsError``). Statements that download, in the block where the ``Accelerator`` is
created and after it, go under ``with accelerator.main_process_first():`` -- the main process
downloads, the others then find the files. Downloads elsewhere (before the ``Accelerator``
exists, in a helper) are named in a note.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from regcomp_lint.codemod.builders import expression
from regcomp_lint.codemod.tree import Block, code, find_all

if TYPE_CHECKING:
    from regcomp_lint.codemod.rewrites import Planner


def downloads(stmt: cst.CSTNode) -> bool:
    """A statement line with a ``download=True`` keyword (torchvision, torchtext datasets)."""
    return isinstance(stmt, cst.SimpleStatementLine) and any(
        arg.keyword is not None and arg.keyword.value == "download" and code(arg.value).strip() == "True"
        for call in find_all(stmt, cst.Call)
        for arg in call.args
    )


def download_first(planner: Planner, block: Block, accelerator_at: int) -> None:
    """Put each run of consecutive downloading statements of ``block`` from ``accelerator_at`` on
    under one ``with accelerator.main_process_first():``; note the downloads it cannot reach."""
    tree = planner.tree
    body = list(block.body)
    runs: list[list[cst.BaseStatement]] = []
    for index, stmt in enumerate(body):
        if index < accelerator_at or not downloads(stmt):
            continue
        if runs and body.index(runs[-1][-1]) == index - 1:
            runs[-1].append(stmt)
        else:
            runs.append([stmt])
    acc = planner.acc_key
    for run in runs:
        first = run[0]
        assert isinstance(first, cst.SimpleStatementLine)
        rest = run[1:]

        def wrap(updated: cst.CSTNode, rest: list[cst.BaseStatement] = rest) -> cst.CSTNode:
            assert isinstance(updated, cst.SimpleStatementLine)
            inner = [updated.with_changes(leading_lines=[]), *rest]
            return cst.With(
                items=[cst.WithItem(expression(f"{acc}.main_process_first()", planner.module))],
                body=cst.IndentedBlock(body=inner),
                leading_lines=updated.leading_lines,
            )

        planner.edits.on(first, wrap)
        for stmt in rest:
            planner.remove_statement(stmt)
        where = f"line {tree.line(first)}" if not rest else f"lines {tree.line(first)}-{tree.line(run[-1])}"
        planner.notes.append(
            f"the dataset download at {where} runs under {acc}.main_process_first(): the main process "
            "downloads, the others then read its files"
        )
    reached = {id(s) for run in runs for s in run}
    missed = [s for s in find_all(tree.module, cst.SimpleStatementLine) if downloads(s) and id(s) not in reached]
    if missed:
        lines = ", ".join(str(tree.line(s)) for s in missed)
        planner.notes.append(
            f"the download at line(s) {lines} runs in every process: under several processes, download once "
            f"first (or wrap it in `with {acc}.main_process_first():` where the accelerator exists)"
        )
