"""New code the conversion writes: statements in the file's own newline/indent style, and
keyword-argument edits that keep the call's existing layout (one argument per line stays so)."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

import libcst as cst

from regcomp_lint.codemod.tree import code, conversions_ended

MAX_LINE = 100


def statement(source: str, module: cst.Module) -> cst.BaseStatement:
    """Parse one statement with the module's newline and indentation settings."""
    return _template("statement", source + module.default_newline, module)


def expression(source: str, module: cst.Module) -> cst.BaseExpression:
    return _template("expression", source, module)


#: parsed templates by (kind, source, parser settings): the node, and the conversion it was
#: last handed to (:func:`~regcomp_lint.codemod.tree.conversions_ended`)
_TEMPLATES: dict[tuple[str, str, str, str, str], tuple[cst.CSTNode, int]] = {}
#: the most templates kept (each script adds a few of its own names; a folder of them shares most)
_MAX_TEMPLATES = 2048


def _template(kind: str, source: str, module: cst.Module):
    """The template parsed, from the parse an earlier conversion made of the same text (a
    template's parse is a tenth of a millisecond or more; the scripts of a folder share most of
    theirs: ``accelerator.backward``, ``dynamo_plugin = TorchDynamoPlugin(...)``; 79 distinct
    of 297 on the fixture scripts). libcst's nodes cannot change, so one can stand in two
    converted files; within one conversion each use still gets a node of its own (the edits
    and the placing of imports tell nodes apart by identity)."""
    key = (kind, source, module.encoding, module.default_indent, module.default_newline)
    now = conversions_ended()
    kept = _TEMPLATES.get(key)
    if kept is not None and kept[1] != now:
        _TEMPLATES[key] = (kept[0], now)
        return kept[0]
    config = _config(module)
    node = (
        cst.parse_statement(source, config=config)
        if kind == "statement"
        else cst.parse_expression(source, config=config)
    )
    if kept is None:
        if len(_TEMPLATES) >= _MAX_TEMPLATES:
            _TEMPLATES.clear()
        _TEMPLATES[key] = (node, now)
    return node


def _config(module: cst.Module) -> cst.PartialParserConfig:
    """``module.config_for_parsing``, made once per setting: libcst makes a new one on every ask,
    parsing its version strings each time (a tenth of a template's parse)."""
    return _config_for(module.encoding, module.default_indent, module.default_newline)


@cache
def _config_for(encoding: str, default_indent: str, default_newline: str) -> cst.PartialParserConfig:
    return cst.PartialParserConfig(encoding=encoding, default_indent=default_indent, default_newline=default_newline)


def call_statement(prefix: str, func: str, args: list[str], module: cst.Module, indent: str) -> cst.BaseStatement:
    """``prefix func(args)`` on one line, or with the arguments on their own line(s) when the
    line would pass ``MAX_LINE`` at ``indent``. Continuation lines are written relative to the
    statement: libcst adds the block's indentation when the statement is placed."""
    one_line = f"{prefix}{func}({', '.join(args)})"
    if len(indent) + len(one_line) <= MAX_LINE or not args:
        return statement(one_line, module)
    nl, unit = module.default_newline, module.default_indent
    joined = ", ".join(args)
    if len(indent) + len(unit) + len(joined) <= MAX_LINE:
        body = f"{nl}{unit}{joined}{nl}"
    else:
        body = nl + "".join(f"{unit}{arg},{nl}" for arg in args)
    return statement(f"{prefix}{func}({body})", module)


# -- keyword arguments ------------------------------------------------------------------------


def keyword(call: cst.Call, name: str) -> cst.Arg | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg
    return None


def _separator(args: list[cst.Arg]) -> cst.BaseParenthesizableWhitespace:
    """The whitespace between two arguments of this call (a newline + indent when it has one
    argument per line), without any comment it carried, so the comment is not copied."""
    if len(args) > 1 and isinstance(args[-2].comma, cst.Comma):
        after = args[-2].comma.whitespace_after
        if isinstance(after, cst.ParenthesizedWhitespace):
            return after.with_changes(first_line=cst.TrailingWhitespace(), empty_lines=[])
        return after
    return cst.SimpleWhitespace(" ")


