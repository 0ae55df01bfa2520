"""The trace report for people (``text``) and for tools (``json``).

The JSON keys listed in ``STABLE_KEYS`` are the contract other tools rely on; everything else
(timings, notes, evidence details) may grow.
"""

from __future__ import annotations

import linecache

from regcomp_lint.trace.analysis import Analysis
from regcomp_lint.trace.loading import display_path
from regcomp_lint.trace.regions import amount

STABLE_KEYS = ("model", "device", "groups", "regions", "graph_breaks", "recompiles", "fullgraph_ok", "recommendation")


def to_json(analysis: Analysis) -> dict:
    graph = analysis.regions
    nodes = graph.graph.nodes
    rec = analysis.recommendation
    return {
        "model": analysis.model_name,
        "device": analysis.device,
        "batch": analysis.batch.describe(),
        "groups": [
            {
                "name": g.name,
                "class": g.cls,
                "count": g.count,
                "container": g.container,
                "members": list(g.members),
                "params_each": g.params_each,
                "accelerate_regionalizes": g.accelerate_sees,
            }
            for g in graph.groups
        ],
        "regions": [
            {
                "name": r or "<model>",
                "class": nodes[r]["cls"],
                "group": nodes[r]["group"],
                "params": nodes[r]["params"],
                "graph_breaks": sum(1 for b in analysis.breaks if r in b.regions),
                "fullgraph": _verdict_value(analysis.regional.fullgraph.get(r)),
                "fullgraph_checked": (analysis.regional.fullgraph[r].how if r in analysis.regional.fullgraph else None),
                "order": nodes[r]["order"],
            }
            for r in graph.regions
        ],
        "graph_breaks": [
            {
                "region": b.label,
                "regions": [r or "<model>" for r in b.regions],
                "file": display_path(b.site.file),
                "line": b.site.line,
                "function": b.site.function,
                "gb_id": b.site.gb_id,
                "code": b.code,
                "code_from": b.code_source,
                "reason": b.site.reason,
                "explanation": b.site.explanation or b.registry.get("explanation"),
                "hints": b.site.hints or list(b.registry.get("hints", [])),
                "source": (linecache.getline(b.site.file, b.site.line).strip() or None) if b.site.file else None,
                "count": b.site.count,
                "placed_by": b.placed_by,
            }
            for b in analysis.breaks
        ],
        "recompiles": [
            {
                "region": r.region or "<model>",
                "reason": r.reason,
                "kind": r.kind,
                "file": display_path(r.file),
                "line": r.line,
                "hint": r.hint,
            }
            for r in analysis.regional.recompiles
        ],
        "recompile_limit_hit": analysis.regional.limit_hit,
        "second_batch": analysis.regional.second_batch,
        "fullgraph_ok": bool(analysis.whole.ok),
        "fullgraph": {
            "ok": analysis.whole.ok,
            "checked": analysis.whole.how,
            "gb_id": analysis.whole.gb_id,
            "reason": analysis.whole.reason,
            "file": display_path(analysis.whole.file),
            "line": analysis.whole.line,
        },
        "explain": {
            "graph_count": analysis.explain.graph_count,
            "graph_break_count": analysis.explain.graph_break_count,
            "ops": analysis.explain.ops,
            "break_counter": analysis.explain.counted_breaks,
        },
        "recommendation": {
            "strategy": rec.strategy,
            "regions": list(rec.regions),
            "plugin": dict(rec.plugin),
            "why": list(rec.why),
            "saving": rec.saving,
            "accelerate_splits": rec.accelerate_splits,
            "repeated_blocks": list(rec.repeated_blocks),
            "how_to_apply": how_to_apply(rec),
        }
        if rec
        else None,
        "notes": list(analysis.notes),
        "timings": dict(analysis.timings),
    }


def _verdict_value(verdict):
    return None if verdict is None else verdict.ok


# -- text ------------------------------------------------------------------------------------


