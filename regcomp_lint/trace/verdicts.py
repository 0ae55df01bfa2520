"""Dynamo's verdicts, each from a real compile with ``backend="eager"`` (cheap: no codegen).

- ``whole_model``: ``fullgraph=True`` on the whole model. When explain already traced one graph
  with no break, that *is* the proof (``fullgraph=True`` only captures more), so it is not
  compiled twice.
- ``regional``: one compile session as regional compilation runs it (see :func:`regional`):
  ``fullgraph=True`` per region (each group verified on its first block), then the recompiles
  of the other blocks (a per-block int attribute makes each one recompile, and past
  ``recompile_limit`` the rest silently run eagerly) and of a second, shorter batch.
Regions are swapped for compiled twins only for the duration: the model is left as it came.
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


@dataclass
class Verdict:
    ok: bool | None  # None: undecided (not called, or the run failed for another reason)
    how: str  # "compiled" | "explain" | "not called" | "skipped"
    gb_id: str | None = None
    reason: str | None = None
    file: str | None = None
    line: int | None = None


@dataclass
class Recompile:
    region: str
    reason: str
    kind: str  # "attribute" | "shape" | "tensor" | "other" (see recompile_kind)
    file: str | None = None
    line: int | None = None
    hint: str | None = None


@dataclass
class RegionalRun:
    fullgraph: dict[str, Verdict] = field(default_factory=dict)  # region path -> verdict
    recompiles: list[Recompile] = field(default_factory=list)
    limit_hit: str | None = None  # "recompile_limit (8) hit at transformer.h.8"
    second_batch: str | None = None  # what the shape probe changed, or why it did not run
    error: str | None = None


def _unsupported_verdict(exc: BaseException) -> Verdict:
    text = str(exc)
    frames = getattr(exc, "real_stack", None)
    frame = innermost_user_frame(frames) if frames else None
    if frame is None:
        frame = innermost_user_frame(traceback.extract_tb(exc.__traceback__))
    return Verdict(
        False,
        "compiled",
        dynamo_logs.gb_id(text),
        dynamo_logs.gb_type(text).splitlines()[0][:200],
        frame.filename if frame else None,
        frame.lineno if frame else None,
    )


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


#: How many blocks of a group the recompile probe compiles. A block after the first that
#: recompiles on a value of its own (its ``layer_idx``, its slot of a per-layer cache) shows what
#: every later block does, since each has a value of its own; compiling all 80 blocks of a large
#: model to watch it 79 times would double the cost of a trace. Input-property recompiles
#: (``requires_grad`` of the first block's input) are not taken for that pattern.
SAMPLED_MEMBERS = 3


def regional(
    model, batch: Batch, regions: RegionGraph, dynamic_dim: int | None, explain_clean: bool = False
) -> RegionalRun:
    """One compile session, as regional compilation would run it, with no cache reset inside:

    - regions compiled separately (``backend="eager"``): each group's first block and every region
      outside the groups with ``fullgraph=True`` (their verdicts; when explain traced the whole
      model as one clean graph the regions outside the groups are proven and not compiled again,
      ``explain_clean``); the next blocks of each group
      (``SAMPLED_MEMBERS`` in all) as regional compilation compiles them (``fullgraph=False``:
      they reuse the first block's code, or recompile, which is what is measured);
    - run 1, the batch: a region that raises ``Unsupported`` is the one running when it came;
      it gets its verdict, is recompiled with ``fullgraph=False``, and run 1 starts over (one
      extra run per failing region). The recompiles of the run that passes are the per-block
      ones; when the sampled blocks all recompile on one guard, every block does, and past
      ``recompile_limit`` the rest run eagerly (:func:`_per_block_limit` says from which block);
    - run 2, the batch shortened on ``dynamic_dim``, with only each group's first block still
      compiled: its recompiles are the shape ones.
    """
    import torch._dynamo as dynamo

    run = RegionalRun()
    modules = dict(model.named_modules())
    paths = [r for r in regions.regions if r in modules and r != ""]
    sampled = {m for g in regions.groups for m in g.members[:SAMPLED_MEMBERS]}
    paths = [r for r in paths if r not in regions.group_of or r in sampled]
    verdicts: dict[str, Verdict] = {}
    if explain_clean:
        # explain traced the whole model as one graph with no break: every region outside the
        # groups is proven, as the whole model is (see whole_model); only the blocks are compiled
        for path in [r for r in paths if r not in regions.group_of]:
            verdicts[path] = Verdict(True, "explain")
        paths = [r for r in paths if r in regions.group_of]
    strict = {r for r in paths if r not in regions.group_of or regions.group_of[r].members[0] == r}
    followers = [r for r in paths if r not in strict]
    # torch.nn leaf regions (Linear, LayerNorm...) share one code object, so each new one
    # "recompiles" it: room for all of them, or the later ones would silently stay eager
    limit = dynamo.config.recompile_limit
    with (
        dynamo_logs.collecting(graph_breaks=False, recompiles=True) as logs,
        dynamo.config.patch(recompile_limit=max(limit, len(paths) + limit)),
    ):
        for _ in range(len(strict) + 1):
            dynamo.reset()
            start = logs.mark()
            with compiled_regions(model, modules, {p: p in strict for p in paths}, marks=logs.mark) as swap:
                try:
                    batch.call(model)
                except dynamo.exc.Unsupported as exc:
                    culprit = swap.calls[-1][1] if swap.calls else None
                    if culprit not in strict or "recompile limit" in str(exc).lower():
                        run.error = user_error(exc)
                        break
                    verdicts[culprit] = _unsupported_verdict(exc)
                    strict.discard(culprit)
                    continue
                except Exception as exc:  # noqa: BLE001 - not a compile verdict
                    run.error = user_error(exc)
                    break
                called = {p for _, p in swap.calls}
                for path in strict:
                    verdicts[path] = Verdict(True, "compiled") if path in called else Verdict(None, "not called")
                _collect_recompiles(logs.handler.records, start, swap.calls, regions, run)
                run.limit_hit = _per_block_limit(regions, run, limit)
                # run 2 is about the blocks: everything but each group's first block back to eager
                swap.restore([p for p in paths if p not in regions.group_of or p in followers])
                if dynamic_dim is not None:
                    _second_batch(model, batch, dynamic_dim, logs, swap.calls, regions, run)
                else:
                    run.second_batch = "skipped"
                break
    dynamo.reset()
    for region in regions.regions:
        group = regions.group_of.get(region)
        source = group.members[0] if group else region
        if source in verdicts:
            run.fullgraph[region] = verdicts[source]
    return run


def _per_block_limit(regions: RegionGraph, run: RegionalRun, limit: int) -> str | None:
    """When every sampled block after the first recompiled, all blocks do: say from which block
    on ``recompile_limit`` leaves them eager (block i is the code's (i+1)-th compile)."""
    for group in regions.groups:
        followers = group.members[1:SAMPLED_MEMBERS]
        # a follower's first failing guard may be an input property (block 1 gets block 0's
        # output, which requires grad) hiding its own value: every follower recompiled, and at
        # least one on a value of its own
        recompiled = {r.region for r in run.recompiles if r.kind != "shape" and r.region in followers}
        on_value = [r for r in run.recompiles if r.kind in ("attribute", "other") and r.region in followers]
        if not followers or recompiled != set(followers) or not on_value:
            continue
        seen = ", ".join(followers)
        if group.count > limit:
            eager = group.members[limit:]
            return (
                f"every block of {group.collapsed} recompiles (seen on {seen}: a value of its own in the guard); with recompile_limit ({limit}) "
                f"{eager[0]}{' .. ' + eager[-1] if len(eager) > 1 else ''} ({len(eager)} of {group.count}) "
                "run eagerly, without a word"
            )
        return (
            f"every block of {group.collapsed} recompiles (seen on {seen}): {group.count} compiles instead of 1 "
            f"(within recompile_limit {limit}, but the cold start grows with depth)"
        )
    return None


def _second_batch(model, batch: Batch, dim: int, logs, calls, regions, run: RegionalRun) -> None:
    import torch._dynamo as dynamo

    second = batch.resized(dim)
    if second is None:
        run.second_batch = f"skipped: dim {dim} cannot shrink"
        return
    smaller, old, new = second
    run.second_batch = f"dim {dim}: {old} -> {new}"
    start = logs.mark()
    try:
        smaller.call(model)
    except dynamo.exc.Unsupported as exc:
        run.second_batch += f" (stopped: {dynamo_logs.gb_type(str(exc)).splitlines()[0]})"
    except Exception as exc:  # noqa: BLE001 - a model that needs a fixed size
        run.second_batch += f" (the model rejected it: {user_error(exc)})"
    _collect_recompiles(logs.handler.records, start, calls, regions, run)


class _Swapped:
    def __init__(self) -> None:
        self.calls: list[tuple[int, str]] = []
        self.originals: dict[str, tuple] = {}

    def restore(self, paths) -> None:
        for path in paths:
            if path in self.originals:
                parent, name, original = self.originals.pop(path)
                parent._modules[name] = original


@contextlib.contextmanager
def compiled_regions(model, modules: dict, paths: dict[str, bool], marks=None):
    """Swap each region for ``torch.compile(region, backend="eager", fullgraph=paths[region])`` in
    its parent, for the duration; ``swap.calls`` lists ``(mark, path)`` as calls start (``mark``:
    what ``marks()`` returned then, e.g. how many log records there were); ``swap.restore``
    puts some back early.

    Out of place on purpose: in torch 2.13 ``nn.Module.compile()`` on a torch.nn leaf
    (``nn.Linear``) finds its frames in dynamo's skip list and compiles nothing (with
    ``fullgraph=True`` it raises), while ``torch.compile(module)`` traces it.
    """
    import torch

    swap = _Swapped()
    try:
        for path, fullgraph in paths.items():
            parent_path, _, name = path.rpartition(".")
            parent = modules[parent_path]
            original = parent._modules[name]
            compiled = torch.compile(original, backend="eager", fullgraph=fullgraph)
            assert isinstance(compiled, torch.nn.Module)  # compiling a module gives an OptimizedModule
            compiled.register_forward_pre_hook(_recorder(swap.calls, path, marks))
            parent._modules[name] = compiled
            swap.originals[path] = (parent, name, original)
        yield swap
    finally:
        swap.restore(list(swap.originals))


def _recorder(calls: list, path: str, marks):
    def hook(module, args):
        calls.append((marks() if marks else 0, path))

    return hook


_PRIORITY = {"shape": 0, "attribute": 1, "other": 2, "tensor": 3}


def _relevant_guard(text: str):
    """A recompile record lists one failed guard per cached entry (newest first); the entry that
    tells why is the one failing on a size or a module value, not on another block's input
    properties (``requires_grad``), which merely says that entry was for someone else."""
    guards = list(_GUARD.finditer(text))
    if not guards:
        return None
    return min(guards, key=lambda g: _PRIORITY[recompile_kind(g.group(1))])


def recompile_kind(reason: str) -> str:
    """``shape`` (a size changed), ``tensor`` (requires_grad, dtype, device of an input),
    ``attribute`` (a value read from the module: ``self.layer_idx == 3``), ``other``."""
    if "size mismatch" in reason or "stride mismatch" in reason:
        return "shape"
    if "mismatch" in reason and "tensor" in reason:
        return "tensor"
    if re.search(r"\bself\b|L\['self'\]", reason):
        return "attribute"
    return "other"


def _collect_recompiles(records, start: int, calls, regions: RegionGraph, run: RegionalRun) -> None:
    """Recompiles of group members only: torch.nn leaf regions share one code object, so their
    "recompiles" are each other's entries, not a property of the region."""
    seen = {(r.region, r.reason) for r in run.recompiles}
    for index in range(start, len(records)):
        try:
            text = records[index].getMessage()
        except Exception:  # noqa: BLE001
            continue
        region = next((p for i, p in reversed(calls) if i <= index), "")
        if region not in regions.group_of or not _RECOMPILING.search(text):
            continue
        guard = _relevant_guard(text)
        reason = guard.group(1).strip() if guard else text.splitlines()[0]
        if (region, reason) in seen:
            continue
        seen.add((region, reason))
        end = text.find("\n", guard.end()) if guard else -1
        first = text[guard.start() : end if end != -1 else len(text)] if guard else ""  # that failure's own line
        site = _GUARD_SITE.search(first)
        hint = _HINT.search(first)
        kind = recompile_kind(reason)
        run.recompiles.append(
            Recompile(
                region,
                reason,
                kind,
                dynamo_logs.unshorten_torch_path(site.group(1)) if site else None,
                int(site.group(2)) if site else None,
                hint.group(1) if hint else None,
            )
        )


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
            blocked.setdefault(
                region, Verdict(False, "explain", item.site.gb_id, item.site.reason, item.site.file, item.site.line)
            )
    for region in regions.regions:
        run.fullgraph[region] = blocked.get(region, Verdict(True, "explain"))
    return run