def with_keyword(call: cst.Call, name: str, value: cst.BaseExpression) -> cst.Call:
    """Set ``name=value`` on a call: replace the value in place, or append it in the call's
    style. A comment after the last argument stays on that argument's line."""
    args = list(call.args)
    for i, arg in enumerate(args):
        if arg.keyword is not None and arg.keyword.value == name:
            args[i] = arg.with_changes(value=value)
            return call.with_changes(args=args)
    new = cst.Arg(
        value=value, keyword=cst.Name(name), equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace(""))
    )
    if not args:
        return call.with_changes(args=[new])
    if any(a.star == "**" for a in args):
        return _insert_before_double_star(call, new)
    last = args[-1]
    trailing_comma = last.comma if isinstance(last.comma, cst.Comma) else None
    gap = trailing_comma.whitespace_after if trailing_comma is not None else last.whitespace_after_arg
    separator = _separator(args)
    between: cst.BaseParenthesizableWhitespace
    closing: cst.BaseParenthesizableWhitespace
    if isinstance(gap, cst.ParenthesizedWhitespace):
        # `last,  # comment` NEWLINE `)`: keep the comment after `last`, put `new` on the next line
        if isinstance(separator, cst.ParenthesizedWhitespace):
            line_after_last = separator.last_line
        elif isinstance(call.whitespace_before_args, cst.ParenthesizedWhitespace):
            # `(` NEWLINE `a=1, b=2` NEWLINE `)`: the new argument goes on a line indented as the others
            line_after_last = call.whitespace_before_args.last_line
        else:
            line_after_last = gap.last_line
        between = gap.with_changes(empty_lines=[], last_line=line_after_last)
        closing = gap.with_changes(first_line=cst.TrailingWhitespace(newline=gap.first_line.newline))
    else:
        between, closing = separator, gap
    new_last = last.with_changes(
        comma=cst.Comma(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=between),
        whitespace_after_arg=cst.SimpleWhitespace(""),
    )
    if trailing_comma is not None:
        new = new.with_changes(
            comma=cst.Comma(whitespace_before=trailing_comma.whitespace_before, whitespace_after=closing)
        )
    else:
        new = new.with_changes(whitespace_after_arg=closing)
    return call.with_changes(args=[*args[:-1], new_last, new])


def _insert_before_double_star(call: cst.Call, new: cst.Arg) -> cst.Call:
    args = list(call.args)
    star_index = next(i for i, a in enumerate(args) if a.star == "**")
    new = new.with_changes(
        comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")), whitespace_after_arg=cst.SimpleWhitespace("")
    )
    return call.with_changes(args=[*args[:star_index], new, *args[star_index:]])


def rename_keyword(call: cst.Call, old: str, new_name: str, value: cst.BaseExpression) -> cst.Call:
    """Turn ``old=...`` into ``new_name=value`` where it stands (its comma and comment stay)."""
    args = [
        arg.with_changes(keyword=cst.Name(new_name), value=value)
        if arg.keyword is not None and arg.keyword.value == old
        else arg
        for arg in call.args
    ]
    return call.with_changes(args=args)


def literal(value: object) -> str:
    """Python source for a plugin setting given as data (options, plan)."""
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return repr(value)


def parenthesized(node: cst.BaseExpression) -> str:
    """Source of an expression safe to use as an operand of ``if``/``and``."""
    text = code(node)
    if isinstance(node, (cst.IfExp, cst.Lambda, cst.BooleanOperation, cst.NamedExpr)) or "\n" in text or "\r" in text:
        return f"({text})"
    return text


def guarded(test: cst.BaseExpression) -> Callable[[cst.CSTNode], cst.CSTNode]:
    """An edit that puts a statement (a line, or a compound one such as a ``with`` block) under
    ``if <test>:``, keeping its blank lines and comments above the ``if``."""

    def guard(updated: cst.CSTNode) -> cst.CSTNode:
        assert isinstance(updated, (cst.SimpleStatementLine, cst.BaseCompoundStatement))
        return cst.If(
            test=test,
            body=cst.IndentedBlock(body=[updated.with_changes(leading_lines=[])]),
            leading_lines=updated.leading_lines,
        )

    return guard
