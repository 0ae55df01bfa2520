"""How fast is ``regcomp-fix``? Lines per second on the fixtures and on a large generated script.

Measures, in one process and without writing anything (the same work as ``regcomp-fix PATH``
without ``--apply``, diff included, minus start-up):

- every ``fixtures/fix/*/input.py`` (converted, refused or not a training script alike), one at
  a time, summed;
- a generated training script with ``--blocks`` model classes (about 25 lines each, thousands of
  lines in all) before a plain PyTorch loop, which the codemod converts;
- the same script with no ``backward()`` (not a training script: the cheap path most files of a
  repository take);
- a generated training script of about 20,000 lines (``--large-blocks`` model classes; 0 skips
  it), to show the fixer stays linear;
- and the console script itself on the fixtures folder (a subprocess: start-up included);
- start-up: a bare ``regcomp-lint --version`` process beside ``regcomp-fix`` on a small file with
  no training step (the no-op path; issue 16 wants it within 1.3 × of the bare start-up).

Times are medians over ``--repeat`` rounds; CPU is the process's user + system time. The
floors are measured in the same run on the same texts: ``ast.parse`` (what the lint needs) and
``libcst.parse_module`` (what any libcst codemod needs before it can do anything); the ratio
column is the fixer's CPU over libcst's parse. The load averages before and after say how quiet
the machine was (the figures are only comparable on a quiet one).

    python bench/fix_speed.py [--repeat 3] [--blocks 200] [--large-blocks 832]

``--sizes 1.25,2.5,5,10`` measures instead how time and memory grow with the file: one generated
script of about each size in MiB, each fixed once in a fresh process (CPU time and peak resident
memory of that process, the script's generation excluded from the time).
"""

from __future__ import annotations

import argparse
import ast
import math
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
sys.path.insert(0, str(ROOT))

from regcomp_lint.cli.fix_command import FixOptions, convert_options, process_text  # noqa: E402 (after the sys.path line above)
from regcomp_lint.files import writeback  # noqa: E402 (after the sys.path line above)
from regcomp_lint.lint.config import Settings  # noqa: E402 (after the sys.path line above)
from regcomp_lint.lint.fix_files import unified_diff  # noqa: E402 (after the sys.path line above)

BLOCK = '''

class Block{i}(nn.Module):
    """Block {i}: attention-free mixer with a residual MLP."""

    def __init__(self, dim: int = 64, hidden: int = 256, dropout: float = 0.1):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)
        self.drop = nn.Dropout(dropout)
        self.scale = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        # pre-norm residual
        h = self.norm(x)
        h = self.fc1(h)
        h = F.gelu(h)
        h = self.drop(h)
        h = self.fc2(h) * self.scale
        return x + h

    def extra_repr(self) -> str:
        return f"block={i}"
'''

HEAD = '''"""A generated training script for the fixer benchmark."""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
'''

TAIL = """

class Model(nn.Module):
    def __init__(self, dim: int = 64):
        super().__init__()
        self.blocks = nn.Sequential({blocks})
        self.head = nn.Linear(dim, 1)

    def forward(self, x):
        return self.head(self.blocks(x))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=10)
    args = parser.parse_args()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = Model().to(device)
    model = torch.compile(model, mode="max-autotune")
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for step in range(args.steps):
        x = torch.randn(16, 64, device=device)
        loss = model(x).pow(2).mean()
        optimizer.zero_grad()
        {backward}
        optimizer.step()


if __name__ == "__main__":
    main()
"""


def generated_script(blocks: int, training: bool = True) -> str:
    body = "".join(BLOCK.replace("{i}", str(i)) for i in range(blocks))
    names = ", ".join(f"Block{i}()" for i in range(blocks))
    tail = TAIL.replace("{blocks}", names).replace("{backward}", "loss.backward()" if training else "loss.detach()")
    return HEAD + body + tail


def fix_in_memory(texts: list[tuple[str, str]], settings: Settings) -> tuple[int, int, int]:
    """(changed, refused, not training) after converting, lint-fixing and diffing every text."""
    convert = convert_options(FixOptions())
    changed = refused = skipped = 0
    for name, text in texts:
        result = process_text(text, name, settings, convert, unsafe=False)
        if result.changed:
            changed += 1
            unified_diff(result.original, result.text, name)
        refused += result.refused is not None
        skipped += result.not_training
    return changed, refused, skipped


def measure(func, repeat: int) -> tuple[float, float]:
    walls, cpus = [], []
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        func()
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    return statistics.median(walls), statistics.median(cpus)


