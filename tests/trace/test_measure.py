"""``trace --measure``: the comparisons (break-even, winner, ratios) by construction, the GPU
timing path with a stand-in for ``torch.cuda``, and real runs of tiny models in their own
processes and caches."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from regcomp_lint.cli.trace_command import STRATEGIES as CLI_STRATEGIES
from regcomp_lint.output.progress import StepLine
from regcomp_lint.trace import measure, measure_step, measure_table
from regcomp_lint.trace.measure import MeasureOptions, Row, break_even, choose, summarize
from tests.trace.conftest import REPO

pytest.importorskip("torch")

PV = "fixtures/trace/models/prints_and_views.py"
ROW_FIELDS = {
    "strategy",
    "ok",
    "error",
    "cold_start_s",
    "warm_start_s",
    "steady_median_ms",
    "steady_min_ms",
    "steady_max_ms",
    "peak_memory_bytes",
    "peak_memory_kind",
    "graphs",
    "graph_breaks",
    "recompiles",
    "process_s",
    "runs",
    "cold_vs_eager",
    "cold_vs_full",
    "steady_vs_eager",
    "steady_vs_full",
    "break_even_vs_full",
}


def row(name, cold, steady_ms, ok=True):
    return Row(
        name, ok, cold_start_s=cold, steady_median_ms=steady_ms, steady_min_ms=steady_ms, steady_max_ms=steady_ms
    )


def test_the_cli_and_the_child_name_the_same_strategies():
    assert CLI_STRATEGIES == measure_step.STRATEGIES


def test_break_even_is_when_the_faster_step_has_paid_for_the_slower_start():
    full = row("full", 50.0, 100.0)
    # regions starts 27 s sooner and steps 10 ms slower: full catches up after 2700 steps
    assert break_even(row("regions", 23.0, 110.0), full) == {"steps": 2700, "after_it": "full"}
    # slower start, faster step: the other one pays off
    assert break_even(row("plan", 60.0, 90.0), full) == {"steps": 1000, "after_it": "plan"}
    assert break_even(row("plan", 20.0, 90.0), full) is None  # better on both counts
    assert break_even(row("broken", None, None, ok=False), full) is None


@pytest.mark.parametrize("goal, expected", [("cold-start", "regions"), ("steady", "full"), ("balanced", "plan")])
def test_the_winner_depends_on_the_goal_and_eager_is_only_the_baseline(goal, expected):
    rows = [
        row("eager", 0.1, 50.0),  # fastest at everything here, but not a compilation
        row("full", 50.0, 100.0),
        row("regions", 20.0, 130.0),
        row("plan", 25.0, 104.0),  # within 5% of full's step, and a much faster start
        row("nested", 1.0, 1.0, ok=False),
    ]
    assert choose(rows, goal) == expected


def test_summary_has_every_field_and_the_ratios():
    rows = [row("eager", 1.0, 200.0), row("full", 50.0, 100.0), row("regions", 25.0, 103.0), Row("nested", False, "x")]
    data = summarize(rows, "cpu", MeasureOptions(), total_s=110.0, children_s=100.0)
    assert {
        "device",
        "step",
        "mixed_precision",
        "warmup",
        "steps",
        "optimize",
        "winner",
        "strategies",
        "overhead",
    } <= set(data)
    by = {r["strategy"]: r for r in data["strategies"]}
    for r in by.values():
        assert ROW_FIELDS <= set(r), ROW_FIELDS - set(r)
    assert by["regions"]["cold_vs_full"] == 0.5 and by["regions"]["steady_vs_full"] == 1.03
    assert by["regions"]["steady_vs_eager"] == 0.515
    assert by["regions"]["break_even_vs_full"] == {"steps": 8334, "after_it": "full"}
    assert data["overhead"]["fraction"] == pytest.approx(10 / 110, abs=1e-3)
    text = measure_table.to_text(data)
    assert "regions: 2.0× faster cold start than full, steady step +3%; full pays off after 8334 steps" in text
    assert "nested: x" in text and "winner for --optimize balanced: regions" in text


class _Event:
    log: list = []

    def __init__(self, enable_timing=False):
        assert enable_timing
        self.recorded = False

    def record(self):
        self.recorded = True
        _Event.log.append("record")

    def synchronize(self):
        _Event.log.append("event-sync")

    def elapsed_time(self, end):
        assert self.recorded and end.recorded
        return 250.0  # ms


class _FakeCuda:
    Event = _Event

    def __init__(self):
        self.synchronized = 0

    def synchronize(self):
        self.synchronized += 1

    def max_memory_allocated(self):
        return 123 << 20


def test_gpu_steps_are_timed_with_cuda_events_read_after_a_synchronize():
    _Event.log = []
    cuda = _FakeCuda()
    timer = measure_step.StepTimer("cuda:0", cuda)
    calls = []
    assert timer.time(lambda: calls.append(1)) == 0.25
    assert calls == [1] and _Event.log == ["record", "record", "event-sync"]
    timer.synchronize()
    assert cuda.synchronized == 1
    assert measure_step.peak_memory("cuda", cuda) == (123 << 20, "cuda max allocated")


def test_cpu_steps_use_the_clock_and_peak_rss():
    timer = measure_step.StepTimer("cpu", _FakeCuda())
    assert timer.cuda is None and timer.time(lambda: None) >= 0
    size, kind = measure_step.peak_memory("cpu")
    assert kind == "peak RSS" and size > 10 << 20


def test_the_training_loss_is_found_in_common_outputs():
    import torch

    scalar = torch.tensor(2.0)
    assert measure_step.loss_of(scalar) is scalar
    assert measure_step.loss_of({"loss": scalar, "logits": torch.ones(2)}) is scalar
    assert float(measure_step.loss_of((torch.ones(2, 3) * 3, None))) == 3.0
    with pytest.raises(ValueError, match="no tensor to train on"):
        measure_step.loss_of("text")


def test_a_strategy_without_a_regional_plan_is_a_skipped_row():
    from regcomp_lint.plan import Plan

    full_plan = Plan(strategy="full", plugin={"backend": "inductor"})
    assert "not regional" in measure.skip_reason("plan", full_plan)
    assert measure.skip_reason("full", full_plan) is None
    assert measure.plan_for("eager", None, "inductor").strategy == "none"
    regional = Plan(
        strategy="regional", regions=["blocks"], plugin={"backend": "inductor", "use_regional_compilation": True}
    )
    assert measure.plan_for("nested", regional, "inductor").method == "nested"


def test_a_strategy_that_runs_past_max_seconds_is_a_row_not_a_crash(tmp_path):
    spec = measure_step.Spec(strategy="eager", model=f"{REPO}/{PV}:make_model", inputs=f"{REPO}/{PV}:make_inputs")
    result, wall = measure.run_child(spec, str(tmp_path), timeout=0.5)  # importing torch alone takes longer
    assert result == {"ok": False, "error": "timed out after 0.5 s (--max-seconds)"} and wall < 30


def test_each_strategy_runs_in_its_own_process_and_its_own_empty_cache():
    """Real runs (inductor, inference steps to keep it short): distinct processes and cache
    folders, each empty at the cold start and filled for the warm one; a failing strategy is a row."""
    options = MeasureOptions(strategies=("eager", "full", "nested"), step="infer", steps=2, warmup=1)
    from regcomp_lint.plan import Plan

    traced = Plan(
        strategy="regional",
        regions=["blocks"],
        plugin={"backend": "inductor", "fullgraph": True, "use_regional_compilation": True},
    )
    source = {"model": f"{REPO}/{PV}:make_model", "inputs": f"{REPO}/{PV}:make_inputs"}
    data = measure.measure(source, traced, "cpu", options, StepLine(sys.stderr, enabled=False))
    json.dumps(data)
    by = {r["strategy"]: r for r in data["strategies"]}
    assert by["eager"]["ok"] and by["full"]["ok"], data
    # "nested" compiles the whole model, fullgraph=True included, and the model prints: a row
    # with dynamo's reason, not a crash
    assert by["nested"]["ok"] is False and "Unsupported" in by["nested"]["error"]
    runs = [run for r in data["strategies"] for run in r["runs"] if run.get("ok")]
    assert len({run["pid"] for run in runs}) == len(runs) and os.getpid() not in {run["pid"] for run in runs}
    caches = {r["strategy"]: {run["cache_dir"] for run in r["runs"]} for r in data["strategies"]}
    assert [len(by[name]["runs"]) for name in ("eager", "full", "nested")] == [2, 2, 1]  # no warm run after a failure
    assert all(len(c) == 1 for c in caches.values())  # cold and warm share one folder
    assert len({next(iter(c)) for c in caches.values()}) == len(caches)  # and no strategy shares another's
    for name in ("eager", "full"):
        cold, warm = by[name]["runs"]
        assert cold["cache_files_at_start"] == 0
        assert not os.path.exists(cold["cache_dir"])  # removed afterwards
    warm = by["full"]["runs"][1]
    assert warm["cache_files_at_start"] > 0 and warm["fx_graph_cache_hits"] >= 1  # it reused the cold one's cache
    for name in ("eager", "full"):
        assert ROW_FIELDS <= set(by[name])
        assert by[name]["cold_start_s"] > 0 and by[name]["warm_start_s"] > 0 and by[name]["steady_median_ms"] > 0
    assert by["full"]["graphs"] >= 1 and by["eager"]["graphs"] == 0


def test_measure_on_the_command_line_json_and_plan(tmp_path):
    plan = tmp_path / "plan.json"
    command = [
        sys.executable,
        "-m",
        "regcomp_lint",
        "trace",
        "--model",
        f"{PV}:make_model",
        "--inputs",
        f"{PV}:make_inputs",
        "--backend",
        "aot_eager",
        "--measure",
        "--strategies",
        "full,regions",
        "--steps",
        "2",
        "--warmup",
        "0",
        "--optimize",
        "cold-start",
        "--format",
        "json",
        "--plan",
        str(plan),
    ]
    result = subprocess.run(
        command,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
        env=dict(os.environ, PYTHONPATH=str(REPO)),
    )
    assert result.returncode == 0, result.stderr[-3000:]
    data = json.loads(result.stdout)
    measured = data["measure"]
    assert [r["strategy"] for r in measured["strategies"]] == ["full", "regions"]
    assert measured["optimize"] == "cold-start" and measured["winner"] in ("full", "regions")
    assert data["recommendation"]["why"][0].startswith("measured: regions:")
    written = json.loads(plan.read_text(encoding="utf-8"))
    assert written["strategy"] == ("full" if measured["winner"] == "full" else "regional")
    assert data["recommendation"]["strategy"] == written["strategy"]  # the report and the plan agree
    assert data["plan"] == written


def test_unknown_strategy_is_a_usage_error():
    from click.testing import CliRunner

    from regcomp_lint.cli.commands import main

    result = CliRunner().invoke(main, ["trace", "--model", "a.py:m", "--inputs", "a.py:i", "--strategies", "full,jit"])
    assert result.exit_code == 2 and "unknown jit" in result.stderr


def test_measure_on_the_meta_device_is_refused_before_anything_runs():
    from click.testing import CliRunner

    from regcomp_lint.cli.commands import main

    args = ["trace", "--model", "a.py:m", "--inputs", "a.py:i", "--measure", "--device", "meta"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2 and "--measure" in result.stderr and "meta" in result.stderr


def test_a_sequential_stack_measures_every_field():
    """The ViT's blocks are an nn.Sequential: compile_regions compiles the model whole there, the
    traced plan block by block; both are rows with every field."""
    from regcomp_lint.plan import Plan

    vit = f"{REPO}/fixtures/trace/models/vit_sequential.py"
    source = {"model": f"{vit}:make_model", "inputs": f"{vit}:make_inputs"}
    traced = Plan(
        strategy="regional", regions=["blocks"], plugin={"backend": "aot_eager", "use_regional_compilation": True}
    )
    options = MeasureOptions(strategies=("regions", "plan"), step="infer", steps=2, warmup=0, backend="aot_eager")
    data = measure.measure(source, traced, "cpu", options, StepLine(sys.stderr, enabled=False))
    by = {r["strategy"]: r for r in data["strategies"]}
    for name in ("regions", "plan"):
        assert by[name]["ok"], by[name]
        assert ROW_FIELDS <= set(by[name]) and by[name]["graphs"] >= 1 and by[name]["steady_median_ms"] > 0
