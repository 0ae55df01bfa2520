"""Per-file state a rule reads while the engine walks: source, imports, ancestors, helpers, and
the file's semantic model (``ctx.semantic``: every per-file analysis, built once and shared)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from functools import cached_property
from typing import TYPE_CHECKING, TypeGuard

from regcomp_lint.analysis.name_resolution import ImportMap
from regcomp_lint.files.source import SourceFile

if TYPE_CHECKING:
    from regcomp_lint.analysis.semantic_model import SemanticModel


class FileContext:
    def __init__(self, source: SourceFile, tree: ast.Module) -> None:
        self.source = source
        self.tree = tree
        self.imports = ImportMap()
        #: Ancestors of the node being visited, outermost first (the node itself excluded).
        self.ancestors: list[ast.AST] = []
        #: answers that fixes derive from the whole module (the spelling of an import), kept so
        #: a rule asking at every call site does not rescan the module each time
        self.memo: dict[object, object] = {}

    @property
    def filename(self) -> str:
        return self.source.filename

    @cached_property
    def semantic(self) -> SemanticModel:
        """The file's analyses (bindings, Accelerate script, reachability...), built on first use."""
        from regcomp_lint.analysis.semantic_model import SemanticModel  # it builds on this module

        return SemanticModel(self)

    # -- names -----------------------------------------------------------------------------
    def qualname(self, node: ast.AST) -> str | None:
        return self.imports.qualname(node)

    def resolves_to(self, node: ast.AST, *qualnames: str) -> bool:
        return self.imports.resolves_to(node, *qualnames)

    # -- structure -------------------------------------------------------------------------
    def parent(self) -> ast.AST | None:
        return self.ancestors[-1] if self.ancestors else None

    def enclosing(self, *types: type) -> Iterator[ast.AST]:
        """Ancestors of the given types, innermost first."""
        for node in reversed(self.ancestors):
            if isinstance(node, types):
                yield node

    def statement_row(self, node: ast.AST) -> int:
        """First line of the statement containing ``node`` (for ``# regcomp: ignore`` above it)."""
        if isinstance(node, ast.stmt):
            return node.lineno
        for anc in reversed(self.ancestors):
            if isinstance(anc, ast.stmt):
                return anc.lineno
        return getattr(node, "lineno", 1)


# -- small ast helpers shared by rules ------------------------------------------------------


def keyword(call: ast.Call, name: str) -> ast.keyword | None:
    for kw in call.keywords:
        if kw.arg == name:
            return kw
    return None


def keyword_value(call: ast.Call, name: str) -> ast.expr | None:
    kw = keyword(call, name)
    return kw.value if kw else None


def method_receiver(call: ast.Call) -> ast.expr:
    """``obj`` of a method call ``obj.method(...)``, for a call a rule kept as one."""
    func = call.func
    assert isinstance(func, ast.Attribute), "not a method call"
    return func.value


def has_star_kwargs(call: ast.Call) -> bool:
    return any(kw.arg is None for kw in call.keywords)


def string_literal(node: ast.AST | None) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def is_true(node: ast.AST | None) -> TypeGuard[ast.Constant]:
    return isinstance(node, ast.Constant) and node.value is True


def is_none(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Constant) and node.value is None
