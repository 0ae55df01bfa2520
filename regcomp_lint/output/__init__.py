"""Output formats: one module per format, each with ``render(diagnostics, ctx) -> str``.

The registry maps a format name to its module, imported only when chosen, so the common path
(``text``) loads nothing it does not use.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence

from regcomp_lint.diagnostics import Diagnostic
from regcomp_lint.output.render_context import RenderContext

FORMATS: dict[str, str] = {
    "text": "regcomp_lint.output.text",
    "concise": "regcomp_lint.output.concise",
    "json": "regcomp_lint.output.json",
    "sarif": "regcomp_lint.output.sarif",
    "github": "regcomp_lint.output.github",
}

#: Formats meant for people; they carry the summary line and colour.
HUMAN_FORMATS = frozenset({"text", "concise"})


def render(fmt: str, diagnostics: Sequence[Diagnostic], ctx: RenderContext | None = None) -> str:
    """The whole output of format ``fmt`` for ``diagnostics`` (already sorted by the caller)."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown output format {fmt!r}; choose one of {', '.join(FORMATS)}")
    module = importlib.import_module(FORMATS[fmt])
    return module.render(list(diagnostics), ctx or RenderContext())


__all__ = ["FORMATS", "HUMAN_FORMATS", "RenderContext", "render"]
