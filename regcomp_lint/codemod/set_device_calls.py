"""``torch.cuda.set_device(device)`` where ``device`` now holds the accelerator's device.

A device assignment the conversion rewrites (``device = 'cuda:0'`` -> ``accelerator.device.type``,
``torch.device('cuda:0')`` -> ``accelerator.device``) drops the GPU index: on one process
Accelerate's device is plain ``cuda``, the current GPU. ``torch.cuda.set_device`` needs an index
and raises ``ValueError: Expected a torch.device with a specified index`` on it, so a
single-GPU script that set its device from the same name (survey26d gpt2_distill, an llm.c-style
``train_gpt2.py`` run by ``fire``) would stop at start-up. The call has nothing left to do:
Accelerate makes each process's GPU the current one on several processes, and on one the
current GPU is the one the name now means; it is removed, with a note.

A ``set_device`` of any other value (``args.gpu``, ``0``) in the function that makes the
Accelerator pins one GPU of a script that had no rank of its own. Before the Accelerator it is
harmless (on several processes the Accelerator then makes each process's GPU current; on one its
``cuda`` device is the GPU the call picked) and stays. After it (survey26d: the Accelerator goes
before the first placement) it would make that GPU current on every rank, so ``device="cuda"``
tensors and the model (on ``cuda:1`` on rank 1) part: it runs under ``if
accelerator.num_processes == 1:``, which keeps a one-process run as it was (``--gpu 1`` still
picks GPU 1). torchrun/DDP scripts' ``set_device(local_rank)`` are not seen here: the
hand-distribution rewrite removes them (hand_distribution.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from regcomp_lint.codemod.builders import expression, guarded
from regcomp_lint.codemod.tree import Function, code, find_all, key_of
from regcomp_lint.knowledge.torch_api import CUDA_SET_DEVICE

if TYPE_CHECKING:
    from regcomp_lint.codemod.rewrites import Planner


def _set_device_statements(planner: Planner) -> list[tuple[cst.Call, cst.Expr]]:
    """Each ``torch.cuda.set_device(X)`` standing as a statement of its own, not removed."""
    tree = planner.tree
    found: list[tuple[cst.Call, cst.Expr]] = []
    if "set_device" not in tree.text:
        return found  # (no name can resolve to it: every spelling, an import's too, holds the word)
    for call in find_all(tree.module, cst.Call):
        if len(call.args) != 1 or call.args[0].keyword is not None or not tree.resolves_to(call.func, *CUDA_SET_DEVICE):
            continue
        statement = tree.parent(call)
        if isinstance(statement, cst.Expr) and not planner.is_removed(statement):
            found.append((call, statement))
    return found


def drop_set_device_of_rewritten(planner: Planner) -> None:
    """Remove each ``torch.cuda.set_device(X)`` statement whose ``X`` is a device name the
    conversion rewrote in the same function (or a ``self.`` attribute it rewrote anywhere),
    read after that assignment."""
    tree = planner.tree
    rewritten = [
        (assign, target, value)
        for assign, (target, value) in planner.device_values.items()
        if assign in planner.edits.replace
    ]
    if not rewritten:
        return
    for call, statement in _set_device_statements(planner):
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


def guard_fixed_set_device(planner: Planner, home: Function) -> None:
    """Put each ``torch.cuda.set_device(X)`` of ``home`` (where the Accelerator is made) that
    comes after the Accelerator, i.e. after the first statement there that reads it, under ``if
    accelerator.num_processes == 1:`` (run after :func:`drop_set_device_of_rewritten`)."""
    tree = planner.tree
    statements = [(c, s) for c, s in _set_device_statements(planner) if tree.function_of(c) is home]
    if not statements:
        return
    first_use = min((tree.line(use) for use in planner.uses if tree.function_of(use) is home), default=None)
    for call, statement in statements:
        line = tree.parent(statement)
        if first_use is None or tree.line(call) < first_use or not isinstance(line, cst.SimpleStatementLine):
            continue
        if len(line.body) != 1:
            continue
        acc = planner.accelerator_in(home)
        planner.edits.on(line, guarded(expression(f"{acc}.num_processes == 1", planner.module)))
        planner.uses.append(call)
        planner.notes.append(
            f"{code(call).strip()} at line {tree.line(call)} runs on one process only (under `if {acc}.num_processes "
            "== 1:`): after the Accelerator it would make that GPU current on every process, so `cuda` tensors and "
            "the model, on each process's own GPU, would part"
        )
