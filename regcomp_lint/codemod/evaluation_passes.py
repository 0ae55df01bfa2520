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
from regcomp_lint.analysis.training_loops import own_nodes
from regcomp_lint.analysis.training_objects import Kind
from regcomp_lint.files.parsing import children, walk
from regcomp_lint.knowledge.torch_api import BATCHNORM_UPDATES

if TYPE_CHECKING:
    from regcomp_lint.analysis.bindings import Where
    from regcomp_lint.analysis.training_roles import Origin, TrainingRoles
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
                if origin is None
                and prepared.get(binding_key(use.expr) or "", 0) is None
                and not _bound_anew(roles, use.expr, use.where)
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
    return notes + _batchnorm_updates_note(view, prepared)


def _batchnorm_updates_note(view: LintView, prepared: dict[str, Origin | None]) -> list[str]:
    """``torch.optim.swa_utils.update_bn(train_loader, swa_model)`` over a prepared training
    loader: each process recomputes the BatchNorm statistics over its own shard, so the SWA
    model the main process saves carries statistics of part of the data."""
    roles = view.roles
    if roles is None or view.parsed is None:
        return []
    notes: list[str] = []
    for node in walk(view.parsed):  # (ast.walk's order)
        if not isinstance(node, ast.Call) or not roles.ctx.resolves_to(node.func, *BATCHNORM_UPDATES):
            continue
        loader = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "loader"), None)
        model = node.args[1] if len(node.args) > 1 else next((k.value for k in node.keywords if k.arg == "model"), None)
        key = binding_key(loader) if loader is not None else None
        if key is None or key not in prepared:
            continue
        where = roles.call_where(node)
        if where is None:
            continue
        origin = roles.passed_origin(loader, where)  # type: ignore[arg-type]
        built = prepared[key]
        if built is not None and not (isinstance(origin, type(built)) and origin.call is built.call):
            continue  # another object under the same name
        whose = f"{view.text(model)}'s" if model is not None else "the model's"
        notes.append(
            f"update_bn() at line {node.lineno} recomputes {whose} BatchNorm statistics over {key}, which is "
            "prepared for training: each process averages over its own share of the batches only, and the main "
            "process saves its share's statistics; hand it a DataLoader over the same dataset that is not prepared "
            "to average over the whole set, as the original does"
        )
    return notes


def _bound_anew(roles: TrainingRoles, expr: ast.expr, where: Where) -> bool:
    """The name the loop iterates is bound, where the loop runs, to another value than every
    training loop sees under it: ``train_dataloader = DataLoader(...)`` built again after training
    (a loader known only by its name must be matched by its binding too, not the name alone)."""
    bound = roles.bindings.lookup(expr, where)
    if bound is None or bound.value is None:
        return False
    key = binding_key(expr)
    trained = [roles.bindings.lookup(e, w) for e, w in roles.training_iterables() if binding_key(e) == key]
    return bool(trained) and all(t is None or t.value is not bound.value for t in trained)


def _hands_on(loop: ast.AST) -> bool:
    """The loop yields (``def infinite(loader): while True: for batch in loader: yield batch``):
    a batch source whose consumer decides what the batches are for; it measures nothing itself."""
    return any(isinstance(node, (ast.Yield, ast.YieldFrom)) for node in own_nodes(children(loop)))


def _combines(loop: ast.AST) -> bool:
    return any(
        isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _COMBINING
        for node in ast.walk(loop)
    )
