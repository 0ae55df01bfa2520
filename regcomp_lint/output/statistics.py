"""``--statistics``: how often each rule fired, instead of the findings themselves.

Each row says how many findings ``--fix`` would fix and how many more ``--unsafe-fixes`` would,
so fixability is visible without first trying the flag.
"""

from __future__ import annotations

import json
from collections import Counter

from regcomp_lint.diagnostics import Diagnostic
from regcomp_lint.output.render_context import RenderContext
from regcomp_lint.output.summary import severity_counts


def rows(diagnostics: list[Diagnostic], ctx: RenderContext) -> list[dict]:
    """One row per code, most frequent first, then by code."""
    counts = Counter(d.code for d in diagnostics)
    fixable = Counter(d.code for d in diagnostics if ctx.fix_applies(d))
    unsafe = Counter(d.code for d in diagnostics if not ctx.fix_applies(d) and ctx.hidden_unsafe(d))
    names = {d.code: d.name for d in diagnostics}
    severities = {d.code: d.severity.value for d in diagnostics}
    ordered = sorted(counts, key=lambda code: (-counts[code], code))
    return [
        {
            "code": code,
            "name": names[code],
            "severity": severities[code],
            "count": counts[code],
            "fixable": fixable[code],
            "unsafe_fixable": unsafe[code],
        }
        for code in ordered
    ]


def render(diagnostics: list[Diagnostic], ctx: RenderContext, as_json: bool = False) -> str:
    table = rows(diagnostics, ctx)
    if as_json:
        return json.dumps(table, indent=2) + "\n"
    if not table:
        return "All checks passed!\n"
    count_w = max(len("count"), *(len(str(r["count"])) for r in table))
    code_w = max(len("code"), *(len(r["code"]) for r in table))
    name_w = max(len("name"), *(len(r["name"]) for r in table))
    sev_w = max(len("severity"), *(len(r["severity"]) for r in table))
    show_unsafe = any(r["unsafe_fixable"] for r in table)
    unsafe_head = "  with --unsafe-fixes" if show_unsafe else ""
    lines = [
        f"{'count':>{count_w}}  {'code':<{code_w}}  {'name':<{name_w}}  {'severity':<{sev_w}}  fixable{unsafe_head}"
    ]
    for r in table:
        unsafe_cell = f"  {r['unsafe_fixable']:>20}" if show_unsafe else ""
        code = ctx.style(r["code"], "bold") + " " * (code_w - len(r["code"]))
        lines.append(
            f"{r['count']:>{count_w}}  {code}  {r['name']:<{name_w}}  {r['severity']:<{sev_w}}  {r['fixable']:>7}{unsafe_cell}"
        )
    total = sum(r["count"] for r in table)
    unsafe_total = f"  {sum(r['unsafe_fixable'] for r in table):>20}" if show_unsafe else ""
    lines.append(
        f"{total:>{count_w}}  {'total':<{code_w}}  {'':<{name_w}}  {'':<{sev_w}}  {sum(r['fixable'] for r in table):>7}{unsafe_total}"
    )
    lines.append(f"({severity_counts(diagnostics)})")
    return "\n".join(line.rstrip() for line in lines) + "\n"
