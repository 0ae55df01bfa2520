"""``--statistics``: how often each rule fired, instead of the findings themselves."""

from __future__ import annotations

import json
from collections import Counter

from regcomp_lint.diagnostics import Diagnostic
from regcomp_lint.output.render_context import RenderContext


def rows(diagnostics: list[Diagnostic], ctx: RenderContext) -> list[dict]:
    """One row per code, most frequent first, then by code."""
    counts = Counter(d.code for d in diagnostics)
    fixable = Counter(d.code for d in diagnostics if ctx.fix_applies(d))
    names = {d.code: d.name for d in diagnostics}
    ordered = sorted(counts, key=lambda code: (-counts[code], code))
    return [{"code": code, "name": names[code], "count": counts[code], "fixable": fixable[code]} for code in ordered]


def render(diagnostics: list[Diagnostic], ctx: RenderContext, as_json: bool = False) -> str:
    table = rows(diagnostics, ctx)
    if as_json:
        return json.dumps(table, indent=2) + "\n"
    if not table:
        return "All checks passed!\n"
    count_w = max(len("count"), *(len(str(r["count"])) for r in table))
    code_w = max(len("code"), *(len(r["code"]) for r in table))
    name_w = max(len("name"), *(len(r["name"]) for r in table))
    lines = [f"{'count':>{count_w}}  {'code':<{code_w}}  {'name':<{name_w}}  fixable"]
    for r in table:
        lines.append(
            f"{r['count']:>{count_w}}  {ctx.style(r['code'], 'bold', 'red') + ' ' * (code_w - len(r['code']))}  {r['name']:<{name_w}}  {r['fixable']:>7}"
        )
    total = sum(r["count"] for r in table)
    lines.append(f"{total:>{count_w}}  {'total':<{code_w}}  {'':<{name_w}}  {sum(r['fixable'] for r in table):>7}")
    return "\n".join(line.rstrip() for line in lines) + "\n"