def parse_floors(texts: list[tuple[str, str]], repeat: int) -> tuple[float, float]:
    """Median CPU seconds of ``ast.parse`` and of ``libcst.parse_module`` over ``texts``."""
    import libcst

    _, ast_cpu = measure(lambda: [ast.parse(t) for _, t in texts], repeat)
    _, cst_cpu = measure(lambda: [libcst.parse_module(t) for _, t in texts], repeat)
    return ast_cpu, cst_cpu


def start_up_rows(repeat: int) -> list[tuple[str, float, float]]:
    """(label, median wall s, median CPU s) of a bare ``regcomp-lint --version`` process and of
    ``regcomp-fix`` on a small file with no training step, this checkout's package in both (the
    console scripts' own import line), taking turns; CPU is the child's user + system time."""
    import resource

    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    runner = "import sys; from regcomp_lint.cli import {0}; sys.argv[0] = {1!r}; sys.exit({0}())"
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "util.py").write_text("import os\n\n\ndef join(x):\n    return os.path.join(x, 'a')\n")
        commands = [
            ("`regcomp-lint --version` (bare start-up)", [runner.format("main", "regcomp-lint"), "--version"]),
            ("`regcomp-fix util.py` (no training step: no-op)", [runner.format("fix_main", "regcomp-fix"), "util.py"]),
        ]
        times: dict[str, tuple[list[float], list[float]]] = {label: ([], []) for label, _ in commands}
        for _ in range(max(repeat, 5)):
            for label, args in commands:
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                t0 = time.perf_counter()
                subprocess.run([sys.executable, "-c", *args], cwd=tmp, env=env, capture_output=True, check=False)
                times[label][0].append(time.perf_counter() - t0)
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                times[label][1].append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return [(label, statistics.median(w), statistics.median(c)) for label, (w, c) in times.items()]


def measure_subprocess(cmd: list[str], cwd: str, repeat: int) -> float:
    walls = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run(cmd, cwd=cwd, capture_output=True, check=False)
        walls.append(time.perf_counter() - t0)
    return statistics.median(walls)


def blocks_for(mib: float) -> int:
    """The number of blocks that makes a generated script of about ``mib`` MiB."""
    one = len(generated_script(1)) - len(generated_script(0))
    return max(1, round((mib * (1 << 20) - len(generated_script(0))) / one))


def fix_one_size(blocks: int) -> None:
    """Fix one generated script of ``blocks`` blocks in this process; print its figures as one line."""
    import resource

    text = generated_script(blocks)
    settings = Settings()
    fix_in_memory([("warm_up.py", generated_script(1))], settings)  # (first-use costs: not the file's)
    start = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # (KiB on Linux)
    c0 = time.process_time()
    outcome = fix_in_memory([("sized_train.py", text)], settings)
    cpu = time.process_time() - c0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{len(text)}\t{text.count(chr(10))}\t{cpu:.3f}\t{peak:.0f}\t{peak - start:.0f}\t{outcome}")


