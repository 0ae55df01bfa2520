"""``torch.cuda.set_device(device)`` where ``device`` now holds the accelerator's device.

A device assignment the conversion rewrites (``device = 'cuda:0'`` -> ``accelerator.device.type``,
``torch.device('cuda:0')`` -> ``accelerator.device``) drops the GPU index: on one process
Accelerate's device is plain ``cuda``, the current GPU. ``torch.cuda.set_device`` needs an index
and raises ``ValueError: Expected a torch.device with a specified index`` on it, so a
single-GPU script that set its device from the same name (survey26d gpt2_distill, an llm.c-style
``train_gpt2.py`` run by ``fire``) would stop at start-up. The call has nothing left to do:
Accelerate makes each process's GPU the current one on several processes, and on one the
current GPU is the one the name now means; it is removed, with a note. A ``set_device`` of any
other value (``args.gpu``, ``0``) reads nothing the conversion changed and stays.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from regcomp_lint.codemod.tree import code, find_all, key_of
from regcomp_lint.knowledge.torch_api import CUDA_SET_DEVICE

if TYPE_CHECKING:
    from regcomp_lint.codemod.rewrites import Planner


def drop_set_device_of_rewritten(planner: Planner) -> None:
    """Remove each ``torch.cuda.set_device(X)`` statement whose ``X`` is a device name the
    conversion rewrote in the same function (or a ``self.`` attribute it rewrote anywhere),
    read after that assignment."""
    tree = planner.tree
    if "set_device" not in tree.text:
        return  # (no name can resolve to it: every spelling, an import's too, holds the word)
    rewritten = [
        (assign, target, value)
        for assign, (target, value) in planner.device_values.items()
        if assign in planner.edits.replace
    ]
    if not rewritten:
        return
    for call in find_all(tree.module, cst.Call):
        if len(call.args) != 1 or call.args[0].keyword is not None or not tree.resolves_to(call.func, *CUDA_SET_DEVICE):
            continue
        statement = tree.parent(call)
        if not isinstance(statement, cst.Expr) or planner.is_removed(statement):
            continue
        key = key_of(call.args[0].value)
        where = tree.function_of(call)
        match = next(
            (
                (target, value)
                for assign, target, value in rewritten
                if target == key
                and tree.line(assign) < tree.line(call)
                and (target.startswith("self.") or tree.function_of(assign) is where)
            ),
            None,
        )
        if match is None:
            continue
        planner.remove_small(statement)
        planner.notes.append(
            f"{code(call).strip()} at line {tree.line(call)} removed: {match[0]} is now {match[1]}, which has no GPU "
            "index on one process (set_device would raise ValueError); Accelerate makes each process's GPU the "
            "current one"
        )
