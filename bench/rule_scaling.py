"""Is every lint rule linear in file size? Time and peak memory of ``regcomp-lint`` on files made
of one training snippet repeated, at growing sizes.

Each size runs in a fresh process (``--no-cache``, one worker), so the figures are a cold lint of
one file: wall and CPU seconds, peak resident memory, and CPU and memory per 10,000 lines (CPU
is the figure to compare on a shared machine). A linear linter keeps
the per-10k columns flat; a rule that rescans the file at each call site makes them grow with
the size (before issue 16, RC105 took 12 s at 9,000 lines, 56 s at 18,000 and 292 s at 36,000).

    python bench/rule_scaling.py [--lines 10000 40000 160000] [--snippet accelerate|plain|both]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: An Accelerate training step with the legacy ``dynamo_backend=`` (RC105 at each repetition).
ACCELERATE = """accelerator = Accelerator(dynamo_backend="inductor")
model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
for batch in loader:
    optimizer.zero_grad()
    loss = model(batch).loss
    accelerator.backward(loss)
    optimizer.step()
    scheduler.step()
print(loss)
"""

#: A plain PyTorch step that compiles by hand inside the loop and reads tensors back (RC104,
#: RC201, RC401, RC403 ... at each repetition), in a function so scopes and bindings grow too.
PLAIN = """def train_{i}(model, loader, optimizer):
    model = torch.compile(model, mode="max-autotune", options={{"trace.enabled": True}})
    for step, (x, y) in enumerate(loader):
        x, y = x.to("cuda"), y.cuda()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        print(step, loss.item())
"""

HEADS = {
    "accelerate": "from accelerate import Accelerator\n",
    "plain": "import torch\n",
}


def script(kind: str, lines: int) -> str:
    snippet = ACCELERATE if kind == "accelerate" else PLAIN
    per = snippet.count("\n")
    body = [snippet.format(i=i) if kind == "plain" else snippet for i in range(max(1, lines // per))]
    return HEADS[kind] + "".join(body)


def measure(path: Path) -> tuple[float, float, float, int]:
    """Wall seconds, CPU seconds, peak RSS (MiB) and exit status of one cold lint of ``path``."""
    code = (
        "import resource, sys, time\n"
        "t = time.perf_counter()\n"
        "from regcomp_lint.cli import main\n"
        "try:\n    main()\nexcept SystemExit as e:\n    rc = e.code\n"
        "u = resource.getrusage(resource.RUSAGE_SELF)\n"
        "print(time.perf_counter() - t, u.ru_utime + u.ru_stime, u.ru_maxrss, rc, file=sys.stderr)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", code, str(path), "--no-cache", "-j", "1", "--format", "concise"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    seconds, cpu, kib, rc = done.stderr.strip().splitlines()[-1].split()
    return float(seconds), float(cpu), int(kib) / 1024, int(rc)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lines", type=int, nargs="+", default=[10_000, 40_000, 160_000])
    parser.add_argument("--snippet", choices=["accelerate", "plain", "both"], default="both")
    args = parser.parse_args()
    kinds = ["accelerate", "plain"] if args.snippet == "both" else [args.snippet]
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(
        f"{'snippet':<11} {'lines':>8} {'wall s':>8} {'CPU s':>7} {'CPU s/10k':>9} {'MiB':>7} {'MiB/10k':>8} {'exit':>4}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        for kind in kinds:
            for lines in args.lines:
                path = Path(tmp) / f"{kind}_{lines}.py"
                text = script(kind, lines)
                path.write_text(text)
                real = text.count("\n")
                seconds, cpu, mib, rc = measure(path)
                print(
                    f"{kind:<11} {real:>8,} {seconds:>8.2f} {cpu:>7.2f} {cpu / real * 1e4:>9.2f} "
                    f"{mib:>7.0f} {mib / real * 1e4:>8.1f} {rc:>4}",
                    flush=True,
                )
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