def to_text(analysis: Analysis) -> str:
    out: list[str] = []
    ex = analysis.explain
    out.append(f"{analysis.model_name} on {analysis.device}, batch {analysis.batch.describe()}")
    out.append(
        f"explain: {ex.graph_count} graph{'s' if ex.graph_count != 1 else ''}, "
        f"{len(analysis.breaks)} graph-break site{'s' if len(analysis.breaks) != 1 else ''}, {ex.ops} ops "
        f"({analysis.timings.get('explain', 0):.1f} s; whole trace {analysis.timings.get('total', 0):.1f} s)"
    )
    out.append("")
    out.append("Regions")
    out.extend(_tree(analysis))
    out.append("")
    if analysis.breaks:
        out.append(f"Graph breaks ({len(analysis.breaks)})")
        for b in analysis.breaks:
            code = f" [{b.code}]" if b.code else ""
            out.append(
                f"  {b.label}: {display_path(b.site.file)}:{b.site.line} in {b.site.function}: "
                f"{b.site.gb_id or 'graph break'} {b.site.reason}{code}"
            )
            source = linecache.getline(b.site.file, b.site.line).rstrip()
            if source:
                out.append(f"    {b.site.line:>5} | {source.strip()}")
            hint = (b.site.hints or b.registry.get("hints") or [None])[0]
            if hint:
                out.append(f"          = hint: {hint}")
            if b.placed_by == "code":
                out.append("          (placed by code: every instance of the class that holds this line)")
        out.append("")
    else:
        out.append("Graph breaks: none")
        out.append("")
    regional = analysis.regional
    if regional.recompiles or regional.limit_hit:
        out.append(f"Recompiles ({len(regional.recompiles)})")
        for reason, items in _grouped_recompiles(regional.recompiles).items():
            regions = [r.region or "<model>" for r in items]
            where = f" ({display_path(items[0].file)}:{items[0].line})" if items[0].file else ""
            shown = ", ".join(regions[:4]) + (f" ... ({len(regions)} in all)" if len(regions) > 4 else "")
            out.append(f"  {shown}: {reason}{where}")
            if items[0].hint:
                out.append(f"          = hint: {items[0].hint}")
        if regional.limit_hit:
            out.append(f"  ! {regional.limit_hit}")
        out.append("")
    elif regional.second_batch and regional.second_batch.startswith("unknown"):
        out.append(f"Recompiles: {regional.second_batch}")  # not probed (meta): not "none"
        out.append("")
    elif regional.second_batch:
        out.append(f"Recompiles: none (second batch {regional.second_batch})")
        out.append("")
    whole = analysis.whole
    if whole.ok:
        out.append(
            f"fullgraph=True on the whole model: ok ({'one graph, no break in explain' if whole.how == 'explain' else 'compiled'})"
        )
    elif whole.ok is False:
        where = f" at {display_path(whole.file)}:{whole.line}" if whole.file else ""
        out.append(
            f"fullgraph=True on the whole model: fails{where} ({whole.gb_id or ''} {whole.reason or ''})".replace(
                "( ", "("
            )
        )
    else:
        out.append(f"fullgraph=True on the whole model: unknown ({whole.reason})")
    for note in analysis.notes:
        out.append(f"note: {note}")
    rec = analysis.recommendation
    if rec:
        out.append("")
        targets = [*rec.regions, *(f"every {cls}" for cls in rec.repeated_blocks)]
        over = f" over {', '.join(targets)}" if targets else ""
        out.append(f"Recommendation: {rec.strategy}{over}")
        out.extend(f"  {line}" for line in how_to_apply(rec))
        for reason in rec.why:
            out.append(f"  - {reason}")
    return "\n".join(out) + "\n"


