"""Does a model have repeated blocks, so regional compilation pays off? RC501's answer.

The conversion does not decide this itself: it asks the lint's view of the script
(:mod:`~regcomp_lint.codemod.lint_view`) for the expression a libcst node stands for and
:class:`~regcomp_lint.analysis.models.ModelFinder` (the code RC501 asks) about it. So
``use_regional_compilation=True`` is written exactly where the lint reports a whole-model
compile of a model with repeated blocks.
"""

from __future__ import annotations

import ast

import libcst as cst

from regcomp_lint.analysis.models import RepeatedBlocks
from regcomp_lint.codemod.lint_view import lint_view
from regcomp_lint.codemod.tree import Tree
from regcomp_lint.knowledge.model_classes import FACTORY_METHODS


def repeated_blocks(tree: Tree, creation: cst.BaseExpression) -> str | None:
    """Why the model ``creation`` builds has repeated blocks (the note the conversion prints), or None."""
    view = lint_view(tree)
    expr = view.expression_at(creation)
    if expr is None or view.model_finder is None:
        return None
    found = view.model_finder.model_of(expr, view.where(expr))
    return _reason(found, expr) if found is not None else None


def _reason(found: RepeatedBlocks, expr: ast.AST) -> str:
    if found.origin == "transformers":
        func = expr.func if isinstance(expr, ast.Call) else None
        if isinstance(func, ast.Attribute) and func.attr in FACTORY_METHODS:
            return f"{found.model}.{func.attr}() builds a transformers model (a stack of identical blocks)"
        return f"{found.model} is a transformers model (a stack of identical blocks)"
    if found.block is None:  # [copy.deepcopy(layer) for _ in range(n)]
        return f"{found.model}.__init__ builds an nn.ModuleList of copies of one block"
    return f"{found.model}.__init__ builds an nn.ModuleList of repeated {found.block} blocks"
