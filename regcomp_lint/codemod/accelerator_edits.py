"""Edits that read the accelerator, each with the node that reads it and the note that says why.

Every such edit does three things: it edits the script, it records the node that will read the
accelerator (``Planner.uses``: the ``Accelerator(...)`` creation is placed before the first of
them) and it tells the user what changed. The most frequent one runs a statement on the main
process alone, ``if accelerator.is_main_process:`` (a checkpoint or file write, a move of the file
the main process wrote): the checkpoint, file-write and clipping rewrites each spelled the three
steps out in place.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

import libcst as cst

from regcomp_lint.codemod.builders import expression, guarded

if TYPE_CHECKING:
    from regcomp_lint.codemod.rewrites import Planner

N = TypeVar("N", bound=cst.CSTNode)


def accelerator_edit(
    planner: Planner, node: N, edit: Callable[[N], cst.CSTNode], use: cst.CSTNode | None, note: str
) -> None:
    """Edit ``node`` with ``edit``, record ``use`` as reading the accelerator (None: already
    recorded) and append ``note``."""
    planner.edits.on(node, edit)
    if use is not None:
        planner.uses.append(use)
    planner.notes.append(note)


def on_main_process(planner: Planner, statement: cst.CSTNode, acc: str, use: cst.CSTNode | None, note: str) -> None:
    """Put ``statement`` (a line, or a compound statement such as a ``with`` block) under ``if
    <acc>.is_main_process:`` (see :func:`accelerator_edit` for ``use`` and ``note``)."""
    accelerator_edit(planner, statement, guarded(expression(f"{acc}.is_main_process", planner.module)), use, note)
