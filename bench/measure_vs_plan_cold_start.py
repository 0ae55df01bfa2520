"""``regcomp-lint trace --measure`` against ``bench/plan_cold_start.py`` on the same model, in one run.

    python bench/measure_vs_plan_cold_start.py                 # GPT-2 12 layers, n_embd 256, CPU
    python bench/measure_vs_plan_cold_start.py --out bench/results/measure_gpt2_cpu.md

Both measure a training step of ``plan_cold_start``'s GPT-2 (its ``make_model``/``make_inputs``)
with each strategy in a fresh process and an empty compiler cache. The check: ``--measure``
orders the strategies' cold starts as the hand-written benchmark does, and its own overhead (the
trace before the strategies, starting and reading the processes) is under 10% of its wall time.
Names: ``plan`` = ``plan-blocks`` (apply_plan, each block compiled in place), ``nested`` =
``plan-nested``, ``regions`` = ``compile_regions``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench" / "plan_cold_start.py"
PAIRS = {"full": "full", "regions": "regions", "plan": "plan-blocks", "nested": "plan-nested"}
OVERHEAD_TARGET = 0.10


def run_measure(steps: int, warmup: int) -> tuple[dict, float]:
    command = [
        sys.executable,
        "-m",
        "regcomp_lint",
        "trace",
        "--model",
        f"{BENCH}:make_model",
        "--inputs",
        f"{BENCH}:make_inputs",
        "--device",
        "cpu",
        "--measure",
        "--strategies",
        "eager," + ",".join(PAIRS),
        "--steps",
        str(steps),
        "--warmup",
        str(warmup),
        "--max-seconds",
        "900",
        "--format",
        "json",
    ]
    start = time.perf_counter()
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, env=_env())
    wall = time.perf_counter() - start
    if result.returncode != 0:
        raise SystemExit(f"trace --measure failed (exit {result.returncode}):\n{result.stderr[-3000:]}")
    return json.loads(result.stdout), wall


def run_bench(steps: int, warmup: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "runs.json"
        command = [sys.executable, str(BENCH), "--repeat", "1", "--variants", ",".join(PAIRS.values())]
        command += ["--steps", str(steps), "--warmup", str(warmup), "--json", str(out)]
        result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, env=_env())
        if not out.exists():
            raise SystemExit(f"plan_cold_start.py failed (exit {result.returncode}):\n{result.stderr[-3000:]}")
        return json.loads(out.read_text())


def _env() -> dict:
    return dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--out", help="also write the markdown here")
    args = ap.parse_args()
    load = os.getloadavg()[0]
    measured, measure_wall = run_measure(args.steps, args.warmup)
    bench = run_bench(args.steps, args.warmup)

    rows = {r["strategy"]: r for r in measured["measure"]["strategies"]}
    lines = [
        "# `trace --measure` vs `bench/plan_cold_start.py`: GPT-2 12 layers, n_embd 256, CPU, training step",
        "",
        f"Load average at the start {load:.2f}; {os.cpu_count()} CPUs; steady = median of {args.steps} steps "
        f"after {args.warmup}; one fresh process and empty compiler cache per strategy in both tools.",
        "",
        "| strategy | --measure cold s | plan_cold_start cold s | --measure warm s | --measure steady ms "
        "| plan_cold_start steady ms | cold × full | steady × full | peak RSS MiB | graphs | breaks | recompiles |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name in ["eager", *PAIRS]:
        r = rows.get(name)
        b = (bench["runs"].get(PAIRS.get(name, ""), []) or [None])[0]
        if r is None or not r["ok"]:
            lines.append(f"| {name} | failed: {r and r['error']} | {b and round(b['cold_s'], 1)} | | | | | | | | | |")
            continue
        lines.append(
            f"| {name} | {r['cold_start_s']:.1f} | {b['cold_s']:.1f} | {r['warm_start_s'] or float('nan'):.1f} "
            f"| {r['steady_median_ms']:.1f} | {b['steady_ms']:.1f} | {r['cold_vs_full']:.2f} | {r['steady_vs_full']:.2f} "
            f"| {r['peak_memory_bytes'] / 2**20:.0f} | {r['graphs']} | {r['graph_breaks']} | {r['recompiles']} |"
            if b
            else f"| {name} | {r['cold_start_s']:.1f} | — | {r['warm_start_s'] or float('nan'):.1f} | "
            f"{r['steady_median_ms']:.1f} | — | {r['cold_vs_full']:.2f} | {r['steady_vs_full']:.2f} "
            f"| {r['peak_memory_bytes'] / 2**20:.0f} | {r['graphs']} | {r['graph_breaks']} | {r['recompiles']} |"
        )
    both = [n for n in PAIRS if rows.get(n, {}).get("ok") and bench["runs"].get(PAIRS[n])]
    ours = sorted(both, key=lambda n: rows[n]["cold_start_s"])
    theirs = sorted(both, key=lambda n: bench["runs"][PAIRS[n]][0]["cold_s"])
    overhead = measured["measure"]["overhead"]
    outside = (measure_wall - overhead["strategy_processes_s"]) / measure_wall
    lines += [
        "",
        f"Cold-start order, --measure: {' < '.join(ours)}; plan_cold_start.py: {' < '.join(theirs)} "
        f"-> {'same order' if ours == theirs else 'DIFFERENT order'}",
        f"--measure wall {measure_wall:.0f} s, strategies' processes {overhead['strategy_processes_s']:.0f} s: "
        f"overhead {outside:.1%} (target < {OVERHEAD_TARGET:.0%}) -> {'PASS' if outside < OVERHEAD_TARGET else 'FAIL'}",
        f"--measure winner (balanced): {measured['measure']['winner']}",
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(text, encoding="utf-8")
    return 0 if ours == theirs and outside < OVERHEAD_TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
