"""Which assignments of a script build an optimizer, and from which model(s).

Not decided here: each ``key = value`` creation is asked of the lint's roles
(:mod:`~regcomp_lint.analysis.optimizer_sources`, through ``lint_view``), which RC402 reads too:
library optimizers, the script's ``torch.optim.Optimizer`` subclasses, local and library
factories, ``model.configure_optimizers()``, and calls fed parameters whose result the script
uses as an optimizer. This module only pairs the answers with the converter's libcst statements.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

import libcst as cst

from regcomp_lint.analysis.optimizer_sources import OptimizerSource
from regcomp_lint.codemod.lint_view import lint_view
from regcomp_lint.codemod.roles import Creation, creations
from regcomp_lint.codemod.tree import Function, Tree, code


@dataclass
class FoundOptimizer:
    key: str
    stmt: cst.Assign
    models: list[str]  # empty when the optimizer's parameters cannot be traced to a model
    construct: str  # what builds it, for notes and refusals


def find_optimizers(tree: Tree, function: Function) -> list[FoundOptimizer]:
    """Every ``key = <optimizer>`` assignment in ``function`` (not in nested defs), in source order."""
    found = []
    for creation in creations(function):
        source = _source(tree, creation)
        if source is not None:
            found.append(FoundOptimizer(creation.key, creation.stmt, source.owners, source.construct))
    return found


def not_optimizers(tree: Tree, function: Function) -> list[tuple[str, int]]:
    """Assignments fed model parameters that are not used as optimizers (for refusal reasons)."""
    view = lint_view(tree)
    found = []
    for creation in creations(function):
        call = _call_of(tree, creation)
        if call is None or view.roles is None or _source(tree, creation) is not None:
            continue
        if view.roles.optimizers.fed_parameters(call, view.where(call)):
            found.append((code(creation.stmt).strip(), tree.line(creation.stmt)))
    return found


def _source(tree: Tree, creation: Creation) -> OptimizerSource | None:
    view = lint_view(tree)
    call = _call_of(tree, creation)
    if call is None or view.roles is None:
        return None
    optimizers, where = view.roles.optimizers, view.where(call)
    source = optimizers.source(call, where)
    if source is not None:
        return source
    owners = optimizers.fed_parameters(call, where)
    if owners and optimizers.used_as_optimizer(call):
        return OptimizerSource(owners, view.text(call.func))
    return None


def _call_of(tree: Tree, creation: Creation) -> ast.Call | None:
    expr = lint_view(tree).expression_at(creation.value)
    return expr if isinstance(expr, ast.Call) else None
