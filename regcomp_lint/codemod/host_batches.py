"""Loaders whose batches the training loop turns into NumPy arrays: prepared without placement.

A prepared DataLoader hands each batch over on ``accelerator.device``. A script that reads its
batches on the host first -- ``for (batch,) in loader: x = batch.numpy()``, augments them in
NumPy, then ``torch.tensor(x).to(device)`` (a SimCLR pre-training script of survey 19b) -- would
call ``.numpy()`` on a CUDA tensor, which raises. Such a loader is prepared with
``device_placement=False``: still sharded across processes, its batches stay on the CPU as in
the original, and the script moves them itself as before. ``batch.cpu().numpy()`` is left alone:
it works wherever the batch is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from regcomp_lint.codemod.tree import find_all, key_of
from regcomp_lint.knowledge.training_libraries import LOOP_PASS_THROUGH

if TYPE_CHECKING:
    from regcomp_lint.codemod.plain import PlainPlanner


def host_batch_loaders(planner: PlainPlanner, keys: list[str]) -> set[str]:
    """The loaders among ``keys`` a loop of the file iterates and calls ``.numpy()`` directly on
    a batch of (or an element of one), with a note for each."""
    found: set[str] = set()
    for loop in find_all(planner.tree.module, cst.For):
        key = _iterated_key(loop.iter)
        if key is None or key not in keys or key in found:
            continue
        call = _numpy_of_batch(loop)
        if call is None:
            continue
        found.add(key)
        planner.notes.append(
            f"{key}'s batches are turned into NumPy arrays at line {planner.tree.line(call)} before the script moves "
            "them itself: prepared with device_placement False (still one shard per process), so they stay on the "
            "CPU as in the original (a placed batch would be on the GPU, where .numpy() raises)"
        )
    return found


def _iterated_key(it: cst.BaseExpression) -> str | None:
    while isinstance(it, cst.Call) and it.args and key_of(it.func) in LOOP_PASS_THROUGH:
        it = it.args[0].value
    return key_of(it) if isinstance(it, (cst.Name, cst.Attribute)) else None


def _numpy_of_batch(loop: cst.For) -> cst.Call | None:
    """The first ``b.numpy()`` / ``b[0].numpy()`` in the loop's body, ``b`` a name its header binds."""
    bound = {n.value for n in find_all(loop.target, cst.Name)}
    for call in find_all(loop.body, cst.Call):
        func = call.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "numpy"):
            continue
        value = func.value
        while isinstance(value, (cst.Subscript, cst.Attribute)):
            value = value.value
        if isinstance(value, cst.Name) and value.value in bound:
            return call
    return None
