"""The sections of the HTML report beyond the module tree, from the JSON report: so the page a
person opens says everything the terminal does (the recommendation with how to apply it, the
plan, every graph break with its line and torch's hint, the recompiles, and the ``--measure``
table with a chart).

Counts are named for what they count: a graph-break *site* is one line of code; it has one
*occurrence* per module instance that runs it (``.item()`` in 12 identical blocks is 1 site,
12 occurrences). The text report and this page both lead with sites.
"""

from __future__ import annotations

import html
import json
from typing import Any

#: the bar colours of the timing chart (cold start, steady step)
_COLD, _STEADY = "#3949ab", "#2e7d32"

CSS = """
.sect p { margin: 4px 0; }
.plugin { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; background: #f3f4f6;
  padding: 6px 10px; border-radius: 6px; display: block; margin: 6px 0; white-space: pre-wrap; }
.why li { margin: 2px 0; }
.break { border-left: 3px solid var(--bad); padding: 4px 10px; margin: 8px 0; }
.break .where { font-weight: 600; }
pre.excerpt { background: #f9fafb; border: 1px solid var(--line); padding: 4px 8px; margin: 4px 0; overflow-x: auto; }
.hint { color: var(--warn); }
pre.plan { background: #f9fafb; border: 1px solid var(--line); padding: 8px; white-space: pre-wrap; }
svg.chart text { font: 12px system-ui, sans-serif; fill: #374151; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
"""


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def sections(report: dict) -> list[str]:
    """The HTML of every report section, in the text report's order, then the measurement."""
    out: list[str] = []
    out += _breaks(report.get("graph_breaks") or [])
    out += _recompiles(report)
    out += _recommendation(report.get("recommendation"), report.get("plan"))
    if report.get("measure"):
        out += _measured(report["measure"])
    notes = report.get("notes") or []
    if notes:
        out.append('<h2 id="notes">Notes</h2><div class="card sect"><ul>')
        out += [f"<li>{_e(n)}</li>" for n in notes]
        out.append("</ul></div>")
    return out


def break_counts(report: dict) -> tuple[int, int]:
    """``(sites, occurrences)``: lines of code that break, and module instances that ran them."""
    breaks = report.get("graph_breaks") or []
    return len(breaks), sum(max(1, len(b.get("regions") or [])) for b in breaks)


def _breaks(breaks: list[dict]) -> list[str]:
    sites, occurrences = break_counts({"graph_breaks": breaks})
    out = [
        f'<h2 id="breaks">Graph breaks: {sites} {"site" if sites == 1 else "sites"}'
        f"{f' ({occurrences} occurrences in module instances)' if occurrences != sites else ''}</h2>",
        '<div class="card sect">',
    ]
    if not breaks:
        out.append("<p>none: dynamo traced the sample batch without a graph break</p>")
    for b in breaks:
        code = f" [{_e(b['code'])}]" if b.get("code") else ""
        out.append('<div class="break">')
        out.append(
            f'<div class="where"><code>{_e(b.get("region"))}</code>: '
            f"<code>{_e(b.get('file'))}:{_e(b.get('line'))}</code> in <code>{_e(b.get('function'))}</code>: "
            f"{_e(b.get('gb_id') or 'graph break')} {_e(b.get('reason') or '')}{code}</div>"
        )
        if b.get("source"):
            out.append(f'<pre class="excerpt">{_e(b.get("line"))} | {_e(b["source"])}</pre>')
        for hint in (b.get("hints") or [])[:1]:
            out.append(f'<div class="hint">hint: {_e(hint)}</div>')
        if b.get("placed_by") == "code":
            out.append('<div class="note">placed by code: every instance of the class that holds this line</div>')
        out.append("</div>")
    out.append("</div>")
    return out


def _recompiles(report: dict) -> list[str]:
    recompiles = report.get("recompiles") or []
    out = [f'<h2 id="recompiles">Recompiles: {len(recompiles)}</h2>', '<div class="card sect">']
    if not recompiles and not report.get("recompile_limit_hit"):
        out.append(f"<p>none (second batch: {_e(report.get('second_batch') or 'not probed')})</p>")
    else:
        out.append("<table><thead><tr><th>region</th><th>kind</th><th>reason</th><th>where</th></tr></thead><tbody>")
        for r in recompiles:
            where = f"{r['file']}:{r['line']}" if r.get("file") else ""
            hint = f'<br><span class="hint">hint: {_e(r["hint"])}</span>' if r.get("hint") else ""
            out.append(
                f'<tr><td class="mono">{_e(r.get("region"))}</td><td>{_e(r.get("kind"))}</td>'
                f'<td>{_e(r.get("reason"))}{hint}</td><td class="mono">{_e(where)}</td></tr>'
            )
        out.append("</tbody></table>")
        if report.get("recompile_limit_hit"):
            out.append(f"<p><b>{_e(report['recompile_limit_hit'])}</b></p>")
    out.append("</div>")
    return out


