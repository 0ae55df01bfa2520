"""Metrics a script sums or gathers across ranks (``dist.all_reduce``, ``all_gather``,
``reduce``...), each tied to the data loader whose loop it summarises.

This is what decides, once a script is converted, whether its evaluation can be sharded: an
evaluation loop whose metric is reduced across ranks computes the whole-set metric from one shard
per rank (prepare the loader and keep the reduction, or use ``gather_for_metrics``); one
without a reduction must see the whole loader in every process.

A collective is tied to the loader of the loop that holds it; else to the loop in which the
value it reduces was accumulated (``correct += ...`` inside ``for x, y in val_loader:``); else to
the last loop over a loader that ran before it in the same function
(``stats = torch.tensor([correct, total])`` after the loop). A loader is what the training
roles say it is (:mod:`~regcomp_lint.analysis.training_roles`), followed into the functions it
is passed to; it *evaluates* when no training loop iterates it.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

from regcomp_lint.analysis.bindings import Where
from regcomp_lint.analysis.file_context import FileContext
from regcomp_lint.analysis.training_objects import Kind
from regcomp_lint.files.parsing import walk
from regcomp_lint.knowledge.torch_api import COLLECTIVES, DISTRIBUTED_MODULES

if TYPE_CHECKING:
    from regcomp_lint.analysis.training_roles import Origin, TrainingRoles


@dataclass(frozen=True)
class Reduction:
    """One collective call; ``value``: the local value it reduces or gathers; ``loops``: the
    loops of its function around it, innermost first."""

    call: ast.Call
    collective: str
    value: ast.expr | None
    where: Where
    loops: tuple[ast.AST, ...]


@dataclass(frozen=True)
class MetricReduction:
    """A reduction and the loader whose loop it summarises."""

    reduction: Reduction
    loader: Origin
    evaluates: bool


@dataclass(frozen=True)
class _LoaderLoop:
    loop: ast.AST
    function: object
    loader: Origin


class MetricReductions:
    """The collectives of one file (see the module docstring)."""

    def __init__(self, ctx: FileContext) -> None:
        self.ctx = ctx
        self.reductions: list[Reduction] = []

    def visit_call(self, node: ast.Call, where: Where, loops: tuple[ast.AST, ...]) -> None:
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
        if name not in COLLECTIVES or not self.ctx.resolves_to(func, *(f"{m}.{name}" for m in DISTRIBUTED_MODULES)):
            return
        position = COLLECTIVES[name]
        value = node.args[position] if len(node.args) > position else None
        if isinstance(value, ast.Starred):
            value = None
        self.reductions.append(Reduction(node, name, value, where, loops))

    def tied(self, roles: TrainingRoles) -> list[MetricReduction]:
        """Each reduction tied to a loader (the others are left out)."""
        loops = self._loader_loops(roles)
        found: list[MetricReduction] = []
        for reduction in self.reductions:
            loop = self._summarised(reduction, loops, roles)
            if loop is not None:
                found.append(MetricReduction(reduction, loop.loader, not roles.is_training_loader(loop.loader)))
        return found

    def of_loader(self, roles: TrainingRoles, loader: Origin) -> list[Reduction]:
        """The reductions that summarise the loop over the loader built at ``loader``."""
        return [m.reduction for m in self.tied(roles) if m.loader.call is loader.call]

    def _loader_loops(self, roles: TrainingRoles) -> list[_LoaderLoop]:
        found: list[_LoaderLoop] = []
        for use in roles.uses:
            if use.how != "iterated" or not use.loops:
                continue
            origin = roles.passed_origin(use.expr, use.where)
            # an Origin (the roles import this module, so it is known by its kind, not its class)
            if getattr(origin, "kind", None) is Kind.DATALOADER:
                found.append(_LoaderLoop(use.loops[0], use.where.function, cast("Origin", origin)))
        return found

    def _summarised(self, reduction: Reduction, loops: list[_LoaderLoop], roles: TrainingRoles) -> _LoaderLoop | None:
        for loop in reduction.loops:  # inside the loop
            held = next((entry for entry in loops if entry.loop is loop), None)
            if held is not None:
                return held
        here = [entry for entry in loops if entry.function is reduction.where.function]
        if reduction.value is not None:  # its value accumulated in the loop
            for name in walk(reduction.value):
                if not isinstance(name, ast.Name):
                    continue
                for bound in roles.bindings.every_binding(name, reduction.where):
                    held = next((entry for entry in here if _inside(bound.where.pos, entry.loop)), None)
                    if held is not None:
                        return held
        before = [entry for entry in here if _end(entry.loop) <= reduction.where.pos]
        return max(before, key=lambda entry: _end(entry.loop)) if before else None


def _inside(pos: tuple[int, int], node: ast.AST) -> bool:
    start = (getattr(node, "lineno", 0), getattr(node, "col_offset", 0))
    return start <= pos <= _end(node)


def _end(node: ast.AST) -> tuple[int, int]:
    return (getattr(node, "end_lineno", None) or 0, getattr(node, "end_col_offset", None) or 0)
