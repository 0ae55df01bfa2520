"""``trace --measure``: run each compilation strategy on the user's own model and time it.

Each strategy runs in a **fresh process** (``measure_step``) with **its own empty compiler
cache**: a new folder for ``TORCHINDUCTOR_CACHE_DIR`` (which holds the FX graph and AOT autograd
caches, both forced on) and ``TRITON_CACHE_DIR``. That run's first step is the cold start. A
second process with the same folders is the warm start (what a restarted job pays). A strategy
that fails (OOM, a compile error, ``--max-seconds``) is a row with its reason.

From the rows: ratios against eager and against full ``torch.compile``, the break-even point
(after how many steps a faster-stepping, slower-starting strategy has paid for its start), and
the winner for a goal (``cold-start``, ``steady``, ``balanced``), whose plan ``--plan`` writes.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field

from regcomp_lint.knowledge.torch_api import (
    COMPILER_CACHE_DIR_ENV,
    COMPILER_CACHE_SWITCHES,
    COMPILER_DISTURBING_ENV,
    TRITON_CACHE_DIR_ENV,
)
from regcomp_lint.plan import Plan
from regcomp_lint.trace.measure_step import STRATEGIES, Spec

GOALS = ("cold-start", "steady", "balanced")
#: ``balanced``: the fastest cold start among strategies whose steady step is within this of the best
BALANCED_STEADY_SLACK = 1.05
#: what each strategy is, for the table's legend and --help
DESCRIPTIONS = {
    "eager": "no compilation (the baseline)",
    "full": "torch.compile(model)",
    "regions": "accelerate.utils.compile_regions(model) (use_regional_compilation=True)",
    "plan": "regcomp_lint.apply_plan(model, traced plan)",
    "nested": "the traced plan with torch.compiler.nested_compile_region blocks",
}


@dataclass
class MeasureOptions:
    strategies: tuple[str, ...] = STRATEGIES
    step: str = "train"  # "train" | "infer"
    mixed_precision: str = "no"
    warmup: int = 3
    steps: int = 10
    max_seconds: float = 600.0
    optimize: str = "balanced"
    backend: str = "inductor"


@dataclass
class Row:
    strategy: str
    ok: bool
    error: str | None = None
    cold_start_s: float | None = None  # compile call + first step, in the cold process
    warm_start_s: float | None = None  # the same, in a second process reusing the cache
    steady_median_ms: float | None = None
    steady_min_ms: float | None = None
    steady_max_ms: float | None = None
    peak_memory_bytes: int | None = None
    peak_memory_kind: str | None = None
    graphs: int | None = None
    graph_breaks: int | None = None
    recompiles: int | None = None
    process_s: float = 0.0  # wall time of its processes, start to exit
    runs: list[dict] = field(default_factory=list)  # the raw child results (cold, warm)


def child_env(cache: str) -> dict[str, str]:
    """The environment of a measured process: its own compiler cache folders, caches on."""
    env = dict(os.environ)
    for name in COMPILER_DISTURBING_ENV:
        env.pop(name, None)
    env[COMPILER_CACHE_DIR_ENV] = cache
    env[TRITON_CACHE_DIR_ENV] = os.path.join(cache, "triton")
    env.update(COMPILER_CACHE_SWITCHES)
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (here, env.get("PYTHONPATH", "")) if p)
    return env


def run_child(spec: Spec, cache: str, timeout: float) -> tuple[dict, float]:
    """One process of one strategy: its result (``ok`` False with ``error`` on any failure) and
    its wall time. A timeout kills the whole process group (inductor's compile workers too)."""
    with tempfile.TemporaryDirectory(prefix="regcomp-measure-io-") as io:
        spec_path, result_path = os.path.join(io, "spec.json"), os.path.join(io, "result.json")
        with open(spec_path, "w", encoding="utf-8") as handle:
            json.dump(asdict(spec), handle)
        command = [sys.executable, "-m", "regcomp_lint.trace.measure_step", spec_path, result_path]
        start = time.perf_counter()
        process = subprocess.Popen(
            command, env=child_env(cache), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True
        )
        try:
            _, err = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(process)
            return {"ok": False, "error": f"timed out after {timeout:g} s (--max-seconds)"}, time.perf_counter() - start
        wall = time.perf_counter() - start
        if os.path.exists(result_path):
            with open(result_path, encoding="utf-8") as handle:
                return json.load(handle), wall
        last = (err or b"").decode("utf-8", "replace").strip().splitlines()[-1:] or [""]
        return {"ok": False, "error": f"the process died (exit {process.returncode}) {last[0][:300]}".strip()}, wall


def _kill_group(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        process.kill()
    process.wait()


def measure_strategy(spec: Spec, timeout: float) -> Row:
    """Cold run in a new, empty cache folder, then the warm run reusing it; the folder is removed."""
    cache = tempfile.mkdtemp(prefix=f"regcomp-measure-{spec.strategy}-")
    try:
        cold, cold_wall = run_child(spec, cache, timeout)
        row = Row(spec.strategy, bool(cold.get("ok")), cold.get("error"), process_s=cold_wall, runs=[cold])
        if not row.ok:
            return row
        warm, warm_wall = run_child(spec, cache, timeout)
        row.process_s += warm_wall
        row.runs.append(warm)
        row.cold_start_s = cold["first_step_s"]
        row.warm_start_s = warm["first_step_s"] if warm.get("ok") else None
        for name in ("steady_median_ms", "steady_min_ms", "steady_max_ms", "peak_memory_bytes", "peak_memory_kind"):
            setattr(row, name, cold[name])
        row.graphs, row.graph_breaks, row.recompiles = cold["graphs"], cold["graph_breaks"], cold["recompiles"]
        if not warm.get("ok"):
            row.error = f"warm run: {warm.get('error')}"
        return row
    finally:
        shutil.rmtree(cache, ignore_errors=True)


def plan_for(strategy: str, traced: Plan | None, backend: str) -> Plan | None:
    """The plan that compiles as ``strategy`` does (None: the strategy has no plan here)."""
    if strategy == "eager":
        return Plan(strategy="none", plugin={"backend": "no"})
    if strategy == "full":
        return Plan(strategy="full", plugin={"backend": backend, "use_regional_compilation": False})
    if traced is None or traced.strategy != "regional":
        return None
    if strategy == "regions":
        return Plan(strategy="regional", regions=list(traced.regions), plugin=dict(traced.plugin), model=traced.model)
    if strategy == "plan":
        return traced
    if strategy == "nested":
        return Plan.from_dict(dict(traced.to_dict(), method="nested"))
    return None


def skip_reason(strategy: str, traced: Plan | None) -> str | None:
    """Why a strategy cannot run on this model or this torch (None: it can)."""
    if strategy in ("plan", "nested") and (traced is None or traced.strategy != "regional"):
        return (
            f"the traced plan is {traced.strategy if traced else 'missing'}, not regional: no blocks to compile alone"
        )
    if strategy == "nested":
        import torch

        if not hasattr(torch.compiler, "nested_compile_region"):
            return f"torch {torch.__version__} has no torch.compiler.nested_compile_region"
    return None


def measure(
    source: dict, traced: Plan | None, device: str, options: MeasureOptions, progress, before_s: float = 0.0
) -> dict:
    """Every strategy's row plus the comparisons; ``source`` holds the ``Spec`` fields that say
    where the model comes from (``model``/``inputs`` or ``script``/``script_args``); ``before_s``
    is what the run spent before measuring (the trace), counted in the overhead."""
    started = time.perf_counter()
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="regcomp-measure-plans-") as plans:
        for index, strategy in enumerate(options.strategies, 1):
            reason = skip_reason(strategy, traced)
            if reason:
                rows.append(Row(strategy, False, f"skipped: {reason}"))
                continue
            plan_path = None
            if strategy in ("plan", "nested"):
                plan = plan_for(strategy, traced, options.backend)
                assert plan is not None  # skip_reason ruled out a missing regional plan
                plan_path = os.path.join(plans, f"{strategy}.json")
                plan.dump(plan_path)
            spec = Spec(
                strategy=strategy,
                plan=plan_path,
                device=device,
                mode=options.step,
                mixed_precision=options.mixed_precision,
                backend=options.backend,
                warmup=options.warmup,
                steps=options.steps,
                max_seconds=options.max_seconds,
                **source,
            )
            with progress.step(f"measuring {strategy} ({index}/{len(options.strategies)}, cold and warm process)"):
                rows.append(measure_strategy(spec, options.max_seconds))
    total = time.perf_counter() - started + before_s
    children = sum(r.process_s for r in rows)
    return summarize(rows, device, options, total, children)


def summarize(rows: list[Row], device: str, options: MeasureOptions, total_s: float, children_s: float) -> dict:
    """The JSON of ``--measure``: rows with their ratios, break-even points, the winner."""
    by_name = {r.strategy: r for r in rows if r.ok}
    eager, full = by_name.get("eager"), by_name.get("full")
    out_rows = []
    for row in rows:
        data = asdict(row)
        data["cold_vs_eager"] = _ratio(row.cold_start_s, eager.cold_start_s if eager else None)
        data["cold_vs_full"] = _ratio(row.cold_start_s, full.cold_start_s if full else None)
        data["steady_vs_eager"] = _ratio(row.steady_median_ms, eager.steady_median_ms if eager else None)
        data["steady_vs_full"] = _ratio(row.steady_median_ms, full.steady_median_ms if full else None)
        data["break_even_vs_full"] = break_even(row, full) if full and row is not full else None
        out_rows.append(data)
    winner = choose(rows, options.optimize)
    return {
        "device": device,
        "step": options.step,
        "mixed_precision": options.mixed_precision,
        "warmup": options.warmup,
        "steps": options.steps,
        "optimize": options.optimize,
        "winner": winner,
        "strategies": out_rows,
        "overhead": {
            "total_s": round(total_s, 3),
            "strategy_processes_s": round(children_s, 3),
            "fraction": round((total_s - children_s) / total_s, 4) if total_s else None,
        },
        "cache": f"each strategy: a new {COMPILER_CACHE_DIR_ENV} (FX graph and AOT autograd caches inside) and "
        f"{TRITON_CACHE_DIR_ENV}; warm start = a second process reusing them",
    }


def break_even(row: Row, full: Row) -> dict | None:
    """Steps after which full compile's faster step has paid back its slower start (or the
    other way round); None when one strategy is better on both counts or a figure is missing."""
    if not row.ok or None in (row.cold_start_s, row.steady_median_ms, full.cold_start_s, full.steady_median_ms):
        return None
    assert row.cold_start_s is not None and row.steady_median_ms is not None
    assert full.cold_start_s is not None and full.steady_median_ms is not None
    start_gap = full.cold_start_s - row.cold_start_s  # > 0: row starts faster
    step_gap = (row.steady_median_ms - full.steady_median_ms) / 1000.0  # > 0: full steps faster
    if start_gap > 0 and step_gap > 0:
        return {"steps": math.ceil(start_gap / step_gap), "after_it": "full"}
    if start_gap < 0 and step_gap < 0:
        return {"steps": math.ceil(start_gap / step_gap), "after_it": row.strategy}
    return None


def choose(rows: list[Row], goal: str) -> str | None:
    """The compiled strategy that best serves ``goal`` (eager is the baseline, not a candidate)."""
    measured = [r for r in rows if r.ok and r.strategy != "eager" and r.cold_start_s is not None and r.steady_median_ms]
    if not measured:
        return None
    if goal == "cold-start":
        return min(measured, key=lambda r: r.cold_start_s or 0.0).strategy
    if goal == "steady":
        return min(measured, key=lambda r: r.steady_median_ms or 0.0).strategy
    best = min(r.steady_median_ms or 0.0 for r in measured)
    near = [r for r in measured if (r.steady_median_ms or 0.0) <= best * BALANCED_STEADY_SLACK]
    return min(near, key=lambda r: r.cold_start_s or 0.0).strategy


def _ratio(value: float | None, reference: float | None) -> float | None:
    if value is None or not reference:
        return None
    return round(value / reference, 3)