def sizes_table(sizes: list[float]) -> None:
    """Time and memory of fixing generated scripts of the given sizes (MiB), each in a fresh process."""
    load_before = os.getloadavg()
    rows = []
    for mib in sizes:
        blocks = blocks_for(mib)
        done = subprocess.run(
            [sys.executable, __file__, "--one-size", str(blocks)], capture_output=True, text=True, check=True
        )
        chars, lines, cpu, peak, grown, outcome = done.stdout.strip().splitlines()[-1].split("\t")
        rows.append((int(chars), int(lines), float(cpu), float(peak), float(grown), outcome))
    load_after = os.getloadavg()
    print(
        f"{time.strftime('%Y-%m-%d')}, {os.cpu_count()} CPUs, Python {platform.python_version()}, one run per size, "
        f"each in a fresh process; load average (1/5/15 min) {'/'.join(f'{x:.1f}' for x in load_before)} before, "
        f"{'/'.join(f'{x:.1f}' for x in load_after)} after\n"
    )
    print(
        "| size MiB | lines | CPU s | lines/s (CPU) | CPU s per 10k lines | peak RSS MiB | growth MiB "
        "| growth KiB per line | outcome (changed, refused, not training) |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for chars, lines, cpu, peak, grown, outcome in rows:
        print(
            f"| {chars / (1 << 20):.2f} | {lines:,} | {cpu:.1f} | {lines / cpu:,.0f} | {cpu / lines * 1e4:.2f} "
            f"| {peak:,.0f} | {grown:,.0f} | {grown * 1024 / lines:.1f} | {outcome} |"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", help="comma-separated sizes in MiB: the linearity table instead of the bench")
    parser.add_argument("--one-size", type=int, help=argparse.SUPPRESS)  # (a child process of --sizes)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--blocks", type=int, default=200, help="model classes in the generated script (~25 lines each)"
    )
    parser.add_argument(
        "--large-blocks",
        type=int,
        default=832,
        help="model classes in the large generated script (832: 20,004 lines; 0: not measured)",
    )
    args = parser.parse_args()
    if args.one_size is not None:
        fix_one_size(args.one_size)
        return 0
    if args.sizes:
        sizes_table([float(x) for x in args.sizes.split(",")])
        return 0
    settings = Settings()

    fixtures = sorted((ROOT / "fixtures" / "fix").glob("*/input.py"))
    fixture_texts = [(str(p.relative_to(ROOT)), writeback.read(str(p)).text) for p in fixtures]
    big = generated_script(args.blocks)
    big_plain = generated_script(args.blocks, training=False)
    cases = [
        ("fixtures/fix/*/input.py", fixture_texts),
        (f"generated training script ({args.blocks} blocks)", [("big_train.py", big)]),
        ("same, no backward() (not a training script)", [("big_model.py", big_plain)]),
    ]
    if args.large_blocks:
        large = generated_script(args.large_blocks)
        cases.append((f"generated training script ({args.large_blocks} blocks)", [("large_train.py", large)]))

    load_before = os.getloadavg()
    rows = []
    for label, texts in cases:
        lines = sum(t.count("\n") for _, t in texts)
        outcome = fix_in_memory(texts, settings)  # warm-up (imports, libcst's parser) and the outcome
        wall, cpu = measure(lambda texts=texts: fix_in_memory(texts, settings), args.repeat)
        changed, refused, skipped = outcome
        ast_cpu, cst_cpu = parse_floors(texts, args.repeat)
        rows.append(
            (
                label,
                len(texts),
                lines,
                wall,
                cpu,
                ast_cpu,
                cst_cpu,
                f"{changed} changed, {refused} refused, {skipped} not training",
            )
        )

    script = shutil.which("regcomp-fix") or str(Path(sys.executable).parent / "regcomp-fix")
    if os.path.exists(script):
        with tempfile.TemporaryDirectory() as tmp:
            for path in fixtures:
                shutil.copy2(path, Path(tmp) / f"{path.parent.name}.py")
            lines = sum(t.count("\n") for _, t in fixture_texts)
            wall = measure_subprocess([script, "."], tmp, args.repeat)
            rows.append(
                (
                    "`regcomp-fix <fixtures copy>` (subprocess, diff mode)",
                    len(fixtures),
                    lines,
                    wall,
                    float("nan"),
                    float("nan"),
                    float("nan"),
                    "start-up included",
                )
            )

    start_up = start_up_rows(args.repeat)
    load_after = os.getloadavg()
    print(
        f"{time.strftime('%Y-%m-%d')}, {os.cpu_count()} CPUs, {platform.system()} {platform.release()}, "
        f"Python {platform.python_version()}, median of {args.repeat}; load average (1/5/15 min) "
        f"{'/'.join(f'{x:.1f}' for x in load_before)} before, {'/'.join(f'{x:.1f}' for x in load_after)} after\n"
    )
    print(
        "| case | files | lines | wall s | CPU s | lines/s (CPU) | ast.parse CPU s | libcst parse CPU s "
        "| × libcst parse | outcome |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for label, files, lines, wall, cpu, ast_cpu, cst_cpu, note in rows:
        if math.isnan(cpu):
            print(f"| {label} | {files} | {lines:,} | {wall:.2f} | – | – | – | – | – | {note} |")
            continue
        print(
            f"| {label} | {files} | {lines:,} | {wall:.2f} | {cpu:.2f} | {lines / cpu:,.0f} | {ast_cpu:.2f} "
            f"| {cst_cpu:.2f} | {cpu / cst_cpu:.1f} | {note} |"
        )
    print("\n| start-up (a process each, median of at least 5, taking turns) | wall s | CPU s | × `--version` CPU |")
    print("|---|---:|---:|---:|")
    base_cpu = start_up[0][2]
    for label, wall, cpu in start_up:
        print(f"| {label} | {wall:.2f} | {cpu:.3f} | {cpu / base_cpu:.2f} |")
    print(f"\nno-op fix / bare start-up (CPU): {start_up[1][2] / base_cpu:.2f} × (target ≤ 1.3 ×)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
