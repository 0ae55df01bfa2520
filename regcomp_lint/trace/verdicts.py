"""Dynamo's verdicts, each from a real compile with ``backend="eager"`` (cheap: no codegen).

- ``whole_model``: ``fullgraph=True`` on the whole model. When explain already traced one graph
  with no break, that *is* the proof (``fullgraph=True`` only captures more), so it is not
  compiled twice.
- ``regional``: per group, the first block compiled in place with ``fullgraph=True`` and the
  model run: ok, or the ``Unsupported`` error with its id and line. Then every block of every
  group compiled in place (``fullgraph=False``, as regional compilation does) and the model run on
  the batch and on a second batch shorter on its dynamic dimension: every recompile, with the
  guard that failed and the block that triggered it, and whether ``recompile_limit`` was hit
  (after that the remaining blocks silently run eagerly).
All compiles are undone afterwards: the model is left as it came.
"""

from __future__ import annotations

import contextlib
import re
import traceback
from dataclasses import dataclass, field

from regcomp_lint.trace import dynamo_logs
from regcomp_lint.trace.batch import Batch
from regcomp_lint.trace.loading import innermost_user_frame, user_error
from regcomp_lint.trace.regions import RegionGraph

_RECOMPILING = re.compile(r"Recompiling function (\S+) in (.+):(\d+)")
_GUARD = re.compile(r"^\s*-\s+\d+/\d+:\s+(.+?)(?:\s{2,}#|\s*$)", re.MULTILINE)
_GUARD_SITE = re.compile(r"#\s+(\S+\.py):(\d+) in \S+")
_HINT = re.compile(r"\(HINT: (.+?)\)\s*$", re.MULTILINE)
_LIMIT = re.compile(r"hit config\.(recompile_limit|cache_size_limit) \((\d+)\)")


@dataclass
class Verdict:
    ok: bool | None                 # None: undecided (not called, or the run failed for another reason)
    how: str                        # "compiled" | "explain" | "not called" | "skipped"
    gb_id: str | None = None
    reason: str | None = None
    file: str | None = None
    line: int | None = None


@dataclass
class Recompile:
    region: str
    reason: str
    kind: str                       # "attribute" | "shape" | "other"
    file: str | None = None
    line: int | None = None
    hint: str | None = None


@dataclass
class RegionalRun:
    fullgraph: dict[str, Verdict] = field(default_factory=dict)      # region path -> verdict
    recompiles: list[Recompile] = field(default_factory=list)
    limit_hit: str | None = None     # "recompile_limit (8) hit at transformer.h.8"
    second_batch: str | None = None  # what the shape probe changed, or why it did not run
    error: str | None = None


def _unsupported_verdict(exc: BaseException) -> Verdict:
    text = str(exc)
    frames = getattr(exc, "real_stack", None)
    frame = innermost_user_frame(frames) if frames else None
    if frame is None:
        frame = innermost_user_frame(traceback.extract_tb(exc.__traceback__))
    return Verdict(False, "compiled", dynamo_logs.gb_id(text), dynamo_logs.gb_type(text).splitlines()[0][:200],
                   frame.filename if frame else None, frame.lineno if frame else None)


def whole_model(model, batch: Batch, one_clean_graph: bool) -> Verdict:
    if one_clean_graph:
        return Verdict(True, "explain")
    import torch
    import torch._dynamo as dynamo

    dynamo.reset()
    try:
        with dynamo_logs.collecting(graph_breaks=False, recompiles=False):
            compiled = torch.compile(model, backend="eager", fullgraph=True)
            batch.call(compiled)
    except dynamo.exc.Unsupported as exc:
        return _unsupported_verdict(exc)
    except Exception as exc:  # noqa: BLE001 - anything else is not a fullgraph verdict
        return Verdict(None, "compiled", reason=user_error(exc))
    finally:
        dynamo.reset()
    return Verdict(True, "compiled")


def regional(model, batch: Batch, regions: RegionGraph, dynamic_dim: int | None) -> RegionalRun:
    run = RegionalRun()
    modules = dict(model.named_modules())
    run.fullgraph = _region_fullgraph(model, batch, regions, modules)
    if regions.groups:
        _recompile_probe(model, batch, regions, modules, dynamic_dim, run)
    return run


def _region_fullgraph(model, batch: Batch, regions: RegionGraph, modules: dict) -> dict[str, Verdict]:
    """Verdict per region: every region that is not a group member, and the first member of each
    group, compiled with ``fullgraph=True``; one run of the model. A region that raises is the one
    running when the error came; it is recorded, left eager, and the model runs again, until a
    run passes (one run per failing region, plus one)."""
    import torch._dynamo as dynamo

    candidates = [r for r in regions.regions if r not in regions.group_of or regions.group_of[r].members[0] == r]
    candidates = [r for r in candidates if r in modules and r != ""]
    verdicts: dict[str, Verdict] = {}
    pending = list(candidates)
    for _ in range(len(candidates) + 1):
        if not pending:
            break
        dynamo.reset()
        with compiled_regions(model, modules, pending, fullgraph=True) as calls:
            try:
                with dynamo_logs.collecting(graph_breaks=False, recompiles=False):
                    batch.call(model)
            except dynamo.exc.Unsupported as exc:
                if not calls:
                    break
                culprit = calls[-1][1]
                verdicts[culprit] = _unsupported_verdict(exc)
                pending.remove(culprit)
                continue
            except Exception as exc:  # noqa: BLE001 - not a fullgraph verdict
                for path in pending:
                    verdicts[path] = Verdict(None, "compiled", reason=user_error(exc))
                break
        called = {path for _, path in calls}
        for path in pending:
            verdicts[path] = Verdict(True, "compiled") if path in called else Verdict(None, "not called")
        pending = []
    dynamo.reset()
    out: dict[str, Verdict] = {}
    for region in regions.regions:
        group = regions.group_of.get(region)
        source = group.members[0] if group else region
        if source in verdicts:
            out[region] = verdicts[source]
    return out


