"""From the evidence to a strategy: ``full``, ``regional`` (which groups, fullgraph or not) or
``none``, with the reasons, the plugin keywords and an estimate of the cold-start saving.

Rules, in order:
- dynamo traced nothing (every frame fell back): ``none``.
- repeated blocks exist: ``regional`` over their containers. ``fullgraph=True`` only when every
  region's verdict is ok (the plugin's flag applies to every compiled region, glue included).
  A diffusers model's ``_repeated_blocks`` classes count too, wherever their instances sit (a
  UNet's): the plan names them (``repeated_blocks``) and ``apply_plan`` compiles each instance;
  a group whose members hold such blocks is left out of ``regions`` (its blocks are compiled by
  class instead, as ``compile_repeated_blocks()`` does).
- otherwise ``full``, with ``fullgraph`` from the whole-model verdict.
Recompiles add their fix to ``why``; they do not change the strategy.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from regcomp_lint.plan import Plan
from regcomp_lint.trace.loading import display_path
from regcomp_lint.trace.regions import amount

PER_BLOCK_FIX = (
    "torch._dynamo.config.allow_unspec_int_on_nn_module = True (or raise "
    "torch._dynamo.config.recompile_limit, or keep the int in a buffer)"
)


@dataclass
class Recommendation:
    strategy: str
    regions: list[str]
    plugin: dict
    why: list[str] = field(default_factory=list)
    saving: dict | None = None  # {"traced_ops_full", "traced_ops_regional", "fraction"}
    #: False when Accelerate's plugin cannot split any of the regions (none is an nn.ModuleList
    #: of one class): the plugin line would compile the model whole, so the way to apply a
    #: regional plan is ``apply_plan`` and the report shows that instead of the plugin line
    accelerate_splits: bool = True
    #: the classes of a diffusers model's ``_repeated_blocks`` that the model has:
    #: ``model.compile_repeated_blocks(...)`` applies it, and so does the plan
    repeated_blocks: tuple[str, ...] = ()

    def plan(self, model_name: str | None) -> Plan:
        return Plan(
            strategy=self.strategy,
            regions=list(self.regions),
            plugin=dict(self.plugin),
            why=list(self.why),
            model=model_name,
            repeated_blocks=list(self.repeated_blocks),
        )


def recommend(analysis, backend: str = "inductor", mode: str | None = None) -> Recommendation:
    regions = analysis.regions
    explain = analysis.explain
    why: list[str] = []
    base = {"backend": backend}
    if mode:
        base["mode"] = mode
    if explain.graph_count == 0:
        return Recommendation(
            "none",
            [],
            {"backend": "no"},
            [
                "dynamo traced no graph: every frame fell back to eager, so compiling buys nothing until the breaks above are fixed"
            ],
        )
    verdicts = analysis.regional.fullgraph
    failing = {r: v for r, v in verdicts.items() if v.ok is False}
    named_paths = analysis.repeated_block_paths
    groups = [g for g in regions.groups if not _holds_named(g, named_paths)]
    if groups or named_paths:
        containers = list(dict.fromkeys(g.container_path for g in groups))
        for group in groups:
            line = (
                f"{group.collapsed}: {group.count} identical {group.cls} blocks "
                f"({amount(group.params_each)} params each) compile once and reuse the compiled code"
            )
            if not group.accelerate_sees:
                line += (
                    f" when apply_plan compiles them one by one in place; Accelerate's regional compilation "
                    f"(compile_regions) does not split {group.container_path or '<model>'} (an nn.{group.container}"
                    f"{' of mixed classes' if group.container == 'ModuleList' else ''}: it splits only an "
                    "nn.ModuleList of one class) and compiles it as one graph"
                )
            why.append(line)
        fullgraph = not failing and all(v.ok for v in verdicts.values() if v.ok is not None)
        why.append(_fullgraph_reason(fullgraph, failing, {v.how for v in verdicts.values()}))
        plugin = {**base, "fullgraph": bool(fullgraph), "use_regional_compilation": True}
        saving = _saving(analysis)
        if saving:
            why.append(
                f"estimated cold-start saving: dynamo traces {saving['traced_ops_regional']} ops instead of "
                f"{saving['traced_ops_full']} for a full compile ({saving['fraction']:.0%} less to compile)"
            )
        strategy, chosen = "regional", containers
        accelerate_splits = any(g.accelerate_sees for g in groups)
        why.extend(_diffusers_blocks(analysis, groups, [g for g in regions.groups if g not in groups]))
    else:
        whole = analysis.whole
        fullgraph = bool(whole.ok)
        why.append("no repeated blocks: one graph for the whole model")
        why.append(
            "fullgraph=True works on the whole model"
            if fullgraph
            else f"fullgraph=True fails on the whole model{_at(whole)}: keep fullgraph=False"
        )
        plugin = {**base, "fullgraph": fullgraph, "use_regional_compilation": False}
        strategy, chosen, saving, accelerate_splits = "full", [], None, True
    why.extend(_recompile_reasons(analysis))
    blocks = _present(analysis) if strategy == "regional" else ()
    return Recommendation(strategy, chosen, plugin, why, saving, accelerate_splits, blocks)


def _present(analysis) -> tuple[str, ...]:
    """The declared ``_repeated_blocks`` classes the model has an instance of."""
    graph = analysis.regions.graph
    found = {graph.nodes[p]["cls"] for p in analysis.repeated_block_paths if p in graph}
    return tuple(name for name in analysis.repeated_blocks if name in found)


def _holds_named(group, named_paths: list[str]) -> bool:
    """A group member that is, holds or sits inside a declared block (compiled by class instead)."""
    return any(
        m == p or p.startswith(m + ".") or m.startswith(p + ".") or not p for m in group.members for p in named_paths
    )


def _diffusers_blocks(analysis, groups, replaced) -> list[str]:
    """What diffusers' own regional compile does with this model, when it declares its blocks."""
    named = analysis.repeated_blocks
    if not named:
        return []
    present = _present(analysis)
    if not present:
        return [
            f"{analysis.model_name} names {', '.join(named)} in diffusers' _repeated_blocks but has no submodule "
            "of those classes: model.compile_repeated_blocks() would raise ValueError; apply_plan compiles the regions found here"
        ]
    paths = analysis.repeated_block_paths
    containers = {p.rsplit(".", 1)[0] if "." in p else "" for p in paths}
    lines = [
        f"{analysis.model_name} names its repeated blocks ({', '.join(named)}, diffusers' _repeated_blocks): "
        f"{len(paths)} instances in {len(containers)} containers; model.compile_repeated_blocks() and apply_plan "
        "(the plan's repeated_blocks) compile each of them wherever it sits, diffusers' own regional compile"
    ]
    for group in replaced:
        lines.append(
            f"{group.collapsed}: its {group.cls} blocks hold (or are) {', '.join(present)} blocks, compiled by class "
            "instead; the rest of each runs eagerly"
        )
    missed = sorted({g.cls for g in groups} - set(named))
    if missed:
        lines.append(
            f"compile_repeated_blocks() leaves {', '.join(missed)} uncompiled (not in _repeated_blocks): "
            "apply_plan compiles every region found here"
        )
    return lines


