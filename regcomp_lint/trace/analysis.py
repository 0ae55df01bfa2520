"""The trace pipeline, step by step: what ``trace`` does after it has a model and a batch.

1. ``regions.build``: module tree, groups of identical blocks, the region partition.
2. ``explain.run_explain``: one ``torch._dynamo.explain`` run; every break, deduplicated by site.
3. ``locate.probe``: one eager run armed on the break lines: which instance ran each break, and
   the call order (on meta, where eager may not run, breaks are placed by code).
4. ``static_match.rule_for``: the RC code of the static rule that predicts each break.
5. ``verdicts``: ``fullgraph=True`` per region and for the whole model; recompiles per block
   and for a shorter batch.
6. ``recommend.recommend``: strategy, plugin keywords, reasons.
User code's prints go to stderr throughout, so ``--format json`` on stdout stays parseable.
"""

from __future__ import annotations

import contextlib
import sys
import time
import warnings
from dataclasses import dataclass, field

from regcomp_lint.knowledge.diffusers_blocks import REPEATED_BLOCKS_ATTRIBUTE
from regcomp_lint.trace import explain as explain_step
from regcomp_lint.trace import locate, static_match, verdicts
from regcomp_lint.trace import recommend as recommend_step
from regcomp_lint.trace import regions as regions_step
from regcomp_lint.trace.batch import Batch
from regcomp_lint.trace.errors import TraceError


@dataclass
class PlacedBreak:
    site: explain_step.BreakSite
    instances: list[str]  # module paths that ran it
    regions: list[str]  # the regions those are in
    label: str  # "transformer.h[0..11]", "lm_head", "<model>"
    placed_by: str  # "probe" | "code" | "none"
    code: str | None
    code_source: str  # "static" | "gb-id" | "none"
    registry: dict


@dataclass
class Analysis:
    model_name: str
    device: str
    batch: Batch
    regions: regions_step.RegionGraph
    explain: explain_step.ExplainResult
    probe: locate.Probe
    breaks: list[PlacedBreak]
    whole: verdicts.Verdict
    regional: verdicts.RegionalRun
    recommendation: recommend_step.Recommendation | None = None
    timings: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    #: the block classes a diffusers model names in ``_repeated_blocks`` (its own regional compile)
    repeated_blocks: tuple[str, ...] = ()
    #: the module paths of every instance of those classes, in module order, wherever it sits
    repeated_block_paths: list[str] = field(default_factory=list)


@dataclass
class Options:
    backend: str = "inductor"
    mode: str | None = None
    dynamic_dim: str = "auto"  # "auto" | "none" | an int as text
    recompiles: bool = True


def analyze(model, batch: Batch, device: str, options: Options | None = None) -> Analysis:
    options = options or Options()
    timings: dict[str, float] = {}
    notes: list[str] = []
    start = time.perf_counter()
    with contextlib.redirect_stdout(sys.stderr), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the model's own warnings would repeat once per run
        graph = _timed(timings, "regions", lambda: regions_step.build(model))
        try:
            result = _timed(timings, "explain", lambda: explain_step.run_explain(model, batch))
        except TraceError as exc:
            if device == "meta":
                raise TraceError(
                    f"{exc} (on the meta device: code in forward that makes real tensors, such as a "
                    "KV cache, cannot be traced; pass use_cache=False in the inputs, or trace a smaller "
                    "config of the model on --device cpu)"
                ) from None
            # say what is wrong with the batch in eager terms when eager fails too
            locate.probe(model, batch, set(), fatal=True)
            raise
        lines = {(s.file, s.line) for s in result.breaks}
        probe = _timed(timings, "probe", lambda: locate.probe(model, batch, lines, fatal=device != "meta"))
        if not probe.ok:
            notes.append(
                f"the eager probe run failed on {device} ({probe.error}): breaks are placed by code "
                "(every instance of the class that holds the line), call order by the traced graphs"
            )
            probe.order = list(result.ops_by_module)
        _record_order(graph, probe.order)
        placed = [_place(model, graph, site, probe) for site in result.breaks]
        _record_breaks(graph, placed)
        clean = result.graph_count == 1 and not result.breaks and not result.counted_breaks
        whole = _timed(timings, "fullgraph", lambda: verdicts.whole_model(model, batch, one_clean_graph=clean))
        dim = _dynamic_dim(batch, options.dynamic_dim)
        regional = _timed(
            timings,
            "regions_verdicts",
            lambda: _regional(model, batch, graph, dim, probe, placed, options, notes, clean),
        )
        _record_verdicts(graph, regional)
    analysis = Analysis(
        type(model).__name__,
        device,
        batch,
        graph,
        result,
        probe,
        placed,
        whole,
        regional,
        timings=timings,
        notes=notes,
        repeated_blocks=_repeated_blocks(model),
        repeated_block_paths=_repeated_block_paths(model),
    )
    analysis.recommendation = recommend_step.recommend(analysis, options.backend, options.mode)
    timings["total"] = time.perf_counter() - start
    return analysis


