"""GitHub Actions workflow commands: one annotation per finding, ``::error``, ``::warning`` or
``::notice`` after its severity.

Escaping follows the runner's rules: in the message ``%``, ``\\r`` and ``\\n`` are
percent-encoded; in properties also ``:`` and ``,``.
"""

from __future__ import annotations

from regcomp_lint.diagnostics import Diagnostic
from regcomp_lint.output.render_context import RenderContext


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def render(diagnostics: list[Diagnostic], ctx: RenderContext) -> str:
    lines = []
    for diag in diagnostics:
        props = {
            "file": ctx.display_path(diag.filename),
            "line": diag.location.row,
            "col": diag.location.column,
            "endLine": diag.end_location.row,
            "endColumn": diag.end_location.column,
            "title": diag.code,
        }
        joined = ",".join(f"{key}={escape_property(str(value))}" for key, value in props.items())
        lines.append(f"::{diag.severity.github_command} {joined}::{escape_data(diag.message)}")
    return "".join(line + "\n" for line in lines)
