"""How long `regcomp-lint trace` takes next to a bare `torch._dynamo.explain` of the same model.

Issue 4's target: the full trace report for GPT-2 (12 layers, n_embd 256, batch 2x64) takes at
most 2x a bare `torch._dynamo.explain` of the same model and batch, measured in the same process.
Both are warmed up first on a tiny model (the first dynamo use in a process pays one-off costs),
then run alternately `--repeat` times; the table shows each run and the median ratio.

    .venv/bin/python bench/trace_speed.py [--repeat 3] [--layers 12]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))


def gpt2(layers: int, embd: int):
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    config = GPT2Config(
        n_layer=layers, n_embd=embd, n_head=8, vocab_size=8192, n_positions=128, bos_token_id=0, eos_token_id=0
    )
    torch.manual_seed(0)
    return GPT2LMHeadModel(config)


def bare_explain(model, ids) -> float:
    import torch._dynamo as dynamo

    dynamo.reset()
    start = time.perf_counter()
    dynamo.explain(model)(ids)
    return time.perf_counter() - start


def full_trace(model, ids) -> tuple[float, dict]:
    from regcomp_lint.trace import report
    from regcomp_lint.trace.analysis import analyze
    from regcomp_lint.trace.batch import Batch

    start = time.perf_counter()
    analysis = analyze(model, Batch((ids,)), "cpu")
    report.to_text(analysis)
    return time.perf_counter() - start, analysis.timings


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--embd", type=int, default=256)
    args = parser.parse_args()
    import torch

    warm = gpt2(1, 32)
    bare_explain(warm, torch.randint(0, 8192, (1, 8)))
    full_trace(warm, torch.randint(0, 8192, (1, 8)))
    model = gpt2(args.layers, args.embd)
    ids = torch.randint(0, 8192, (2, 64))
    rows = []
    for i in range(args.repeat):
        explain_s = bare_explain(model, ids)
        trace_s, steps = full_trace(model, ids)
        rows.append((i + 1, explain_s, trace_s, trace_s / explain_s, steps))
    load = os.getloadavg()[0]
    print(
        f"GPT-2 {args.layers} layers, n_embd {args.embd}, batch 2x64, CPU ({os.cpu_count()} cores, load {load:.2f}), torch {torch.__version__}"
    )
    print()
    print(
        "| run | bare explain (s) | trace report (s) | ratio | inside the trace: explain / probe / fullgraph / regions (s) |"
    )
    print("|---|---|---|---|---|")
    for run, explain_s, trace_s, ratio, steps in rows:
        inside = " / ".join(f"{steps.get(k, 0):.2f}" for k in ("explain", "probe", "fullgraph", "regions_verdicts"))
        print(f"| {run} | {explain_s:.2f} | {trace_s:.2f} | {ratio:.2f}x | {inside} |")
    median = statistics.median(r[3] for r in rows)
    print(
        f"| median | {statistics.median(r[1] for r in rows):.2f} | {statistics.median(r[2] for r in rows):.2f} | {median:.2f}x | |"
    )
    print()
    print(f"target <= 2.00x: {'PASS' if median <= 2.0 else 'FAIL'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
