"""One line per finding: ``path:line:col: CODE [severity] [*] message``; ``[*]`` marks a fix ``--fix``
would apply, and a fix that needs ``--unsafe-fixes`` is named at the end of the line."""

from __future__ import annotations

from regcomp_lint.diagnostics import Diagnostic
from regcomp_lint.output.render_context import RenderContext
from regcomp_lint.output.summary import summary_line
from regcomp_lint.output.text import fix_marker, header


def render(diagnostics: list[Diagnostic], ctx: RenderContext) -> str:
    lines = []
    for diag in diagnostics:
        marker = ctx.style("[*]", "cyan") + " " if ctx.fix_applies(diag) else ""
        unsafe = " " + fix_marker(diag, ctx) if not ctx.fix_applies(diag) and ctx.hidden_unsafe(diag) else ""
        lines.append(f"{header(diag, ctx)} {marker}{diag.message}{unsafe}")
    lines.append(summary_line(diagnostics, ctx))
    return "\n".join(lines) + "\n"