def _fullgraph_reason(ok: bool, failing: dict, how: set[str]) -> str:
    if ok:
        if how == {"explain"}:
            return "fullgraph=True works in every region (explain placed no break in any; not compiled region by region on this device)"
        if "explain" in how:
            return (
                "fullgraph=True works in every region (each group's first block compiled with backend=eager, "
                "fullgraph=True; the regions around them traced in explain's single graph)"
            )
        return "fullgraph=True works in every region (each compiled with backend=eager, fullgraph=True)"
    # one line per distinct failure (every member of a group shares its first block's verdict)
    by_failure: dict[tuple, list[str]] = {}
    for region, verdict in failing.items():
        by_failure.setdefault((verdict.file, verdict.line, verdict.gb_id, verdict.reason), []).append(region)
    parts = []
    for (_, _, _, _), regions in list(by_failure.items())[:3]:
        shown = regions[0] if len(regions) == 1 else f"{regions[0]} (and {len(regions) - 1} more)"
        parts.append(f"{shown}{_at(failing[regions[0]])}")
    return f"fullgraph=False: {'; '.join(parts)} cannot be traced in one graph"


def _at(verdict) -> str:
    if verdict.file and verdict.line:
        return (
            f" at {display_path(verdict.file)}:{verdict.line} ({verdict.gb_id or ''} {verdict.reason or ''})".replace(
                "( ", "("
            )
        )
    return f" ({verdict.reason})" if verdict.reason else ""


def _recompile_reasons(analysis) -> list[str]:
    out = []
    regional = analysis.regional
    attribute = [r for r in regional.recompiles if r.kind == "attribute"]
    if attribute:
        guards = sorted({r.reason.split(" == ")[0] for r in attribute})
        seen = ", ".join(dict.fromkeys(r.region for r in attribute))
        out.append(
            f"blocks recompile on {', '.join(guards)} (seen on {seen})"
            f"{' at ' + attribute[0].file + ':' + str(attribute[0].line) if attribute[0].file else ''}: set {PER_BLOCK_FIX}"
        )
    cache = [r for r in regional.recompiles if r.kind == "other" and r.file and "cache" in r.file.rsplit("/", 1)[-1]]
    if cache:
        out.append(
            f"the blocks recompile on their slot of a per-layer cache ({cache[0].reason}, {cache[0].file}:{cache[0].line}): "
            "call the model with use_cache=False when training (the cache is for generation)"
        )
    if regional.limit_hit:
        out.append(regional.limit_hit)
    shape = [r for r in regional.recompiles if r.kind == "shape"]
    if shape:
        out.append(
            f"a batch of another size recompiled ({regional.second_batch}); with dynamic=None torch marks the "
            "dimension dynamic after the first change: pad batches to a fixed multiple (pad_to_multiple_of) "
            "or pass dynamic=True to avoid even that"
        )
    return out


def _saving(analysis) -> dict | None:
    explain = analysis.explain
    total = explain.ops
    if not total:
        return None
    saved = 0
    for group in analysis.regions.groups:
        per_block = [explain.ops_by_module.get(m, 0) for m in group.members]
        if per_block and per_block[0]:
            saved += sum(per_block[1:])
    if not saved:
        return None
    return {"traced_ops_full": total, "traced_ops_regional": total - saved, "fraction": round(saved / total, 3)}
