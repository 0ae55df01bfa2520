"""Resolve what a name or attribute chain refers to through the file's imports.

``import torch as T`` makes ``T.compile`` mean ``torch.compile``; ``from torch import compile as
tc`` makes ``tc`` mean ``torch.compile``; ``import torch._dynamo as dynamo`` makes
``dynamo.config.suppress_errors`` mean ``torch._dynamo.config.suppress_errors``. This is the
cheap ``ast`` counterpart of libcst's ``QualifiedNameProvider`` (too slow for every file of a
large tree): imports are recorded in source order as the engine walks, at any scope.
"""

from __future__ import annotations

import ast
import weakref
from functools import lru_cache

from regcomp_lint.files.parsing import walk


class ImportMap:
    def __init__(self) -> None:
        self._aliases: dict[str, str] = {}
        self.star_modules: list[str] = []
        #: how many imports were added: answers derived from the map stay valid while it is unchanged
        self.version = 0

    def add(self, node: ast.Import | ast.ImportFrom) -> None:
        self.version += 1
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    self._aliases[alias.asname] = alias.name
                else:
                    root = alias.name.split(".")[0]
                    self._aliases[root] = root
            return
        if node.level:  # relative import: a local module, never torch/accelerate
            module = "." * node.level + (node.module or "")
        else:
            module = node.module or ""
        for alias in node.names:
            if alias.name == "*":
                self.star_modules.append(module)
                continue
            # ``from . import util`` is ``.util``, ``from .ops import f`` is ``.ops.f``
            self._aliases[alias.asname or alias.name] = f"{module}{'' if module.endswith('.') else '.'}{alias.name}"

    def imported(self, local: str) -> bool:
        return local in self._aliases

    def qualname(self, node: ast.AST) -> str | None:
        """Dotted qualified name of a Name/Attribute chain, or None for anything else.

        A chain whose root was not imported keeps its spelling (``model.compile``); use
        :meth:`resolves_to` when the root must be an import.
        """
        parts: list[str] = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return None
        root = self._aliases.get(node.id, node.id)
        parts.append(root)
        return ".".join(reversed(parts))

    def root_is_import(self, node: ast.AST) -> bool:
        while isinstance(node, ast.Attribute):
            node = node.value
        return isinstance(node, ast.Name) and node.id in self._aliases

    def last_part(self, node: ast.AST) -> str | None:
        """What :meth:`resolves_to` needs some qualname to end with for ``node`` to resolve to
        it: an attribute's own name, a name's as imported (``compile`` for ``tc`` of ``from
        torch import compile as tc``); None for anything else (it resolves to nothing)."""
        if isinstance(node, ast.Attribute):
            return node.attr
        if isinstance(node, ast.Name):
            return self._aliases.get(node.id, node.id).rpartition(".")[2]
        return None

    def resolves_to(self, node: ast.AST, *qualnames: str) -> bool:
        """True when ``node`` names one of ``qualnames`` through an import (or a star import
        of the qualname's module)."""
        # Cheap exit for most nodes: the name's last part must be some qualname's last part
        # (an attribute's own name; a name's, as imported: ``tc`` for ``torch.compile``).
        last = self.last_part(node)
        if last is None or last not in _last_parts(qualnames):
            return False
        name = self.qualname(node)
        if name is None:
            return False
        if name in qualnames and self.root_is_import(node):
            return True
        if isinstance(node, ast.Name) and not self.imported(node.id):
            return any(q.rsplit(".", 1)[0] in self.star_modules and q.rsplit(".", 1)[-1] == node.id for q in qualnames)
        return False


_MODULE_IMPORTS: weakref.WeakKeyDictionary[ast.Module, ImportMap] = weakref.WeakKeyDictionary()


def module_imports(module: ast.Module) -> ImportMap:
    """Every import of ``module``, at any scope, in one map (built once per parsed module): for
    an analysis that reads a few names of a file outside the engine's walk. Do not add to it."""
    found = _MODULE_IMPORTS.get(module)
    if found is None:
        found = _MODULE_IMPORTS[module] = ImportMap()
        for node in walk(module):  # (listed once per parse: the analyses walk the module again and again)
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                found.add(node)
    return found


@lru_cache(maxsize=1024)
def _last_parts(qualnames: tuple[str, ...]) -> frozenset[str]:
    return frozenset(q.rpartition(".")[2] for q in qualnames)


def last_parts(*groups: tuple[str, ...]) -> frozenset[str]:
    """The last parts of every qualname of ``groups``: a node whose :meth:`ImportMap.last_part`
    is not among them resolves to none of them (one set look-up instead of a ``resolves_to``
    per group, for the analyses that ask each call of the file about many groups)."""
    return frozenset(q.rpartition(".")[2] for group in groups for q in group)
