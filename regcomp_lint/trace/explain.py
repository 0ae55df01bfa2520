"""Run ``torch._dynamo.explain`` once and gather every graph break, deduplicated by site.

Sources, merged: the ``graph_breaks`` log records (they see breaks that skip a whole frame,
which ``break_reasons`` misses), ``explain().break_reasons`` and ``counters["graph_break"]``
(kept as a cross-check: a count above what could be placed is reported as unplaced breaks).
Each site is ``(file, line, GB id)`` at the innermost frame of user code, so a break inside
``logging`` or ``copy`` is reported at the model line that called it.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field

from regcomp_lint.trace import dynamo_logs
from regcomp_lint.trace.batch import Batch
from regcomp_lint.trace.errors import TraceError
from regcomp_lint.trace.loading import is_user_file, user_error


@dataclass
class BreakSite:
    """One place dynamo broke the graph (however many times it did)."""

    file: str
    line: int
    function: str
    gb_id: str | None
    reason: str
    explanation: str | None = None
    hints: list[str] = field(default_factory=list)
    frames: list[tuple[str, int, str]] = field(default_factory=list)  # user frames, outermost first
    count: int = 0
    sources: set[str] = field(default_factory=set)

    @property
    def key(self) -> tuple[str, int, str | None]:
        return (self.file, self.line, self.gb_id)


@dataclass
class ExplainResult:
    graph_count: int
    graph_break_count: int
    breaks: list[BreakSite]
    ops: int  # ops in all graphs
    ops_by_module: dict[str, int]  # module path -> ops traced inside it (its subtree)
    counted_breaks: int  # counters["graph_break"], the cross-check
    seconds: float


_MODULE_PATH = re.compile(r"^L\['(?:self|fn|mod|model)'\]\.?")
_INDEX = re.compile(r"\[(\d+)\]")
_MODULES_KEY = re.compile(r"(?:^|\.)_modules\['([^']+)'\]")


def module_path(stack_entry: str) -> str:
    """``L['self'].transformer.h[0].attn`` -> ``transformer.h.0.attn``."""
    path = _MODULE_PATH.sub("", stack_entry)
    path = _MODULES_KEY.sub(r".\1", path)
    return _INDEX.sub(r".\1", path).strip(".")


def run_explain(model, batch: Batch) -> ExplainResult:
    import torch._dynamo as dynamo
    from torch._dynamo.utils import counters

    dynamo.reset()
    counters.clear()
    start = time.perf_counter()
    with dynamo_logs.collecting(graph_breaks=True, recompiles=False) as logs:
        try:
            result = dynamo.explain(model)(*batch.args, **batch.kwargs)
        except Exception as exc:  # noqa: BLE001 - the user's model under dynamo
            raise TraceError(f"the model raised under torch._dynamo.explain: {user_error(exc)}") from None
    seconds = time.perf_counter() - start
    sites: dict[tuple, BreakSite] = {}
    for text in logs.messages():
        if "Graph break" in text or "graph break" in text:
            _add(sites, text, dynamo_logs.user_frames(text), "log")
    for reason in result.break_reasons:
        frames = [(f.filename, f.lineno, f.name) for f in (reason.user_stack or ())]
        _add(sites, reason.reason, frames, "explain")
    names = {name for name, _ in model.named_modules()}
    ops, by_module = _count_ops(result.graphs, names)
    return ExplainResult(
        graph_count=result.graph_count,
        graph_break_count=max(result.graph_break_count, 0),
        breaks=sorted(sites.values(), key=lambda s: (s.file, s.line, s.gb_id or "")),
        ops=ops,
        ops_by_module=by_module,
        counted_breaks=sum(counters["graph_break"].values()),
        seconds=seconds,
    )


def _add(sites: dict, text: str, frames: list[tuple[str, int, str]], source: str) -> None:
    user = [f for f in frames if is_user_file(f[0])]
    if user:
        file, line, function = user[-1]
    else:
        at = dynamo_logs.break_site(text)
        if at is None or not is_user_file(at[0]):
            return
        file, line, function = at[0], at[1], "?"
    gb = dynamo_logs.gb_id(text)
    key = (file, line, gb)
    site = sites.get(key)
    if site is None:
        # a break_reasons entry without an id repeats a logged one at the same line
        same_line = [s for k, s in sites.items() if k[:2] == (file, line)]
        if gb is None and same_line:
            site = same_line[0]
        elif gb is not None and (file, line, None) in sites:
            # the id-less record came first (``Graph break from `Tensor.item()`...``): same site
            site = sites.pop((file, line, None))
            site.gb_id, site.reason = gb, dynamo_logs.gb_type(text)
            site.explanation, site.hints = dynamo_logs.explanation(text), dynamo_logs.hints(text)
            sites[key] = site
        else:
            site = sites[key] = BreakSite(
                file,
                line,
                function,
                gb,
                dynamo_logs.gb_type(text),
                dynamo_logs.explanation(text),
                dynamo_logs.hints(text),
                user,
            )
    site.count += 1
    site.sources.add(source)
    if len(user) > len(site.frames):
        site.frames = user


def _count_ops(graphs, names: set[str]) -> tuple[int, dict[str, int]]:
    total = 0
    by_module: dict[str, int] = {}
    for graph in graphs:
        for node in graph.graph.nodes:
            if node.op not in ("call_function", "call_method", "call_module"):
                continue
            total += 1
            stack = node.meta.get("nn_module_stack") or {}
            for entry in stack.values():
                path = module_path(entry[0] if isinstance(entry, tuple) else str(entry))
                if path in names:
                    by_module[path] = by_module.get(path, 0) + 1
    return total, by_module