@contextlib.contextmanager
def compiled_regions(model, modules: dict, paths: list[str], fullgraph: bool, marks=None):
    """Swap each region for ``torch.compile(region, backend="eager")`` in its parent, for the
    duration; yield the list of ``(mark, path)`` calls as they start (``mark``: what ``marks()``
    returned then, e.g. how many log records there were).

    Out of place on purpose: in torch 2.13 ``nn.Module.compile()`` on a torch.nn leaf
    (``nn.Linear``) finds its frames in dynamo's skip list and compiles nothing (with
    ``fullgraph=True`` it raises), while ``torch.compile(module)`` traces it.
    """
    import torch

    calls: list[tuple[int, str]] = []
    originals = []
    try:
        for path in paths:
            parent_path, _, name = path.rpartition(".")
            parent = modules[parent_path]
            original = parent._modules[name]
            compiled = torch.compile(original, backend="eager", fullgraph=fullgraph)
            compiled.register_forward_pre_hook(_recorder(calls, path, marks))
            parent._modules[name] = compiled
            originals.append((parent, name, original))
        yield calls
    finally:
        for parent, name, original in originals:
            parent._modules[name] = original


def _recorder(calls: list, path: str, marks):
    def hook(module, args):
        calls.append((marks() if marks else 0, path))

    return hook


def from_explain(regions: RegionGraph, placed) -> RegionalRun:
    """Region verdicts without running eagerly: a region is blocked when explain placed a break
    in it that ``fullgraph=True`` does not capture, ok when it placed none."""
    from regcomp_lint.knowledge.graph_breaks import FULLGRAPH_CAPTURED

    run = RegionalRun(second_batch="unknown: the model cannot run eagerly on this device")
    blocked: dict[str, Verdict] = {}
    for item in placed:
        if item.site.gb_id in FULLGRAPH_CAPTURED:
            continue
        for region in item.regions:
            blocked.setdefault(region, Verdict(False, "explain", item.site.gb_id, item.site.reason,
                                               item.site.file, item.site.line))
    for region in regions.regions:
        run.fullgraph[region] = blocked.get(region, Verdict(True, "explain"))
    return run


def _tracking(compiled_call, path: str, active: list[str], called: set[str]):
    """Keep ``active`` as the stack of compiled regions running, to name the one that raised."""

    def call(*args, **kwargs):
        called.add(path)
        active.append(path)
        result = compiled_call(*args, **kwargs)
        active.pop()
        return result

    return call


def _recompile_probe(model, batch, regions, modules, dynamic_dim, run: RegionalRun) -> None:
    import torch._dynamo as dynamo

    dynamo.reset()
    members = [m for g in regions.groups for m in g.members]
    with dynamo_logs.collecting(graph_breaks=False, recompiles=True) as logs:
        with compiled_regions(model, modules, members, fullgraph=False, marks=logs.mark) as markers:
            try:
                batch.call(model)
                second = batch.resized(dynamic_dim) if dynamic_dim is not None else None
                if second is None:
                    run.second_batch = "no dimension to vary"
                else:
                    smaller, old, new = second
                    run.second_batch = f"dim {dynamic_dim}: {old} -> {new}"
                    try:
                        smaller.call(model)
                    except Exception as exc:  # noqa: BLE001 - a model that needs a fixed size
                        run.second_batch += f" (the model rejected it: {user_error(exc)})"
            except Exception as exc:  # noqa: BLE001
                run.error = user_error(exc)
        records = list(logs.handler.records)
    seen: set[tuple[str, str]] = set()
    for index, record in enumerate(records):
        try:
            text = record.getMessage()
        except Exception:  # noqa: BLE001
            continue
        region = next((p for i, p in reversed(markers) if i <= index), "")
        limit = _LIMIT.search(text)
        if limit and run.limit_hit is None:
            run.limit_hit = f"{limit.group(1)} ({limit.group(2)}) hit at {region}: it and the blocks after it run eagerly"
        if not _RECOMPILING.search(text):
            continue
        guard = _GUARD.search(text)
        reason = guard.group(1).strip() if guard else text.splitlines()[0]
        if (region, reason) in seen:
            continue
        seen.add((region, reason))
        site = _GUARD_SITE.search(text)
        hint = _HINT.search(text)
        kind = "shape" if ("size mismatch" in reason or "stride mismatch" in reason) else (
            "attribute" if re.search(r"\bself\b|L\['self'\]", reason) else "other")
        run.recompiles.append(Recompile(region, reason, kind, site.group(1) if site else None,
                                        int(site.group(2)) if site else None, hint.group(1) if hint else None))



