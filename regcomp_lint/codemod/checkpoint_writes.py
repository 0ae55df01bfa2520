"""Checkpoints the converted script writes from the main process only, read back by every process.

``accelerator.save`` writes on the main process alone. A script that saves and then reads the
file back (the quickstart's ``torch.save(...)`` then ``model.load_state_dict(torch.load(...))``)
ran as one process; converted and launched on several, the other ranks would read the file before
rank 0 has written it (or read a half-written one). A barrier goes between the two.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from regcomp_lint.codemod.builders import statement
from regcomp_lint.codemod.tree import Function, find_all

if TYPE_CHECKING:
    from regcomp_lint.codemod.rewrites import Planner

_READS = ("torch.load",)


def wait_before_reading_back(planner: Planner, writes: list[tuple[Function, cst.Call]]) -> None:
    """``accelerator.wait_for_everyone()`` before the first ``torch.load`` that follows a
    main-process write in the same function, in the innermost block every process runs through
    that holds both (a function body, a ``with``/``try`` body). When the write and the read sit
    in one ``if`` or loop, no barrier: under ``if rank == 0`` one would never be met."""
    tree = planner.tree
    done: set[tuple[int, int]] = set()
    for place, write in writes:
        reads = [
            call
            for call in find_all(place, cst.Call, enter_functions=False)
            if tree.resolves_to(call.func, *_READS) and tree.line(call) > tree.line(write)
        ]
        if not reads:
            continue
        read = min(reads, key=tree.line)
        block = planner.descend(tree.body_of(place), [write, read])
        at_write, at_read = planner.project(block, write), planner.project(block, read)
        if at_write is None or at_read is None or at_write >= at_read or (id(block), at_read) in done:
            continue
        done.add((id(block), at_read))
        acc = planner.accelerator_in(place)
        barrier = statement(f"{acc}.wait_for_everyone()", planner.module)
        planner.edits.add_statements(block, at_read, [barrier], after=False)
        planner.notes.append(
            f"{acc}.wait_for_everyone() before the read at line {tree.line(read)}: the checkpoint written at line "
            f"{tree.line(write)} comes from the main process only, so the other processes wait until it is there"
        )
