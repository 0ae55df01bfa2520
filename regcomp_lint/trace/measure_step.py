"""One strategy of ``trace --measure``, in its own process: compile, time the first step, the
steady steps, peak memory and what dynamo did.

Run as ``python -m regcomp_lint.trace.measure_step SPEC.json RESULT.json`` by ``measure``, in a
fresh process whose compiler cache folders the parent chose (empty for a cold start, the cold
run's for a warm one). The result is written to a file, not stdout, so the user's prints cannot
corrupt it; a failure (OOM, a compile error) is a result with ``error``, never a traceback.

A step is what a training script does per batch: ``--mode train`` runs forward, the loss,
backward and ``optimizer.step()``; ``--mode infer`` runs forward under ``torch.no_grad()``.
Mixed precision is applied the way Accelerate does (``knowledge.accelerate_api``).
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import sys
import time
from dataclasses import dataclass
from typing import Any

from regcomp_lint.knowledge.accelerate_api import MIXED_PRECISION_DTYPES
from regcomp_lint.knowledge.torch_api import COMPILER_CACHE_DIR_ENV

#: how torch 2.13 starts a record of its ``recompiles`` log artifact (one per recompile)
RECOMPILING = "Recompiling function"
#: the strategies, in the order the table shows them
STRATEGIES = ("eager", "full", "regions", "plan", "nested")


@dataclass
class Spec:
    """What the parent asks one child to run (JSON-serialisable)."""

    strategy: str
    model: str | None = None  # FILE:FACTORY (factory mode)
    inputs: str | None = None
    script: str | None = None  # or a training script (capture mode)
    script_args: tuple[str, ...] = ()
    plan: str | None = None  # the plan file of "plan" / "nested"
    device: str = "cpu"
    mode: str = "train"
    mixed_precision: str = "no"
    backend: str = "inductor"
    warmup: int = 2
    steps: int = 5
    max_seconds: float = 300.0

    @classmethod
    def from_dict(cls, data: dict) -> Spec:
        data = dict(data)
        data["script_args"] = tuple(data.get("script_args") or ())
        return cls(**data)


class StepTimer:
    """Wall time of one step. On CUDA the GPU runs asynchronously: the time is taken between two
    CUDA events recorded on the stream and read after synchronizing; on the CPU a clock is enough."""

    def __init__(self, device: str, cuda=None) -> None:
        self.cuda = cuda if device.startswith("cuda") else None

    def time(self, fn) -> float:
        if self.cuda is None:
            start = time.perf_counter()
            fn()
            return time.perf_counter() - start
        begin, end = self.cuda.Event(enable_timing=True), self.cuda.Event(enable_timing=True)
        begin.record()
        fn()
        end.record()
        end.synchronize()
        return begin.elapsed_time(end) / 1000.0  # ms -> s

    def synchronize(self) -> None:
        if self.cuda is not None:
            self.cuda.synchronize()


def peak_memory(device: str, cuda=None) -> tuple[int, str]:
    """``(bytes, what)``: CUDA max allocated on a GPU, the process's peak RSS on the CPU."""
    if device.startswith("cuda") and cuda is not None:
        return int(cuda.max_memory_allocated()), "cuda max allocated"
    kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    return int(kib) * 1024, "peak RSS"


def count_files(folder: str | None) -> int:
    """Files under ``folder`` (0 when it is missing): 0 at the start of a cold run, the cold
    run's artifacts at the start of a warm one."""
    if not folder or not os.path.isdir(folder):
        return 0
    return sum(len(files) for _, _, files in os.walk(folder))


def loss_of(output) -> Any:
    """The scalar to call ``backward`` on: ``output.loss`` (transformers), ``output["loss"]``, a
    scalar tensor itself, else the mean of the first tensor (a stand-in loss: same graph, same
    backward cost)."""
    import torch

    loss = getattr(output, "loss", None)
    if loss is None and isinstance(output, dict):
        loss = output.get("loss")
    if isinstance(loss, torch.Tensor):
        return loss
    first = _first_tensor(output)
    if first is None:
        raise ValueError(f"--mode train: the model returned {type(output).__name__} with no tensor to train on")
    return first if first.dim() == 0 else first.float().mean()


def _first_tensor(value):
    import torch

    if isinstance(value, torch.Tensor):
        return value
    if isinstance(value, dict):
        value = list(value.values())
    elif hasattr(value, "to_tuple"):
        value = value.to_tuple()
    if isinstance(value, (list, tuple)):
        for item in value:
            found = _first_tensor(item)
            if found is not None:
                return found
    return None


