"""Hand-written batch sources draw different batches in each process.

``accelerate launch`` splits only prepared ``DataLoader``s. A script whose training loop gets its
batches from its own ``get_batch()`` (random rows of a tensor, ``torch.randint``) and seeds its
generator once (``torch.manual_seed(1337)``) would draw the same batches in every process: N
processes doing one process's work. As nanoGPT does with its ``seed_offset``, each seed of the
generators those sources draw from gets ``+ accelerator.process_index``: one process draws
exactly what the original drew, several draw their own batches (the model's weights, drawn from
the seeded generator too, are made the same by ``prepare``, which broadcasts process 0's).

That is only done where it is exact: every such seed runs after the ``Accelerator`` is created,
in its block, and nothing else is drawn at random before training starts (a dataset drawn at
random would differ between processes). Otherwise the note names what stands in the way. Which
functions are batch sources, and what they draw, is the lint's answer
(:mod:`~regcomp_lint.analysis.batch_sources`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from regcomp_lint.analysis.batch_sources import SeedOffsets, seed_offsets
from regcomp_lint.codemod.builders import expression
from regcomp_lint.codemod.lint_view import LintView, lint_view
from regcomp_lint.codemod.tree import Block, Tree, code, find_all, is_main_guard
from regcomp_lint.codemod.uneven_steps import seed_calls, unseeded_draws
from regcomp_lint.knowledge import torch_api

if TYPE_CHECKING:
    from regcomp_lint.codemod.rewrites import Planner

NOT_SPLIT = (
    "no DataLoader feeds the training loop: its batches come from the script's own code, which accelerate launch "
    "does not split; "
)
#: Seed expressions that take ``+ x`` without parentheses.
_TIGHT = (cst.Name, cst.Attribute, cst.Integer, cst.Call, cst.Subscript)


def split_hand_written_batches(planner: Planner, block: Block, accelerator_at: int, backwards: list[cst.Call]) -> None:
    """Offset the seeds of the script's batch sources by the process index where that is exact
    (see the module docstring); say what each process draws either way."""
    tree = planner.tree
    view = lint_view(tree)
    offsets = seed_offsets(view.roles) if view.roles is not None else None
    if offsets is not None and offsets.seeds:  # unseeded: each process's generators start from their own entropy
        blocker = _blocker(planner, offsets, block, accelerator_at)
        if blocker is None:
            _offset(planner, offsets)
            return
        planner.notes.append(
            NOT_SPLIT + f"every process draws the same batches from {_drawn(view, offsets)}: {blocker}, so each seed "
            f"cannot take {planner.acc_key}.process_index (a per-process seed) exactly; add it by hand"
        )
        return
    draw = unseeded_draws(tree, backwards)
    held = _conditional_seed(tree) if draw is None else None
    if held is not None:
        seed, holder = held
        planner.notes.append(
            NOT_SPLIT + f"every rank draws the same batches only when {code(seed).strip()} (line {tree.line(seed)}, "
            f"under the if at line {tree.line(holder)}) runs: then each process computes the original's gradients, "
            "and N processes do one process's work; without it each process draws its own (torch's CPU generator, "
            "Python's and NumPy's start from their own entropy in every process), so the gradients are averaged "
            "over different batches and no run repeats another"
        )
        return
    planner.notes.append(
        NOT_SPLIT
        + (
            "under several processes every rank draws the same batches unless that code uses "
            "accelerator.process_index (a per-rank seed or offset)"
            if draw is None
            else f"the script draws at random without a seed ({draw}), so under several processes each "
            "rank draws different batches (gradients are averaged over them) and no run repeats another"
        )
    )


def _conditional_seed(tree: Tree) -> tuple[cst.Call, cst.If] | None:
    """The first seeding call and its ``if`` when every seeding call of the file runs under an
    ``if`` (``if args.seed is not None: torch.manual_seed(args.seed)``, survey 21e llama_mmqa):
    the batches are the same in every process on one path only."""
    held: list[tuple[cst.Call, cst.If]] = []
    for call in seed_calls(tree):
        holder = next((a for a in tree.ancestors(call) if isinstance(a, cst.If) and not is_main_guard(a)), None)
        if holder is None:
            return None
        held.append((call, holder))
    return held[0] if held else None


def _blocker(planner: Planner, offsets: SeedOffsets, block: Block, accelerator_at: int) -> str | None:
    """Why the seeds cannot take the process index, or None."""
    tree, view = planner.tree, lint_view(planner.tree)
    if offsets.values_before:
        first = offsets.values_before[0]
        return f"{view.text(first.func)}(...) at line {first.lineno} makes values at random before training"
    for call in _seed_calls(planner, offsets):
        index = planner.project(block, call)
        if index is None or index < accelerator_at:
            return f"{code(call.func)}(...) at line {tree.line(call)} runs before the Accelerator exists"
    return None


def _seed_calls(planner: Planner, offsets: SeedOffsets) -> list[cst.Call]:
    """The libcst calls that are ``offsets.seeds``."""
    tree, view = planner.tree, lint_view(planner.tree)
    wanted = {id(s) for s in offsets.seeds}
    return [
        call
        for call in find_all(tree.module, cst.Call)
        if tree.resolves_to(call.func, *torch_api.SEEDS) and id(view.expression_at(call)) in wanted
    ]


def _offset(planner: Planner, offsets: SeedOffsets) -> None:
    tree, acc = planner.tree, planner.acc_key
    calls = _seed_calls(planner, offsets)

    def add_index(updated: cst.Call) -> cst.Call:
        args = list(updated.args)
        at = next((i for i, a in enumerate(args) if a.keyword is None or a.keyword.value == "seed"), 0)
        seed = args[at].value
        if not isinstance(seed, _TIGHT) and not (
            isinstance(seed, cst.BinaryOperation) and isinstance(seed.operator, (cst.Add, cst.Subtract))
        ):
            seed = seed.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
        index = expression(f"{acc}.process_index", planner.module)
        args[at] = args[at].with_changes(value=cst.BinaryOperation(seed, cst.Add(), index))
        return updated.with_changes(args=args)

    for call in calls:
        planner.edits.on(call, add_index)
    seeds = ", ".join(f"{code(c.func)}(...) at line {tree.line(c)}" for c in calls)
    planner.notes.append(
        NOT_SPLIT + f"its seed now adds {acc}.process_index ({seeds}), so each process draws its own batches, as with "
        "nanoGPT's seed_offset (one process draws what the original drew; the model's weights are made the same by "
        "prepare())"
    )


def _drawn(view: LintView, offsets: SeedOffsets) -> str:
    return ", ".join(dict.fromkeys(f"{view.text(d.func)} (line {d.lineno})" for d in offsets.draws))