def _timed(timings: dict, name: str, fn):
    start = time.perf_counter()
    try:
        return fn()
    finally:
        timings[name] = round(time.perf_counter() - start, 3)


def _regional(model, batch, graph, dim, probe, placed, options, notes, clean) -> verdicts.RegionalRun:
    if not probe.ok:
        # eager code around a compiled region cannot run here (meta): judge regions by the breaks
        # explain placed in them, and leave recompiles unknown rather than guess
        notes.append("region verdicts come from explain (no eager run possible); recompiles unknown")
        return verdicts.from_explain(graph, placed)
    run = verdicts.regional(model, batch, graph, dim if options.recompiles else None, explain_clean=clean)
    if run.error:
        notes.append(f"the recompile probe stopped: {run.error}")
    return run


def _dynamic_dim(batch: Batch, choice: str) -> int | None:
    if choice == "none":
        return None
    if choice == "auto":
        return batch.dynamic_dim()
    try:
        return int(choice)
    except ValueError:
        raise TraceError(f"--dynamic-dim {choice!r}: give auto, none or a dimension number") from None


def _place(model, graph, site, probe: locate.Probe) -> PlacedBreak:
    instances = probe.hits.get((site.file, site.line), []) if probe.ok else []
    placed_by = "probe" if instances else "none"
    if not instances:
        instances = locate.place_by_code(model, site)
        placed_by = "code" if instances else "none"
    region_names = list(dict.fromkeys(graph.region_of(p) for p in instances))
    code, how = static_match.rule_for(site.file, site.line, site.gb_id)
    return PlacedBreak(
        site,
        instances,
        region_names,
        label_for(graph, region_names),
        placed_by,
        code,
        how,
        static_match.registry_entry(site.gb_id),
    )


def label_for(graph, region_names: list[str]) -> str:
    """Collapse the members of a group: ``transformer.h[0..11]``; else the names joined."""
    if not region_names:
        return "?"
    labels = []
    rest = list(region_names)
    for group in graph.groups:
        members = [r for r in rest if r in group.members]
        if len(members) == group.count and group.count > 1:
            labels.append(group.collapsed)
            rest = [r for r in rest if r not in members]
    labels.extend(r if r else "<model>" for r in rest)
    return ", ".join(labels)


def _record_order(graph, order: list[str]) -> None:
    for index, path in enumerate(order):
        if path in graph.graph:
            graph.graph.nodes[path]["order"] = index


def _record_breaks(graph, placed: list[PlacedBreak]) -> None:
    for item in placed:
        for path in item.instances:
            if path in graph.graph:
                graph.graph.nodes[path]["breaks"] += 1


def _record_verdicts(graph, regional: verdicts.RegionalRun) -> None:
    for region, verdict in regional.fullgraph.items():
        if region in graph.graph:
            graph.graph.nodes[region]["fullgraph"] = verdict.ok
    for recompile in regional.recompiles:
        if recompile.region in graph.graph:
            graph.graph.nodes[recompile.region]["recompiles"] += 1


def _repeated_blocks(model) -> tuple[str, ...]:
    """The block class names a diffusers ``ModelMixin`` declares for ``compile_repeated_blocks()``
    (read like diffusers does, ``getattr(model, "_repeated_blocks")``: an instance value counts)."""
    names = getattr(model, REPEATED_BLOCKS_ATTRIBUTE, None)
    return tuple(str(n) for n in names) if isinstance(names, (list, tuple)) else ()


def _repeated_block_paths(model) -> list[str]:
    """Where the declared blocks are: ``compile_repeated_blocks()`` compiles each of these."""
    names = set(_repeated_blocks(model))
    return [path for path, module in model.named_modules() if type(module).__name__ in names] if names else []
