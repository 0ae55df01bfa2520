"""Fix pieces shared by the Accelerate rules: how the file spells an accelerate name (adding the
import when it has none), and rewriting ``Accelerator(dynamo_backend=X)`` as a plugin."""

from __future__ import annotations

import ast

from regcomp_lint.analysis.file_context import FileContext
from regcomp_lint.checks.text_edits import add_import
from regcomp_lint.diagnostics import Edit, Location
from regcomp_lint.knowledge.accelerate_api import DYNAMO_PLUGIN, UTILS_MODULE


def local_name(ctx: FileContext, qualnames: tuple[str, ...], module: str, name: str) -> tuple[str, Edit | None] | None:
    """How code at module level can spell ``name``: an existing ``from ... import`` of any of
    ``qualnames`` (with its alias), a star import, or ``name`` plus the import edit adding it.
    None when ``name`` is already bound to something else (the fix would shadow it)."""
    # the answer depends on the module's top level and the imports the walk has seen so far
    key = ("local_name", qualnames, module, name, ctx.imports.version)
    if key not in ctx.memo:
        ctx.memo[key] = _local_name(ctx, qualnames, module, name)
    return ctx.memo[key]  # type: ignore[return-value]


def _local_name(ctx: FileContext, qualnames: tuple[str, ...], module: str, name: str) -> tuple[str, Edit | None] | None:
    top = _top_level(ctx)
    spellings = [top.imported_from[q] for q in qualnames if q in top.imported_from]
    if spellings:
        return min(spellings)[1], None  # the first such import of the module
    if any(q.rsplit(".", 1)[0] in ctx.imports.star_modules and q.rsplit(".", 1)[1] == name for q in qualnames):
        return name, None
    if ctx.imports.imported(name) or name in top.defined:
        return None
    return name, add_import(ctx, module, name)


class _TopLevel:
    """What the module's top-level statements import and define, read once per file."""

    def __init__(self, tree: ast.Module) -> None:
        #: ``module.name`` of each ``from module import name [as alias]`` -> (its order, local spelling)
        self.imported_from: dict[str, tuple[int, str]] = {}
        #: names a top-level def, class or plain assignment binds
        self.defined: set[str] = set()
        for stmt in tree.body:
            if isinstance(stmt, ast.ImportFrom) and not stmt.level and stmt.module:
                for alias in stmt.names:
                    self.imported_from.setdefault(
                        f"{stmt.module}.{alias.name}", (len(self.imported_from), alias.asname or alias.name)
                    )
            elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self.defined.add(stmt.name)
            elif isinstance(stmt, ast.Assign):
                self.defined.update(t.id for t in stmt.targets if isinstance(t, ast.Name))


def _top_level(ctx: FileContext) -> _TopLevel:
    top = ctx.memo.get("top_level")
    if not isinstance(top, _TopLevel):
        top = ctx.memo["top_level"] = _TopLevel(ctx.tree)
    return top


def plugin_name(ctx: FileContext) -> tuple[str, Edit | None] | None:
    return local_name(ctx, DYNAMO_PLUGIN, UTILS_MODULE, "TorchDynamoPlugin")


def backend_keyword_to_plugin(ctx: FileContext, kw: ast.keyword, extra: str = "") -> list[Edit] | None:
    """Edits turning ``dynamo_backend=X`` into ``dynamo_plugin=TorchDynamoPlugin(backend=X<extra>)``,
    keeping ``X``'s source text as it is (comments, parentheses, line breaks); None when the
    plugin's name cannot be spelled without shadowing something."""
    spelled = plugin_name(ctx)
    if spelled is None:
        return None
    name, import_edit = spelled
    src = ctx.source
    start = src.start(kw)
    head = src.text_between(start, src.start(kw.value))
    equals = head.find("=")
    if equals < 0 or "\n" in head[:equals] or "\r" in head[:equals]:
        return None
    skip = equals + 1
    while skip < len(head) and head[skip] in " \t":
        skip += 1
    edits = [
        Edit(f"dynamo_plugin={name}(backend=", start, Location(start.row, start.column + skip)),
        Edit(f"{extra})", src.end(kw), src.end(kw)),
    ]
    if import_edit is not None:
        edits.append(import_edit)
    return edits
