"""The full trace report of a Llama-3-70B-shaped model on the meta device: time and peak memory.

Issue 4's target: < 30 s and < 1 GB peak RSS on the 2-core machine (a bare
`torch._dynamo.explain` of the same model: ~18 s, 0.5 GB). Each measurement is a fresh process
(`regcomp-lint trace --device meta --format json`, and a bare explain for comparison), timed
from the outside; peak RSS is the child's `ru_maxrss`.

    .venv/bin/python bench/trace_meta.py [--repeat 1]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
MODEL = os.path.join(HERE, "models", "llama70b.py")

BARE = f"""
import sys, torch, torch._dynamo as dynamo
sys.path.insert(0, {os.path.dirname(MODEL)!r})
import llama70b
with torch.device("meta"):
    model = llama70b.make_model()
    batch = llama70b.make_inputs()
dynamo.explain(model)(**batch)
"""


def measure_child(argv: list[str]) -> tuple[float, float, int, str]:
    """Wall time and peak RSS (MiB) of one child process."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    out = proc.stdout.read()
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    return seconds, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status), (out + err).decode(errors="replace")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    exe = os.path.join(os.path.dirname(sys.executable), "regcomp-lint")
    trace = [
        exe,
        "trace",
        "--model",
        f"{MODEL}:make_model",
        "--inputs",
        f"{MODEL}:make_inputs",
        "--device",
        "meta",
        "--format",
        "json",
    ]
    rows = []
    for i in range(args.repeat):
        bare_s, bare_mb, bare_rc, bare_out = measure_child([sys.executable, "-c", BARE])
        trace_s, trace_mb, trace_rc, trace_out = measure_child(trace)
        if bare_rc != 0 or trace_rc != 0:
            print(bare_out[-1500:], trace_out[-1500:], sep="\n")
            return 1
        report = json.loads(trace_out[: trace_out.rindex("}") + 1])
        rows.append((i + 1, bare_s, bare_mb, trace_s, trace_mb, report))
    import torch

    print(
        f"Llama-3-70B shape (80 layers, hidden 8192, vocab 128256) on meta; batch 1x64; "
        f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}; torch {torch.__version__}"
    )
    print()
    print(
        "| run | bare explain (s) | bare explain peak RSS (MiB) | trace report (s) | trace peak RSS (MiB) | groups | breaks | strategy |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for run, bare_s, bare_mb, trace_s, trace_mb, report in rows:
        groups = ", ".join(f"{g['name']} {g['class']}x{g['count']}" for g in report["groups"])
        print(
            f"| {run} | {bare_s:.1f} | {bare_mb:.0f} | {trace_s:.1f} | {trace_mb:.0f} | {groups} | "
            f"{len(report['graph_breaks'])} | {report['recommendation']['strategy']} |"
        )
    for run, *_, report in rows:
        steps = ", ".join(f"{k} {v:.1f} s" for k, v in report["timings"].items())
        print(f"run {run}, inside the trace: {steps}")
    worst_s = max(r[3] for r in rows)
    worst_mb = max(r[4] for r in rows)
    print()
    print(
        f"target < 30 s: {'PASS' if worst_s < 30 else 'FAIL'} ({worst_s:.1f} s); "
        f"target < 1024 MiB: {'PASS' if worst_mb < 1024 else 'FAIL'} ({worst_mb:.0f} MiB)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
