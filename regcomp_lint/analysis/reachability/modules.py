"""Parsed files: one file's top-level definitions and imports, and the local modules of the
project it imports, found by name and parsed lazily, once per run (by path, mtime and size)."""

from __future__ import annotations

import ast
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import lru_cache

from regcomp_lint.analysis import dependencies
from regcomp_lint.analysis.name_resolution import ImportMap
from regcomp_lint.files import reading

FUNCTION_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)
MAX_PARENT_DIRS = 6


@dataclass(eq=False)
class ParsedModule:
    """One Python file's top-level definitions and imports."""

    path: str | None
    tree: ast.Module
    imports: ImportMap
    classes: dict[str, ast.ClassDef]
    functions: dict[str, ast.FunctionDef | ast.AsyncFunctionDef]
    #: ``name = value`` at the top level (the last one wins): ``logger = logging.getLogger(...)``.
    assignments: dict[str, ast.expr] = field(default_factory=dict)

    def __repr__(self) -> str:
        return f"ParsedModule({self.path!r})"

    @classmethod
    def from_tree(cls, tree: ast.Module, path: str | None, imports: ImportMap | None = None) -> ParsedModule:
        classes: dict[str, ast.ClassDef] = {}
        functions: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}
        assignments: dict[str, ast.expr] = {}
        own_imports = imports is None
        imports = imports or ImportMap()
        for stmt in top_level_statements(tree.body):
            if isinstance(stmt, ast.ClassDef):
                classes[stmt.name] = stmt
            elif isinstance(stmt, FUNCTION_DEFS):
                functions[stmt.name] = stmt
            elif isinstance(stmt, ast.Assign):
                for target in stmt.targets:
                    if isinstance(target, ast.Name):
                        assignments[target.id] = stmt.value
            elif own_imports and isinstance(stmt, (ast.Import, ast.ImportFrom)):
                imports.add(stmt)
        return cls(path, tree, imports, classes, functions, assignments)


#: ``try`` statements; ``ast.TryStar`` (``except*``, Python 3.11+) has the fields of ``ast.Try``.
TRY_TYPES: tuple[type[ast.Try], ...] = tuple(getattr(ast, name) for name in ("Try", "TryStar") if hasattr(ast, name))


def top_level_statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Top-level statements, looking inside ``if``/``try``/``with`` blocks (guarded definitions)."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, ast.If):
            yield from top_level_statements(stmt.body)
            yield from top_level_statements(stmt.orelse)
        elif isinstance(stmt, TRY_TYPES):
            yield from top_level_statements(stmt.body)
            for handler in stmt.handlers:
                yield from top_level_statements(handler.body)
            yield from top_level_statements(stmt.orelse)
            yield from top_level_statements(stmt.finalbody)
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            yield from top_level_statements(stmt.body)


#: Bumped whenever a module object that memos may hold stops being the one :func:`load_module`
#: returns for its path (the cache evicts a module, or a file is parsed again): what is kept
#: per process about other files' functions (their callees) is then recomputed.
_generation = 0
_parsed_paths: set[str] = set()


@lru_cache(maxsize=256)
def _load(path: str, mtime_ns: int, size: int) -> ParsedModule | None:
    global _generation
    info = _load.cache_info()
    if path in _parsed_paths or info.currsize >= (info.maxsize or 0) > 0:
        _generation += 1
    _parsed_paths.add(path)
    try:
        tree = ast.parse(reading.read_bytes(path), filename=path)  # never blocks on a pipe
    except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    return ParsedModule.from_tree(tree, path)


def _stamp(path: str) -> tuple[int, int] | None:
    """What :func:`load_module` keys a parsed file on (None: unreadable)."""
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return stat.st_mtime_ns, stat.st_size


def load_module(path: str) -> ParsedModule | None:
    """Parse a local module once per run (cached by path, mtime and size); None if unreadable."""
    dependencies.record(path)
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return _load(path, stat.st_mtime_ns, stat.st_size)