def run(spec: Spec) -> dict:
    """Build, compile as ``spec.strategy`` says, and time; the result's fields are documented in
    ``measure.RESULT_FIELDS``."""
    import torch

    from regcomp_lint.trace import devices

    started = time.perf_counter()
    cache_files_at_start = count_files(os.environ.get(COMPILER_CACHE_DIR_ENV))
    model, batch = _model_and_batch(spec)
    model, batch = devices.place(model, batch, spec.device)
    cuda = torch.cuda if spec.device.startswith("cuda") else None
    if cuda is not None:
        cuda.reset_peak_memory_stats()
    timer = StepTimer(spec.device, cuda)
    step = _step_function(model, batch, spec)
    setup_s = time.perf_counter() - started

    from regcomp_lint.trace import dynamo_logs

    with dynamo_logs.collecting(graph_breaks=False, recompiles=True) as logs:
        timer.synchronize()
        t0 = time.perf_counter()
        compiled = _compile(model, spec)
        compile_call_s = time.perf_counter() - t0
        step(compiled)
        timer.synchronize()
        cold_s = time.perf_counter() - t0
        for _ in range(spec.warmup):
            step(compiled)
        times = [timer.time(lambda: step(compiled)) for _ in range(spec.steps)]
    memory, memory_kind = peak_memory(spec.device, cuda)
    from torch._dynamo.utils import counters

    return {
        "strategy": spec.strategy,
        "ok": True,
        "pid": os.getpid(),
        "cache_dir": os.environ.get(COMPILER_CACHE_DIR_ENV),
        "cache_files_at_start": cache_files_at_start,
        "fx_graph_cache_hits": int(counters["inductor"].get("fxgraph_cache_hit", 0)),
        "first_step_s": round(cold_s, 4),
        "compile_call_s": round(compile_call_s, 4),
        "setup_s": round(setup_s, 4),
        "steady_median_ms": round(statistics.median(times) * 1000, 4),
        "steady_min_ms": round(min(times) * 1000, 4),
        "steady_max_ms": round(max(times) * 1000, 4),
        "steady_steps": len(times),
        "peak_memory_bytes": memory,
        "peak_memory_kind": memory_kind,
        "graphs": int(counters["stats"].get("unique_graphs", 0)),
        "graph_breaks": int(sum(counters["graph_break"].values())),
        "recompiles": sum(1 for m in logs.messages() if m.startswith(RECOMPILING)),
    }


def _model_and_batch(spec: Spec):
    from regcomp_lint.trace.batch import Batch
    from regcomp_lint.trace.loading import build_batch, build_model

    if spec.script:
        from regcomp_lint.trace.capture import capture_script

        captured = capture_script(spec.script, list(spec.script_args), spec.max_seconds)
        return captured.model, Batch(tuple(captured.args), dict(captured.kwargs))
    assert spec.model and spec.inputs
    return build_model(spec.model, spec.device), build_batch(spec.inputs, spec.device)


def _step_function(model, batch, spec: Spec):
    import torch

    dtype_name = MIXED_PRECISION_DTYPES[spec.mixed_precision]
    device_type = spec.device.split(":")[0]

    def forward(module):
        if dtype_name is None:
            return batch.call(module)
        with torch.autocast(device_type=device_type, dtype=getattr(torch, dtype_name)):
            return batch.call(module)

    if spec.mode == "infer":
        model.eval()

        def infer(module):
            with torch.no_grad():
                return forward(module)

        return infer
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    scaler = torch.amp.GradScaler(device_type) if spec.mixed_precision == "fp16" and device_type == "cuda" else None

    def train(module):
        loss = loss_of(forward(module))
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
        else:
            loss.backward()
            optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return loss

    return train


def _compile(model, spec: Spec):
    import torch

    if spec.strategy == "eager":
        return model
    if spec.strategy == "full":
        return torch.compile(model, backend=spec.backend)
    if spec.strategy == "regions":
        from accelerate.utils import compile_regions

        return compile_regions(model, backend=spec.backend)
    if spec.strategy in ("plan", "nested"):
        from regcomp_lint.trace.apply import apply_plan

        assert spec.plan, "the parent writes the plan file for plan/nested"
        return apply_plan(model, spec.plan)
    raise ValueError(f"unknown strategy {spec.strategy!r}")


def main(argv: list[str]) -> int:
    spec_path, result_path = argv
    with open(spec_path, encoding="utf-8") as handle:
        spec = Spec.from_dict(json.load(handle))
    try:
        from regcomp_lint.trace.streams import user_output_to_stderr

        with user_output_to_stderr():
            result = run(spec)
    except Exception as exc:  # noqa: BLE001 - one strategy's failure is a row, not a crash
        result = {
            "strategy": spec.strategy,
            "ok": False,
            "error": _reason(exc),
            "pid": os.getpid(),
            "cache_dir": os.environ.get(COMPILER_CACHE_DIR_ENV),
        }
    with open(result_path, "w", encoding="utf-8") as handle:
        json.dump(result, handle)
    return 0


def _reason(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}".rstrip(": ")
    if "out of memory" in str(exc).lower():
        return f"out of memory ({text})"
    return text[:500]


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
