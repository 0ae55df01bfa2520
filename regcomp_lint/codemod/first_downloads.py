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
from regcomp_lint.codemod.tree import Block, Tree, code, find_all
from regcomp_lint.knowledge.torch_api import DOWNLOADERS

if TYPE_CHECKING:
    from regcomp_lint.codemod.rewrites import Planner


def downloads(tree: Tree, stmt: cst.CSTNode) -> bool:
    """A statement that downloads: a call with ``download=True`` (torchvision, torchtext
    datasets), or a fetch or an archive extraction of :data:`DOWNLOADERS`, also inside a compound
    statement (GCN's ``if <files exist>: ... else: with requests.get(url) as f: ...``)."""
    if isinstance(stmt, cst.SimpleStatementLine) and any(
        arg.keyword is not None and arg.keyword.value == "download" and code(arg.value).strip() == "True"
        for call in find_all(stmt, cst.Call)
        for arg in call.args
    ):
        return True
    if not isinstance(stmt, (cst.SimpleStatementLine, cst.If, cst.With, cst.Try)):
        return False
    return any(tree.resolves_to(call.func, *DOWNLOADERS) for call in find_all(stmt, cst.Call, enter_functions=False))


def download_first(planner: Planner, block: Block, accelerator_at: int) -> None:
    """Put each downloading statement of ``block`` from ``accelerator_at`` on under its own
    ``with accelerator.main_process_first():`` (the statement as the other edits left it, its
    comments above the ``with``); note the downloads it cannot reach."""
    tree = planner.tree
    acc = planner.acc_key
    reached = [stmt for index, stmt in enumerate(block.body) if index >= accelerator_at and downloads(tree, stmt)]

    def wrap(updated: cst.CSTNode) -> cst.CSTNode:
        assert isinstance(updated, (cst.SimpleStatementLine, cst.BaseCompoundStatement))
        return cst.With(
            items=[cst.WithItem(expression(f"{acc}.main_process_first()", planner.module))],
            body=cst.IndentedBlock(body=[updated.with_changes(leading_lines=[])]),
            leading_lines=updated.leading_lines,
        )

    for stmt in reached:
        planner.edits.on(stmt, wrap)
        planner.notes.append(
            f"the dataset download at line {tree.line(stmt)} runs under {acc}.main_process_first(): the main "
            "process downloads, the others then read its files"
        )
    missed = [
        s
        for s in find_all(tree.module, (cst.SimpleStatementLine, cst.If, cst.With, cst.Try))
        if downloads(tree, s) and not any(s is r or _within(tree, s, r) or _within(tree, r, s) for r in reached)
    ]
    missed = [s for s in missed if not any(_within(tree, s, o) for o in missed)]  # the outermost statement only
    if missed:
        lines = ", ".join(str(tree.line(s)) for s in missed)
        planner.notes.append(
            f"the download at line(s) {lines} runs in every process: under several processes, download once "
            f"first (or wrap it in `with {acc}.main_process_first():` where the accelerator exists)"
        )


def _within(tree: Tree, node: cst.CSTNode, outer: cst.CSTNode) -> bool:
    return any(a is outer for a in tree.ancestors(node))
