"""Text edits that several fixes need, computed from ``ast`` positions."""

from __future__ import annotations

import ast
import re

from regcomp_lint.analysis.file_context import FileContext
from regcomp_lint.diagnostics import Edit, Location


def has_import(ctx: FileContext, module: str, name: str) -> bool:
    """True when ``name`` is already bound to ``module.name`` anywhere at module level."""
    for stmt in ctx.tree.body:
        if isinstance(stmt, ast.ImportFrom) and stmt.module == module and not stmt.level:
            if any(a.name == name and (a.asname in (None, name)) for a in stmt.names):
                return True
    return False


def add_import(ctx: FileContext, module: str, name: str) -> Edit | None:
    """Edit inserting ``from module import name`` after the last top-level import (after the
    docstring and ``__future__`` imports when there is no other import); None if present."""
    if has_import(ctx, module, name):
        return None
    body = ctx.tree.body
    anchor: ast.stmt | None = None
    for stmt in body:
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            anchor = stmt
        elif (
            anchor is None
            and isinstance(stmt, ast.Expr)
            and isinstance(stmt.value, ast.Constant)
            and isinstance(stmt.value.value, str)
            and stmt is body[0]
        ):
            anchor = stmt  # module docstring
        elif anchor is not None:
            break
    nl = ctx.source.newline
    line = f"from {module} import {name}"
    if anchor is None:
        return Edit(line + nl, Location(1, 1), Location(1, 1))
    row = anchor.end_lineno or anchor.lineno
    if row < len(ctx.source.lines):
        return Edit(line + nl, Location(row + 1, 1), Location(row + 1, 1))
    end = Location(row, len(ctx.source.line(row)) + 1)
    ending = "" if ctx.source.lines[row - 1].endswith(("\n", "\r")) else nl
    return Edit(ending + line + (nl if ending == "" else ""), end, end)


def keyword_span_with_comma(ctx: FileContext, call: ast.Call, kw: ast.keyword) -> tuple[Location, Location]:
    """Span that removes ``kw`` from ``call``'s arguments together with one adjoining comma."""
    src = ctx.source
    args: list[ast.expr | ast.keyword] = [*call.args, *call.keywords]
    args.sort(key=lambda n: (n.lineno, n.col_offset))
    i = args.index(kw)
    if i > 0:
        return src.end(args[i - 1]), src.end(kw)
    if len(args) > 1:
        return src.start(kw), src.start(args[1])
    return src.start(kw), src.end(kw)


_STRING_LITERAL = re.compile(r"(?s)([rRuU]?)('''|\"\"\"|'|\")(.*)\2")


def replace_string_literal(ctx: FileContext, node: ast.expr, value: str) -> Edit | None:
    """Edit replacing one plain string literal with ``value``, keeping its prefix and quotes.

    None when the node is not a single literal we can rewrite faithfully (implicit
    concatenation, escapes in the new value, bytes/f-strings).
    """
    if not isinstance(node, ast.Constant) or not isinstance(node.value, str):
        return None
    match = _STRING_LITERAL.fullmatch(ctx.source.segment(node))
    if match is None:
        return None
    prefix, quote, _ = match.groups()
    if "\\" in value or "\n" in value or quote[0] in value:
        return None
    new = f"{prefix}{quote}{value}{quote}"
    try:
        if ast.literal_eval(ctx.source.segment(node)) != node.value or ast.literal_eval(new) != value:
            return None
    except (SyntaxError, ValueError):
        return None
    return ctx.source.replace(node, new)


def append_keyword(ctx: FileContext, call: ast.Call, text: str) -> list[Edit]:
    """Edits adding the argument ``text`` (``name=value``) after ``call``'s last argument,
    following the call's layout: one argument per line (with or without a trailing comma) or
    all on one line."""
    src = ctx.source
    end = src.end(call)
    close = Location(end.row, end.column - 1)  # the closing parenthesis
    arguments: list[ast.expr | ast.keyword] = [*call.args, *call.keywords]
    args = sorted(arguments, key=lambda n: (n.lineno, n.col_offset))
    if not args:
        return [Edit(text, close, close)]
    last = args[-1]
    last_end = src.end(last)
    trailing_comma = src.text_between(last_end, close).lstrip().startswith(",")
    paren_alone = last_end.row < close.row and not src.line(close.row)[: close.column - 1].strip()
    if not paren_alone:
        return [Edit(", " + text, last_end, last_end)]
    line = src.line(last.lineno)
    indent = line[: len(line) - len(line.lstrip())]
    edits = [] if trailing_comma else [Edit(",", last_end, last_end)]
    start_of_paren_line = Location(close.row, 1)
    edits.append(
        Edit(f"{indent}{text}{',' if trailing_comma else ''}{src.newline}", start_of_paren_line, start_of_paren_line)
    )
    return edits
