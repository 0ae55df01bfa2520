"""A progress bar that starts an iterator of the loader it wraps when it is built.

``tqdm.auto.tqdm(loader)`` is a ``tqdm.asyncio.tqdm_asyncio``, whose ``__init__`` calls
``iter(loader)``; the loop then iterates the bar, which calls ``iter(loader)`` again. On the
original's plain DataLoader the first iterator draws its base seed from torch's global generator;
the prepared loader's ``__iter__`` is a generator and draws nothing until the loop starts. So the
original draws once more per bar, and from the first batch on its shuffle order (and its later
dropout or augmentation draws) differ from the conversion's: gte_lora's replica on 1 process,
first losses 0.692805 vs 0.694106, identical with ``from tqdm import tqdm``. Drawing that seed by
hand in the conversion would hide what happens; the conversion says so instead, naming the line.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from regcomp_lint.codemod.tree import code, find_all, key_of
from regcomp_lint.knowledge.training_libraries import EAGER_ITERATING_BARS

if TYPE_CHECKING:
    from regcomp_lint.codemod.rewrites import Planner


def note_eager_iterators(planner: Planner, loaders: list[str]) -> None:
    """A note for each eager-iterating bar built over one of the ``loaders`` the conversion prepares."""
    tree = planner.tree
    for call in find_all(tree.module, cst.Call):
        if not call.args or call.args[0].keyword is not None or not tree.resolves_to(call.func, *EAGER_ITERATING_BARS):
            continue
        loader = key_of(call.args[0].value)
        if loader not in loaders:
            continue
        shown = f"{code(call.func).strip()}({loader}{', ...' if len(call.args) > 1 else ''})"
        planner.notes.append(
            f"{shown} at line {tree.line(call)} starts an iterator of the plain DataLoader when it is built "
            "(tqdm.asyncio calls iter() in its __init__), which draws a seed from torch's global generator; the "
            "prepared loader draws nothing there, so the converted script's shuffle order and later random draws "
            "(dropout, augmentation) differ from the original's from the first batch on; with `from tqdm import "
            "tqdm` the two draw alike"
        )
