"""A training loader whose batches are taken at once: ``batches = list(train_loader)``.

Survey 21f remind_ema takes one pass of its loader into a list and trains over that list every
epoch. ``list``, ``tuple`` and ``iter`` hand on the loader's batches
(``knowledge/training_libraries.ITERATION_BUILTINS``), so the loader is prepared as a training
loader. Where prepare() runs before the call, each process's list holds its own share of the
batches, in the prepared loader's order, taken once as in the original (measured on a replica:
the same batches, losses and weights as the original on 1 process; a disjoint half each on 2
processes, the same weights on both ranks). The prepared loader puts every batch on
``accelerator.device`` as it yields it, so that list is held on the device: said in a note.

A call that runs before the place prepare() goes (after the last object to prepare) takes the
whole, unsharded loader, and rebinding the loader's name later does not change what the list
holds: every process would train on all the data. That is refused, naming the call and its line.
"""

from __future__ import annotations

import libcst as cst

from regcomp_lint.codemod.settings import Refusal
from regcomp_lint.codemod.tree import Block, Tree, code, find_all
from regcomp_lint.knowledge.training_libraries import ITERATION_BUILTINS

#: The builtins that take the loader's batches when they are called (``enumerate`` only wraps it).
_TAKEN_AT_ONCE = tuple(f"builtins.{name}" for name in ITERATION_BUILTINS if name != "enumerate")


def listed_loader_notes(tree: Tree, block: Block, prepare_index: int, loaders: list[str]) -> list[str]:
    """Refuse when ``list``/``tuple``/``iter`` of a loader to prepare runs in ``block`` before
    ``prepare_index``; a note for each ``list``/``tuple`` of one after it."""
    notes: list[str] = []
    for index, stmt in enumerate(block.body):
        for call in find_all(stmt, cst.Call, enter_functions=False):
            key = _taken_loader(tree, call, loaders)
            if key is None:
                continue
            where = f"{code(call).strip()} at line {tree.line(call)}"
            if index < prepare_index:
                raise Refusal(
                    f"{where} takes the batches of {key} before prepare() (which goes after the last object to "
                    f"prepare, line {tree.line(block.body[prepare_index - 1])}): it would hold the whole, unsharded "
                    f"loader's batches, so every process would train on all the data; take them after the model, "
                    "optimizer and loaders are built, or convert by hand"
                )
            if not tree.resolves_to(call.func, "builtins.iter"):  # an iterator holds no batches
                notes.append(
                    f"{where} takes the batches of the prepared {key}: each process holds its own share, in the "
                    "prepared loader's order; prepare() places every batch on accelerator.device as it yields it, "
                    "so the share is held there"
                )
    return notes


def _taken_loader(tree: Tree, call: cst.Call, loaders: list[str]) -> str | None:
    """The loader ``call`` takes the batches of, when it is the whole value an assignment binds
    (``batches = list(loader)``, ``it = iter(loader)``): ``batch = next(iter(loader))``, a peek at
    one batch for its shapes (survey 21f pusht_state_dp), keeps nothing the training iterates."""
    if not call.args or not tree.resolves_to(call.func, *_TAKEN_AT_ONCE):
        return None
    bound = tree.parent(call)
    if not isinstance(bound, (cst.Assign, cst.AnnAssign)) or bound.value is not call:
        return None
    arg = call.args[0].value
    return arg.value if isinstance(arg, cst.Name) and arg.value in loaders else None
