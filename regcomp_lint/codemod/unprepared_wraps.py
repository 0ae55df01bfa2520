"""A DDP wrap, in place, of a network no optimizer steps (colorize_gan's perceptual ``vgg_per =
DDP(vgg_per, ...)``, survey 22c).

Accelerate wraps only what it prepares, and preparing a network that nothing trains is not what
the script asked for. What the wrap did for such a network: it copied process 0's parameters and
buffers to every process when it wrapped it, copied its buffers again before each forward, and
averaged gradients no optimizer reads. The wrap is replaced by that first copy
(``torch.distributed.broadcast`` from process 0, as DDP does it, where a process group exists); the note names what is left, the copy
of buffers a forward changes (batch norm in training mode). A network whose parameters are read
in any other way than running it (``vgg.parameters()`` handed to an optimizer under a condition,
survey 21c's ntxent_ddp encoder) is trained after all: refused, as before."""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from regcomp_lint.codemod.builders import statement
from regcomp_lint.codemod.tree import code, find_all, key_of
from regcomp_lint.knowledge import torch_api

if TYPE_CHECKING:
    from regcomp_lint.codemod.plain import PlainPlanner

#: what a network that is only run may be asked besides its forward
RUN_ONLY_METHODS = frozenset({*torch_api.PLACEMENT_METHODS, "train", "eval", "requires_grad_", "float", "half", "cpu"})
LOOP_NAME = "param_or_buffer"


def replace_unprepared_wrap(
    planner: PlainPlanner, call: cst.Call, assign: cst.Assign, target: str, torch_imported: bool
) -> bool:
    """Replace ``target = DDP(target, ...)`` by a copy of process 0's values when ``target`` is
    only run (called, placed, switched to eval); False, changing nothing, otherwise."""
    tree = planner.tree
    scope = tree.function_of(call) or tree.module
    for node in find_all(scope, (cst.Name, cst.Attribute)):
        if key_of(node) != target:
            continue
        parent = tree.parent(node)
        if isinstance(parent, cst.Attribute) and parent.value is node and parent.attr.value not in RUN_ONLY_METHODS:
            return False  # `vgg.parameters()`, `vgg.fc.weight`: its parameters may reach an optimizer
    line = tree.parent(assign)
    block = tree.parent(line) if isinstance(line, cst.SimpleStatementLine) else None
    if block is None or not isinstance(getattr(block, "body", None), (list, tuple)):
        return False
    if any(isinstance(n, cst.Name) and n.value == LOOP_NAME for n in find_all(scope, cst.Name)) or not torch_imported:
        return False
    newline = planner.module.default_newline
    copy = statement(
        f"if torch.distributed.is_initialized():{newline}"
        f"    for {LOOP_NAME} in [*{target}.parameters(), *{target}.buffers()]:{newline}"
        f"        torch.distributed.broadcast({LOOP_NAME}.data, src=0)",
        planner.module,
    )
    planner.edits.add_statements(block, list(block.body).index(line), [copy], after=True)  # type: ignore[attr-defined]
    planner.remove_small(assign)
    planner.notes.append(
        f"{code(call.func)}(...) at line {tree.line(call)} wrapped {target}, which no optimizer steps: Accelerate "
        "wraps only what it prepares, so the wrap is gone, and what it did first, copying process 0's parameters "
        f"and buffers to every process, is done in its place (torch.distributed.broadcast, where a process group exists); DDP also copied the buffers "
        f"before each forward, which matters only where a forward of {target} changes them (batch norm in training "
        "mode)"
    )
    return True
