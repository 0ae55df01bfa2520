"""New code the conversion writes: statements in the file's own newline/indent style, and
keyword-argument edits that keep the call's existing layout (one argument per line stays so)."""

from __future__ import annotations

import libcst as cst

from regcomp_lint.codemod.tree import code

MAX_LINE = 100


def statement(source: str, module: cst.Module) -> cst.BaseStatement:
    """Parse one statement with the module's newline and indentation settings."""
    return cst.parse_statement(source + module.default_newline, config=module.config_for_parsing)


def expression(source: str, module: cst.Module) -> cst.BaseExpression:
    return cst.parse_expression(source, config=module.config_for_parsing)


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


def _plain_separator(comma: cst.Comma | cst.MaybeSentinel) -> cst.Comma:
    """The comma between two arguments, without any comment it carried (so it is not copied)."""
    if not isinstance(comma, cst.Comma):
        return cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    after = comma.whitespace_after
    if isinstance(after, cst.ParenthesizedWhitespace):
        after = after.with_changes(first_line=cst.TrailingWhitespace(), empty_lines=[])
    return comma.with_changes(whitespace_after=after)


def with_keyword(call: cst.Call, name: str, value: cst.BaseExpression) -> cst.Call:
    """Set ``name=value`` on a call: replace the value in place, or append it in the call's style."""
    args = list(call.args)
    for i, arg in enumerate(args):
        if arg.keyword is not None and arg.keyword.value == name:
            args[i] = arg.with_changes(value=value)
            return call.with_changes(args=args)
    new = cst.Arg(value=value, keyword=cst.Name(name), equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")))
    if not args:
        return call.with_changes(args=[new])
    last = args[-1]
    separator = _plain_separator(args[-2].comma) if len(args) > 1 else cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    if isinstance(last.comma, cst.Comma):  # trailing comma: the new argument inherits it
        new = new.with_changes(comma=last.comma)
        last = last.with_changes(comma=separator)
    else:
        new = new.with_changes(whitespace_after_arg=last.whitespace_after_arg)
        last = last.with_changes(comma=separator, whitespace_after_arg=cst.SimpleWhitespace(""))
    if last.star == "**":  # keywords must come before **kwargs: insert ahead of it instead
        return _insert_before_double_star(call, new)
    return call.with_changes(args=[*args[:-1], last, new])


def _insert_before_double_star(call: cst.Call, new: cst.Arg) -> cst.Call:
    args = list(call.args)
    star_index = next(i for i, a in enumerate(args) if a.star == "**")
    new = new.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")), whitespace_after_arg=cst.SimpleWhitespace(""))
    return call.with_changes(args=[*args[:star_index], new, *args[star_index:]])


def rename_keyword(call: cst.Call, old: str, new_name: str, value: cst.BaseExpression) -> cst.Call:
    """Turn ``old=...`` into ``new_name=value`` where it stands (its comma and comment stay)."""
    args = [
        arg.with_changes(keyword=cst.Name(new_name), value=value) if arg.keyword is not None and arg.keyword.value == old else arg
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
