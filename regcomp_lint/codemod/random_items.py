"""A dataset whose items are drawn at random, in a script that seeds its generators once.

Survey 25c miditok_gpt2: ``EPianoDataset.__getitem__`` takes a window at ``torch.randint`` and
ignores the index. With a seed (``torch.manual_seed(0)``), every process of a launch seeds alike;
the prepared loader gives each rank its own indices, but the loader's workers are seeded from the
generator the script seeded, so every rank draws the same windows (a 2-process replica: identical
windows on both ranks at 14 of 14 steps): N processes doing one's work. ``batch_seeds`` offsets
the seeds of hand-written batch sources by the process index; here the seed runs before the
Accelerator exists and the model's weights are drawn after it, so the conversion does not move it
and says what to do instead (one process draws what the original drew either way). Unseeded, each
process starts from its own entropy and draws its own windows: nothing to say.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from regcomp_lint.codemod.tree import code, find_all, method_named
from regcomp_lint.codemod.uneven_steps import seed_calls
from regcomp_lint.knowledge.torch_api import RANDOM_VALUES, SEEDS

if TYPE_CHECKING:
    from regcomp_lint.codemod.rewrites import Planner


def note_random_items(planner: Planner, loaders: list[str]) -> None:
    """A note for each class of the file built somewhere, whose ``__getitem__`` draws from a
    global generator, when the conversion prepares a loader and the script seeds."""
    tree = planner.tree
    seeds = [s for s in seed_calls(tree) if _seeds_a_global(planner, s)] if loaders else []
    if not seeds:
        return
    built = {c.func.value for c in find_all(tree.module, cst.Call) if isinstance(c.func, cst.Name)}
    for cls in find_all(tree.module, cst.ClassDef):
        getitem = method_named(cls, "__getitem__")
        if getitem is None or cls.name.value not in built:
            continue
        draw = next((c for c in find_all(getitem, cst.Call) if tree.resolves_to(c.func, *RANDOM_VALUES)), None)
        if draw is None:
            continue
        name = code(draw.func).strip()
        seed = seeds[0]
        planner.notes.append(
            f"{cls.name.value}.__getitem__ draws at random ({name} (line {tree.line(draw)})) from a generator the "
            f"script seeds alike in every process ({code(seed).strip()} (line {tree.line(seed)})): under several "
            "processes every rank draws the same random values (the loader's workers are seeded from it), so the "
            "ranks may train on the same samples; seed it with + accelerator.process_index by hand (Accelerate's "
            "set_seed(seed, device_specific=True)) where nothing that must match across processes is drawn after it"
        )


def _seeds_a_global(planner: Planner, call: cst.Call) -> bool:
    """``torch.manual_seed(0)``, ``set_seed(args.seed)``; not ``torch.Generator().manual_seed(0)``
    nor ``g.manual_seed(0)``, which seed a generator of their own."""
    return planner.tree.resolves_to(call.func, *SEEDS) or not (
        isinstance(call.func, cst.Attribute) and call.func.attr.value == "manual_seed"
    )
