"""A JSON array shaped like ruff's ``--output-format json`` so existing tooling can read it."""

from __future__ import annotations

import json

from regcomp_lint.diagnostics import Diagnostic
from regcomp_lint.output.render_context import RenderContext


def render(diagnostics: list[Diagnostic], ctx: RenderContext) -> str:
    return json.dumps([d.to_json() for d in diagnostics], indent=2, ensure_ascii=False) + "\n"
