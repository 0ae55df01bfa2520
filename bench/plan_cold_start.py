"""Cold start and steady step of a GPT-2 training step: full compile, compile_regions, an applied plan.

Issue 4's target for ``apply_plan`` (a plan written by an earlier process, applied in the
training job): cold start <= 1.05 x Accelerate's ``compile_regions`` and steady step <= 1.02 x
full ``torch.compile`` -- the best of both.

    python bench/plan_cold_start.py                       # 12 layers, all variants, --repeat 2
    python bench/plan_cold_start.py --repeat 1 --variants full,regions,plan-nested
    python bench/plan_cold_start.py --device cuda         # when there is a GPU

The model: ``transformers.GPT2LMHeadModel(GPT2Config(n_layer=12, n_embd=256, n_head=4,
vocab_size=8192, n_positions=256, dropout 0))``, random weights (no hub access), training mode
(dropout 0 as in pretraining runs; it also makes every variant compute the same loss, which
the raw log shows), ``use_cache=False`` (a training step has no use for the KV cache, and with
it every block's ``cache.update(..., self.layer_idx)`` recompiles a regional compile, block
after block, up to the recompile limit), ``model.loss_type = "ForCausalLM"`` (transformers 5 does not recognise
``GPT2LMHeadModel``'s loss type and logs a warning on every call, which is a graph break inside
the compiled forward; with it set, the loss is inside the full-model graph). Batch 2 x 64 token
ids, labels = inputs. The step: forward with labels (the loss is computed by the model),
``loss.backward()``, ``AdamW.step()``, ``zero_grad()``; the optimizer stays eager in every
variant, so it adds the same time to each.

Variants, each in its own fresh Python process with its own new, empty compiler cache
(``TORCHINDUCTOR_CACHE_DIR`` = a new temporary directory, which also holds the FX-graph and
AOT-autograd caches and, on CUDA, ``TRITON_CACHE_DIR``; caches stay enabled, as in a real job,
but start empty):

- ``full``            ``torch.compile(model)``
- ``regions``         ``accelerate.utils.compile_regions(model)``
- ``plan-blocks``     ``apply_plan(model, plan.json)``, ``"method": "blocks"``: each GPT2Block
                      compiled in place, the glue and the loss eager
- ``plan-split``      ``apply_plan(model, plan.json)``, ``"method": "split"``: one in-place
                      compile of the whole model, split into graphs at the blocks: each block
                      is its own frame (compiled once for all 12); head and loss compiled,
                      ``GPT2Model.forward`` (it loops over the blocks) eager
- ``plan-nested``     ``apply_plan(model, plan.json)``, ``"method": "nested"``: one in-place
                      compile of the whole model with every GPT2Block marked
                      ``torch.compiler.nested_compile_region``

The plan files are written before any variant runs, by a separate process: ``regcomp-lint trace
--model ... --inputs ... --plan`` when this checkout has the tracer, else ``Plan(...).dump``
(the row says which).

Cold start = wall time of the compile call (``apply_plan`` includes reading the plan) + the
first training step. Steady step = median of ``--steps`` steps after ``--warmup`` steps. Each
variant runs ``--repeat`` times (variants take turns); the table shows the median of the
repeats (cold) and the median of the per-run medians (steady). The load average is printed: on
a shared machine compare ratios and rerun on a quiet one.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VARIANTS = ("full", "regions", "plan-blocks", "plan-split", "plan-nested")
METHODS = ("blocks", "split", "nested")
COLD_TARGET = 1.05  # x compile_regions cold start
STEADY_TARGET = 1.02  # x full torch.compile steady step


# ---------------------------------------------------------------------------------------------
# the model and the batch (also the factories handed to `regcomp-lint trace`)
# ---------------------------------------------------------------------------------------------
def _shape() -> dict:
    return json.loads(os.environ.get("PLAN_BENCH_SHAPE", "{}")) or {
        "n_layer": 12,
        "n_embd": 256,
        "n_head": 4,
        "vocab_size": 8192,
        "batch": 2,
        "seq": 64,
        "device": "cpu",
    }


def make_model():
    import transformers

    s = _shape()
    config = transformers.GPT2Config(
        n_layer=s["n_layer"],
        n_embd=s["n_embd"],
        n_head=s["n_head"],
        vocab_size=s["vocab_size"],
        n_positions=256,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
        use_cache=False,
    )
    model = transformers.GPT2LMHeadModel(config)
    model.loss_type = "ForCausalLM"
    return model.to(s["device"]).train()


def make_inputs():
    import torch

    s = _shape()
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(0, s["vocab_size"], (s["batch"], s["seq"]), generator=g).to(s["device"])
    return {"input_ids": ids, "labels": ids}


# ---------------------------------------------------------------------------------------------
# child: one variant in a fresh process
# ---------------------------------------------------------------------------------------------
def child(variant: str, plan_path: str | None, warmup: int, steps: int) -> dict:
    import torch

    if os.environ.get("PLAN_BENCH_THREADS"):
        torch.set_num_threads(int(os.environ["PLAN_BENCH_THREADS"]))
    torch.manual_seed(0)
    model = make_model()
    batch = make_inputs()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    device = _shape()["device"]

    def sync():
        if device.startswith("cuda"):
            torch.cuda.synchronize()

    def step(m):
        loss = m(**batch).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        sync()
        return loss

    import resource

    def cpu_s():
        """CPU seconds of this process and its children, live ones included (inductor's compile
        workers), so cold start can also be read as CPU time, which other load disturbs less."""
        r = resource.getrusage(resource.RUSAGE_SELF)
        c = resource.getrusage(resource.RUSAGE_CHILDREN)
        total = r.ru_utime + r.ru_stime + c.ru_utime + c.ru_stime
        try:
            import psutil

            for kid in psutil.Process().children(recursive=True):
                try:
                    t = kid.cpu_times()
                    total += t.user + t.system + t.children_user + t.children_system
                except psutil.Error:
                    pass
        except ImportError:
            pass
        return total

    sync()
    c0 = cpu_s()
    t0 = time.perf_counter()
    if variant == "full":
        compiled = torch.compile(model)
    elif variant == "regions":
        from accelerate.utils import compile_regions

        compiled = compile_regions(model)
    elif variant.startswith("plan"):
        from regcomp_lint.trace.apply import apply_plan

        compiled = apply_plan(model, plan_path)
        assert compiled is model
    elif variant == "eager":
        compiled = model
    else:
        raise SystemExit(f"unknown variant {variant}")
    t_compile = time.perf_counter() - t0
    first_loss = float(step(compiled))
    cold = time.perf_counter() - t0
    cold_cpu = cpu_s() - c0
    for _ in range(warmup):
        step(compiled)
    times = []
    for _ in range(steps):
        t = time.perf_counter()
        step(compiled)
        times.append(time.perf_counter() - t)
    from torch._dynamo.utils import counters

    return {
        "variant": variant,
        "cold_s": cold,
        "cold_cpu_s": cold_cpu,
        "compile_call_s": t_compile,
        "steady_ms": statistics.median(times) * 1000,
        "steady_min_ms": min(times) * 1000,
        "first_loss": first_loss,
        "graphs": int(counters["stats"].get("unique_graphs", 0)),
        "graph_breaks": int(sum(counters["graph_break"].values())),
    }


# ---------------------------------------------------------------------------------------------
# parent
# ---------------------------------------------------------------------------------------------
def _env_with_fresh_cache(shape: dict) -> tuple[dict, str]:
    """The environment ``trace --measure`` gives each strategy (one shared definition)."""
    from regcomp_lint.trace.measure import child_env

    cache = tempfile.mkdtemp(prefix="plan-bench-cache-")
    env = child_env(cache)
    env["PLAN_BENCH_SHAPE"] = json.dumps(shape)
    return env, cache


def write_plans(workdir: Path, shape: dict) -> tuple[dict[str, Path], str]:
    """Write the plan files in a separate, earlier process; return them and how they were made."""
    env, cache = _env_with_fresh_cache(shape)
    plans = {f"plan-{m}": workdir / f"plan-{m}.json" for m in METHODS}
    how = "Plan(...).dump"
    traced = workdir / "plan-traced.json"
    try:
        probe = subprocess.run(
            [sys.executable, "-m", "regcomp_lint", "trace", "--help"],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        has_tracer = probe.returncode == 0 and "--model" in probe.stdout and "--plan" in probe.stdout
        if has_tracer:
            ref = f"{Path(__file__).resolve()}"
            r = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "regcomp_lint",
                    "trace",
                    "--model",
                    f"{ref}:make_model",
                    "--inputs",
                    f"{ref}:make_inputs",
                    "--device",
                    shape["device"].split(":")[0],
                    "--plan",
                    str(traced),
                ],
                env=env,
                capture_output=True,
                text=True,
                timeout=600,
            )
            if r.returncode in (0, 1) and traced.exists():
                how = "regcomp-lint trace --plan (+ method)"
            else:
                print(
                    f"note: regcomp-lint trace failed (exit {r.returncode}); writing the plans with Plan.dump",
                    file=sys.stderr,
                )
                print(r.stderr[-2000:], file=sys.stderr)
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    code = (
        "import json, sys\n"
        "from pathlib import Path\n"
        "from regcomp_lint.plan import Plan\n"
        "traced = Path(sys.argv[1])\n"
        "if traced.exists():\n"
        "    base = Plan.load(traced).to_dict()\n"
        "else:\n"
        "    base = Plan(strategy='regional', regions=['transformer.h'],\n"
        "                plugin={'backend': 'inductor', 'use_regional_compilation': True},\n"
        "                why=['12 identical GPT2Block regions in transformer.h'], model='GPT2LMHeadModel').to_dict()\n"
        "for arg in sys.argv[2:]:\n"
        "    method, path = arg.split('=', 1)\n"
        "    d = dict(base, strategy='regional', method=method)\n"
        "    d['regions'] = d.get('regions') or ['transformer.h']\n"
        "    d['plugin'] = dict(d.get('plugin') or {}, use_regional_compilation=True)\n"
        "    if method == 'split':\n"
        "        d['plugin'].pop('fullgraph', None)  # split breaks the graph at every block\n"
        "    Plan.from_dict(d).dump(path)\n"
    )
    subprocess.run(
        [sys.executable, "-c", code, str(traced), *(f"{m}={plans['plan-' + m]}" for m in METHODS)], env=env, check=True
    )
    return plans, how


def run_variant(variant: str, plan: Path | None, shape: dict, warmup: int, steps: int) -> dict:
    env, cache = _env_with_fresh_cache(shape)
    try:
        cmd = [
            sys.executable,
            str(Path(__file__).resolve()),
            "--child",
            variant,
            "--warmup",
            str(warmup),
            "--steps",
            str(steps),
        ]
        if plan is not None:
            cmd += ["--plan-file", str(plan)]
        r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
        if r.returncode != 0:
            raise RuntimeError(f"{variant} failed (exit {r.returncode}):\n{r.stderr[-4000:]}")
        return json.loads(r.stdout.strip().splitlines()[-1])
    finally:
        shutil.rmtree(cache, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--threads", type=int, help="torch.set_num_threads in each variant (default: torch's)")
    ap.add_argument("--json", help="also write the raw runs here")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--plan-file", help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args.child:
        print(json.dumps(child(args.child, args.plan_file, args.warmup, args.steps)))
        return 0

    shape = dict(_shape(), n_layer=args.layers, device=args.device)
    if args.threads:
        os.environ["PLAN_BENCH_THREADS"] = str(args.threads)
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    for v in variants:
        if v not in VARIANTS + ("eager",):
            ap.error(f"unknown variant {v!r}; choose from {', '.join(VARIANTS)}, eager")
    load_before = os.getloadavg()
    started = time.time()
    with tempfile.TemporaryDirectory(prefix="plan-bench-") as tmp:
        plans, how = write_plans(Path(tmp), shape) if any(v.startswith("plan") for v in variants) else ({}, "")
        runs: dict[str, list[dict]] = {v: [] for v in variants}
        for i in range(args.repeat):
            for v in variants:
                try:
                    res = run_variant(v, plans.get(v), shape, args.warmup, args.steps)
                except RuntimeError as exc:
                    print(exc, file=sys.stderr)
                    continue
                runs[v].append(res)
                print(
                    f"  round {i + 1}: {v:12s} cold {res['cold_s']:6.1f} s (CPU {res['cold_cpu_s']:6.1f} s)  "
                    f"steady {res['steady_ms']:7.1f} ms (min {res['steady_min_ms']:7.1f})  "
                    f"graphs {res['graphs']}  breaks {res['graph_breaks']}  loss {res['first_loss']:.4f}",
                    file=sys.stderr,
                    flush=True,
                )
    load_after = os.getloadavg()

    def med(v: str, key: str) -> float:
        return statistics.median(r[key] for r in runs[v])

    import torch  # only for the header

    print(
        f"GPT-2 training step: n_layer={shape['n_layer']} n_embd={shape['n_embd']} n_head={shape['n_head']} "
        f"vocab={shape['vocab_size']} batch {shape['batch']}x{shape['seq']}, device {shape['device']}, "
        f"torch {torch.__version__}, {os.cpu_count()} CPUs, {platform.platform()}"
    )
    print(
        f"median of {args.repeat} fresh process(es) per variant, fresh compiler cache each; steady = median "
        f"(and min) of {args.steps} steps after {args.warmup}; plans written by {how or 'n/a'}; "
        f"load average {load_before[0]:.2f} before / {load_after[0]:.2f} after; {time.time() - started:.0f} s in all"
    )
    print()
    print(
        "| variant | cold s | cold CPU s | steady ms | steady min ms | cold × regions | steady × full "
        "| CPU cold × regions | min steady × full | graphs | target (wall, median) | target (CPU, min) |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|")
    have_refs = "regions" in runs and "full" in runs
    ok_all = True

    def ratio(a: float, b: float | None) -> float:
        return a / b if b else float("nan")

    for v in variants:
        if not runs[v]:
            print(f"| {v} | failed | | | | | | | | | | |")
            continue
        cold, cpu, steady, smin = med(v, "cold_s"), med(v, "cold_cpu_s"), med(v, "steady_ms"), med(v, "steady_min_ms")
        rc = ratio(cold, med("regions", "cold_s") if have_refs else None)
        rs = ratio(steady, med("full", "steady_ms") if have_refs else None)
        rcc = ratio(cpu, med("regions", "cold_cpu_s") if have_refs else None)
        rsm = ratio(smin, med("full", "steady_min_ms") if have_refs else None)
        verdicts = ["", ""]
        if v.startswith("plan") and have_refs:
            for i, (a, b) in enumerate(((rc, rs), (rcc, rsm))):
                ok = a <= COLD_TARGET and b <= STEADY_TARGET
                verdicts[i] = "PASS" if ok else "FAIL"
                if i == 0 and v == "plan-nested":
                    ok_all = ok
        print(
            f"| {v} | {cold:.1f} | {cpu:.1f} | {steady:.1f} | {smin:.1f} | {rc:.3f} | {rs:.3f} | {rcc:.3f} | {rsm:.3f} "
            f"| {runs[v][0]['graphs']} | {verdicts[0]} | {verdicts[1]} |"
        )
    print(f"\ntargets: cold ≤ {COLD_TARGET} × compile_regions, steady ≤ {STEADY_TARGET} × full torch.compile")
    if args.json:
        Path(args.json).write_text(
            json.dumps({"shape": shape, "runs": runs, "load": [load_before, load_after]}, indent=2)
        )
    return 0 if ok_all else 1


if __name__ == "__main__":
    sys.exit(main())
