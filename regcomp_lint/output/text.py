"""Default human format: ``path:line:col: CODE message``, the source line and a caret under the span.

train.py:3:1: RC107 [warning] `suppress_errors = True` hides compiler failures ...
  |
3 | torch._dynamo.config.suppress_errors = True
  | ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  = help: Remove the line

Found 1 warning.
"""

from __future__ import annotations

import unicodedata

from regcomp_lint.diagnostics import Diagnostic, Severity
from regcomp_lint.output.render_context import RenderContext
from regcomp_lint.output.summary import summary_line

TAB_WIDTH = 4


def render(diagnostics: list[Diagnostic], ctx: RenderContext) -> str:
    blocks = [_finding(d, ctx) for d in diagnostics]
    blocks.append(summary_line(diagnostics, ctx) + "\n")
    return "\n".join(blocks)


#: Colour of a finding's code and severity tag, by severity.
SEVERITY_COLOR = {Severity.ERROR: "red", Severity.WARNING: "yellow", Severity.INFO: "blue"}


def header(diag: Diagnostic, ctx: RenderContext) -> str:
    """``path:line:col: CODE [severity]`` with styling, shared with the concise format."""
    path = ctx.style(ctx.display_path(diag.filename), "bold")
    where = f"{path}{ctx.style(':', 'cyan')}{diag.location.row}{ctx.style(':', 'cyan')}{diag.location.column}{ctx.style(':', 'cyan')}"
    color = SEVERITY_COLOR[diag.severity]
    return f"{where} {ctx.style(diag.code, 'bold', color)} {ctx.style(f'[{diag.severity.value}]', color)}"


def fix_marker(diag: Diagnostic, ctx: RenderContext) -> str:
    if ctx.fix_applies(diag):
        return ctx.style("(fixable)", "cyan")
    if ctx.hidden_unsafe(diag):
        return ctx.style("(fixable with --unsafe-fixes)", "cyan")
    return ""


def _finding(diag: Diagnostic, ctx: RenderContext) -> str:
    marker = fix_marker(diag, ctx)
    lines = [f"{header(diag, ctx)} {diag.message}{' ' + marker if marker else ''}"]
    source = ctx.source_line(diag.filename, diag.location.row)
    if source is not None:
        number = str(diag.location.row)
        gutter = " " * len(number)
        bar = ctx.style("|", "blue")
        start, width = caret_span(source, diag)
        lines.append(f"{gutter} {bar}")
        lines.append(f"{ctx.style(number, 'blue')} {bar} {printable(source).expandtabs(TAB_WIDTH)}".rstrip())
        lines.append(f"{gutter} {bar} {' ' * start}{ctx.style('^' * width, 'red')}")
        if diag.fix is not None and diag.fix.message:
            lines.append(f"{gutter} {ctx.style('=', 'blue')} help: {diag.fix.message}")
    return "\n".join(lines) + "\n"


def caret_span(line: str, diag: Diagnostic) -> tuple[int, int]:
    """(indent, width) in terminal cells of the caret under ``line`` for the finding's span.

    A span that goes on past this line is underlined to the end of the line; an empty span (an
    insertion point, a syntax error at end of line) still gets one caret.
    """
    begin = min(max(diag.location.column - 1, 0), len(line))
    if diag.end_location.row == diag.location.row:
        end = min(max(diag.end_location.column - 1, begin), len(line))
    else:
        end = len(line)
    indent = display_width(line[:begin].expandtabs(TAB_WIDTH))
    width = display_width(line[:end].expandtabs(TAB_WIDTH)) - indent
    return indent, max(width, 1)


def printable(text: str) -> str:
    """Control characters (other than tab) shown as U+FFFD so a file cannot drive the terminal."""
    return "".join("\ufffd" if (unicodedata.category(ch) == "Cc" and ch != "\t") else ch for ch in text)


def display_width(text: str) -> int:
    """Terminal cells ``text`` takes: wide East Asian characters 2, combining marks 0."""
    if text.isascii():
        return len(text)
    width = 0
    for ch in text:
        if unicodedata.combining(ch):
            continue
        width += 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1
    return width
