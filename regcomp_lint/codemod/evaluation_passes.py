"""A loop outside training over a training loader the conversion prepares.

``prepare()`` shards the training loader, so every pass over it covers one process's share. A
script that measures on it again -- bert fine-tuning tutorials' "evaluate" loop over the
training ``dataloader``, a CNN tutorial's training-accuracy pass under ``torch.no_grad()`` --
then reports, and plots, numbers from one shard that change with the number of processes.
Training itself is unaffected, so the conversion goes on and says so, with the loop's line,
unless the loop's values are already reduced across processes, or the loop yields its batches
(an ``infinite(loader)`` generator feeding the training loop measures nothing).
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from regcomp_lint.analysis.bindings import binding_key
from regcomp_lint.analysis.training_objects import Kind

if TYPE_CHECKING:
    from regcomp_lint.analysis.training_roles import Origin
    from regcomp_lint.codemod.lint_view import LintView

#: Calls in the loop that already combine its values across processes.
_COMBINING = ("gather_for_metrics", "gather", "reduce", "all_reduce", "all_gather", "gather_object")


def evaluation_passes_note(view: LintView, prepared: dict[str, Origin | None], accelerator: str) -> list[str]:
    """One note per loop outside training over a prepared training loader (see the module
    docstring). ``prepared``: key -> where it is built (None for a loader of a factory the
    analysis cannot read, ``train_loader, val_loader = create_dataloaders()``: known by its name)."""
    roles = view.roles
    if roles is None or not prepared:
        return []
    notes: list[str] = []
    seen: set[int] = set()
    loops = roles.script.training_loops
    for use in roles.uses:
        # the loop over the loader itself must not train (an epoch loop around it may)
        if use.how != "iterated" or not use.loops or id(use.loops[0]) in seen or loops.loop_trains(use.loops[0]):
            continue
        origin = roles.passed_origin(use.expr, use.where)
        if getattr(origin, "kind", None) is Kind.DATALOADER:
            key = next((k for k, o in prepared.items() if o is not None and o.call is origin.call), None)  # type: ignore[union-attr]
        else:
            key = (
                binding_key(use.expr)
                if origin is None and prepared.get(binding_key(use.expr) or "", 0) is None
                else None
            )
        loop = use.loops[0]
        if key is None or _combines(loop) or _hands_on(loop):
            continue
        if origin is not None and roles.metric_reductions.of_loader(roles, origin):  # type: ignore[arg-type]
            continue
        seen.add(id(loop))
        notes.append(
            f"{key} is prepared for training, so the loop over it at line {getattr(loop, 'lineno', 0)}, which does not train, sees "
            "only this process's share of the batches: what it measures (an accuracy, a loss) covers that share; "
            f"combine it with {accelerator}.gather_for_metrics(...) to report the whole set"
        )
    return notes


def _hands_on(loop: ast.AST) -> bool:
    """The loop yields (``def infinite(loader): while True: for batch in loader: yield batch``):
    a batch source whose consumer decides what the batches are for; it measures nothing itself."""
    stack = list(ast.iter_child_nodes(loop))
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Yield, ast.YieldFrom)):
            return True
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            stack.extend(ast.iter_child_nodes(node))
    return False


def _combines(loop: ast.AST) -> bool:
    return any(
        isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _COMBINING
        for node in ast.walk(loop)
    )