def module_file(importer: str | None, dotted: str, memo: Lookups | None = None) -> str | None:
    """The ``.py`` file a module name refers to, seen from file ``importer``.

    ``dotted`` is as :class:`ImportMap` records it: ``.layers`` / ``..pkg.mod`` for relative
    imports, ``pkg.mod`` for absolute ones (looked for in the importer's folder and up to
    ``MAX_PARENT_DIRS`` folders above it: the project's own packages, never site-packages).

    ``memo``: what one question over many files keeps (see :class:`Lookups`); the answers are
    the same as without it.
    """
    if not importer or importer.startswith("<") or importer == "-":
        return None
    return module_in_folder(os.path.dirname(os.path.abspath(importer)), dotted, memo)


def module_in_folder(folder: str, dotted: str, memo: Lookups | None = None) -> str | None:
    """:func:`module_file` for an importer in ``folder`` (an absolute, normalised path)."""
    level = len(dotted) - len(dotted.lstrip("."))
    parts = [p for p in dotted[level:].split(".") if p]
    if level:
        for _ in range(level - 1):
            folder = os.path.dirname(folder)
        return _module_in(folder, parts) if memo is None else memo.module_in(folder, parts)
    if not parts or "site-packages" in folder:
        return None
    if memo is not None:
        first = parts[0]
        for where in memo.parents(folder):
            if memo.may_hold(where, first):
                found = memo.module_in(where, parts)
                if found:
                    return found
        return None
    for _ in range(MAX_PARENT_DIRS):
        found = _module_in(folder, parts)
        if found:
            return found
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    return None


def _module_in(folder: str, parts: list[str]) -> str | None:
    base = os.path.join(folder, *parts)
    for candidate in (base + ".py", os.path.join(base, "__init__.py")):
        if os.path.isfile(candidate):
            return candidate
    return None


class Lookups:
    """:func:`module_file`'s memo for one question over many files: the scope question resolves
    a hundred thousand imports of a large library, most of them the same names looked for in
    the same folders. Each folder's chain of parents, each look-up's answer, and whether a
    folder holds anything named like a name's first part (``torch`` is looked for in every
    parent of every folder; where no ``torch.py`` or ``torch/`` is, no ``torch.nn`` is either)
    are asked of the file system once."""

    def __init__(self) -> None:
        self._parents: dict[str, tuple[str, ...]] = {}
        self._found: dict[tuple[str, ...], str | None] = {}
        self._firsts: dict[tuple[str, str], bool] = {}
        self._dirs: dict[str, bool] = {}

    def parents(self, folder: str) -> tuple[str, ...]:
        """``folder`` and the folders above it that :func:`module_file` looks in."""
        chain = self._parents.get(folder)
        if chain is None:
            found = []
            where = folder
            for _ in range(MAX_PARENT_DIRS):
                found.append(where)
                parent = os.path.dirname(where)
                if parent == where:
                    break
                where = parent
            chain = self._parents[folder] = tuple(found)
        return chain

    def may_hold(self, folder: str, first: str) -> bool:
        """False when neither ``first.py`` nor a folder ``first`` is in ``folder``: no module
        whose name starts with ``first`` can be found there."""
        key = (folder, first)
        known = self._firsts.get(key)
        if known is None:
            base = os.path.join(folder, first)
            known = self._firsts[key] = os.path.isdir(base) or os.path.isfile(base + ".py")
        return known

    def module_in(self, folder: str, parts: list[str]) -> str | None:
        key = (folder, *parts)
        try:
            return self._found[key]
        except KeyError:
            pass
        if len(parts) > 1 and not self._is_dir(os.path.join(folder, *parts[:-1])):
            # ``from .ops import scale`` asks for ``ops/scale.py``: with no folder ``ops``, both
            # candidates are missing, and the folder is asked about once for all its names
            found = None
        else:
            found = _module_in(folder, parts)
        self._found[key] = found
        return found

    def _is_dir(self, path: str) -> bool:
        known = self._dirs.get(path)
        if known is None:
            known = self._dirs[path] = os.path.isdir(path)
        return known


def same_file(a: str | None, b: str | None) -> bool:
    return a is not None and b is not None and os.path.abspath(a) == os.path.abspath(b)


def is_third_party(dotted: str) -> bool:
    root = dotted.split(".")[0]
    return root in (
        "torch",
        "transformers",
        "accelerate",
        "numpy",
        "typing",
        "os",
        "sys",
        "math",
        "functools",
        "collections",
        "dataclasses",
        "einops",
        "diffusers",
        "lightning",
        "pytorch_lightning",
        "timm",
    )