def how_to_apply(rec) -> list[str]:
    """The line that applies the recommendation: the plugin keywords, or ``apply_plan`` where
    Accelerate's regional compilation would compile the regions whole (an nn.Sequential); for a
    diffusers model, its own ``compile_repeated_blocks`` first and ``apply_plan`` (which compiles
    the declared blocks wherever they sit, like it, plus the regions) next."""
    kwargs = ", ".join(f"{k}={v!r}" for k, v in rec.plugin.items()).replace("'", '"')
    apply_line = "regcomp_lint.apply_plan(model, plan) after accelerator.prepare (compiles each block in place)"
    if rec.repeated_blocks:  # a diffusers model: its own regional compile takes torch.compile's keywords
        compile_kwargs = {k: v for k, v in rec.plugin.items() if k in ("backend", "mode", "fullgraph", "dynamic")}
        spelled = ", ".join(f"{k}={v!r}" for k, v in compile_kwargs.items()).replace("'", '"')
        regions = ", and the regions" if rec.regions else ""
        lines = [
            f"model.compile_repeated_blocks({spelled}) (diffusers' own regional compile), or",
            f"regcomp_lint.apply_plan(model, plan) (every {', '.join(rec.repeated_blocks)} wherever it sits{regions}, in place), or",
        ]
    elif not rec.accelerate_splits:
        lines = [f"{apply_line};"]
    else:
        lines = []
    if rec.accelerate_splits:
        return [*lines, f"TorchDynamoPlugin({kwargs})"]
    return [
        *lines,
        f"TorchDynamoPlugin({kwargs}) alone would compile {', '.join(rec.regions) or 'the model'} whole, like a full compile",
    ]


def _grouped_recompiles(recompiles) -> dict[str, list]:
    grouped: dict[str, list] = {}
    for r in recompiles:
        key = r.reason.split(" == ")[0] + (" changed" if " == " in r.reason else "")
        grouped.setdefault(key, []).append(r)
    return grouped


def _tree(analysis: Analysis) -> list[str]:
    graph = analysis.regions
    g = graph.graph
    regions = set(graph.regions)
    shown_groups: set[str] = set()
    lines: list[str] = []

    def verdict(path: str) -> str:
        v = analysis.regional.fullgraph.get(path)
        if v is None:
            return ""
        if v.ok:
            return "  fullgraph ok"
        if v.ok is False:
            return f"  fullgraph FAILS ({v.gb_id or v.reason})"
        return f"  fullgraph ? ({v.how})"

    def extras(paths: list[str]) -> str:
        breaks = sum(1 for b in analysis.breaks if any(p in b.regions for p in paths))
        recompiles = sum(1 for r in analysis.regional.recompiles if r.region in paths)
        parts = []
        if breaks:
            parts.append(f"{breaks} break{'s' if breaks != 1 else ''}")
        if recompiles:
            parts.append(f"{recompiles} recompile{'s' if recompiles != 1 else ''}")
        return ("  " + ", ".join(parts)) if parts else ""

    def walk(path: str, prefix: str, last: bool, depth: int) -> None:
        node = g.nodes[path]
        name = path.rsplit(".", 1)[-1] if path else analysis.model_name
        connector = "" if depth == 0 else ("└─ " if last else "├─ ")
        group = graph.group_of.get(path)
        if group is not None:
            if group.name in shown_groups:
                return
            shown_groups.add(group.name)
            label = group.collapsed
            if group.container_path and label.startswith(group.container_path):
                label = group.container_path.rsplit(".", 1)[-1] + label[len(group.container_path) :]
            lines.append(
                f"  {prefix}{connector}{label}  {group.cls} ×{group.count}  {amount(group.params_each)} params each"
                f"{verdict(group.members[0])}{extras(group.members)}"
            )
            return
        whole_group = next((grp for grp in graph.groups if grp.name == path and path), None)
        if whole_group is not None:  # a container that is exactly one group: show it collapsed
            walk(whole_group.members[0], prefix, last, depth)
            return
        head = f"  {prefix}{connector}{name}  {node['cls']}"
        if path in regions or depth == 0 and not list(g.successors(path)):
            lines.append(f"{head}  {amount(node['params'])} params{verdict(path)}{extras([path])}")
            return
        own = extras([path])
        lines.append(head + own)
        children = [c for c in g.successors(path) if not (c in graph.group_of and graph.group_of[c].members[0] != c)]
        child_prefix = prefix + ("" if depth == 0 else ("   " if last else "│  "))
        for i, child in enumerate(children):
            walk(child, child_prefix, i == len(children) - 1, depth + 1)

    walk("", "", True, 0)
    return lines