def _recommendation(rec: dict | None, plan: dict | None) -> list[str]:
    if not rec:
        return []
    over = f" over {', '.join(rec.get('regions') or [])}" if rec.get("regions") else ""
    out = [
        f'<h2 id="recommendation">Recommendation: {_e(rec.get("strategy"))}{_e(over)}</h2>',
        '<div class="card sect">',
    ]
    out += [f'<code class="plugin">{_e(line)}</code>' for line in rec.get("how_to_apply") or []]
    out.append('<ul class="why">')
    out += [f"<li>{_e(reason)}</li>" for reason in rec.get("why") or []]
    out.append("</ul></div>")
    if plan:
        out.append('<h2 id="plan">Plan</h2><div class="card sect">')
        out.append(
            "<p>for <code>regcomp-fix --plan PLAN.json train.py</code> or "
            "<code>regcomp_lint.apply_plan(model, PLAN.json)</code></p>"
        )
        out.append(f'<pre class="plan">{_e(json.dumps(plan, indent=2))}</pre></div>')
    return out


def _measured(measured: dict) -> list[str]:
    rows = measured.get("strategies") or []
    out = [
        '<h2 id="measured">Measured</h2>',
        '<div class="card sect">',
        f"<p>{_e(measured.get('step'))} step, mixed precision {_e(measured.get('mixed_precision'))}, "
        f"{_e(measured.get('device'))}; steady step = median over {_e(measured.get('steps'))} steps after "
        f"{_e(measured.get('warmup'))}; every strategy in fresh processes with its own empty compiler cache.</p>",
        chart(rows),
        "<table><thead><tr><th>strategy</th><th>cold start s</th><th>× full</th><th>warm start s</th>"
        "<th>steady ms (min–max)</th><th>× full</th><th>peak memory MiB</th><th>graphs</th><th>breaks</th>"
        "<th>recompiles</th></tr></thead><tbody>",
    ]
    for r in rows:
        if not r.get("ok"):
            out.append(f'<tr><td class="mono">{_e(r["strategy"])}</td><td colspan="9">{_e(r.get("error"))}</td></tr>')
            continue
        out.append(
            f'<tr><td class="mono">{_e(r["strategy"])}</td><td class="num">{_num(r.get("cold_start_s"), 2)}</td>'
            f'<td class="num">{_num(r.get("cold_vs_full"), 2)}</td><td class="num">{_num(r.get("warm_start_s"), 2)}</td>'
            f'<td class="num">{_num(r.get("steady_median_ms"), 1)} ({_num(r.get("steady_min_ms"), 1)}–'
            f'{_num(r.get("steady_max_ms"), 1)})</td><td class="num">{_num(r.get("steady_vs_full"), 2)}</td>'
            f'<td class="num">{_num((r.get("peak_memory_bytes") or 0) / 2**20, 0)}</td>'
            f'<td class="num">{_e(r.get("graphs"))}</td><td class="num">{_e(r.get("graph_breaks"))}</td>'
            f'<td class="num">{_e(r.get("recompiles"))}</td></tr>'
        )
    out.append("</tbody></table>")
    if measured.get("winner"):
        out.append(
            f"<p>winner for <code>--optimize {_e(measured.get('optimize'))}</code>: <b>{_e(measured['winner'])}</b></p>"
        )
    out.append("</div>")
    return out


def chart(rows: list[dict]) -> str:
    """Two horizontal bar charts (cold start, steady step) as inline SVG: nothing fetched."""
    ok = [r for r in rows if r.get("ok") and r.get("cold_start_s") is not None]
    if not ok:
        return ""
    bar_h, gap, label_w, width = 18, 6, 90, 360
    parts = []
    y = 0
    for title, key, unit, colour in (
        ("cold start", "cold_start_s", "s", _COLD),
        ("steady step", "steady_median_ms", "ms", _STEADY),
    ):
        top = max(float(r.get(key) or 0) for r in ok) or 1.0
        parts.append(f'<text x="0" y="{y + 13}" font-weight="600">{_e(title)} ({unit})</text>')
        y += bar_h + gap
        for r in ok:
            value = float(r.get(key) or 0)
            length = max(1.0, width * value / top)
            parts.append(f'<text x="0" y="{y + 13}">{_e(r["strategy"])}</text>')
            parts.append(
                f'<rect class="bar" data-strategy="{_e(r["strategy"])}" data-metric="{key}" x="{label_w}" y="{y}" '
                f'width="{length:.1f}" height="{bar_h}" fill="{colour}"><title>{_e(r["strategy"])}: {value:.2f} {unit}'
                "</title></rect>"
            )
            parts.append(f'<text x="{label_w + length + 6:.1f}" y="{y + 13}">{value:.2f}</text>')
            y += bar_h + gap
        y += gap * 2
    total_w = label_w + width + 80
    return (
        f'<svg class="chart" role="img" aria-label="cold start and steady step per strategy" '
        f'width="{total_w}" height="{y}" viewBox="0 0 {total_w} {y}">' + "".join(parts) + "</svg>"
    )


def _num(value, digits: int) -> str:
    return "—" if value is None else f"{value:.{digits}f}"
