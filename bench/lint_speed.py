"""How fast is regcomp-lint on a large real tree, beside ruff and TorchFix?

Lints the installed ``transformers`` package source (about 2,900 files, 1.2M lines) with

- ``ruff check --select ALL --no-cache`` (the reference),
- ``regcomp-lint`` with an empty cache (cold), then again with nothing changed (warm),
- TorchFix (``--select ALL``) on a sample of the files, its time extrapolated per line
  (``--torchfix-full`` for the whole tree: about 18 CPU-minutes),

each as a subprocess of the real command line, so wall time includes start-up and output (all
tools in their default output format), beside the floor (``ast.parse`` of every file, as many
workers as regcomp-lint), and prints a Markdown table plus PASS/FAIL for the targets: cold ≤ 1.5 ×
ruff, warm ≤ 0.1 × ruff (the exit status), cold ≤ 2.0 × the floor.
Times are medians over ``--repeat`` rounds; the tools take turns within a round, so a busy
machine slows all of them alike. regcomp-lint runs from a copy of this checkout's package taken
at the start, so every round measures the same code even while the checkout is being edited.

TorchFix pins ``libcst<1.6``, so it lives in its own virtual environment outside the repository:
``$REGCOMP_BENCH_TORCHFIX_VENV`` (default ``/tmp/torchfix-venv``), created with
``python -m venv`` + ``pip install torchfix`` when absent; if that fails the row is skipped with
a note.

``--with-settings N`` lints two copies of the tree, side by side in each round: the copy alone,
and the copy plus N rounds of settings files (issue 14's YAML, JSON, shell, Makefile, Dockerfile
and ``.env`` files: the settings fixtures and unrelated ones), each with its own ruff and floor
rows, so the table shows what the settings file types add and the ratios on the same tree (a
copy outside site-packages is linted differently from the installed package: its absolute
imports resolve, so far more files are reached by a compile). It says how many settings files
the prefilter rejects on their bytes, never decoded or parsed.

    python bench/lint_speed.py [--repeat 3] [--torchfix-sample 200 | --torchfix-full | --no-torchfix]
    python bench/lint_speed.py --no-torchfix --with-settings 100
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

COLD_TARGET = 1.5
#: issue 16: a cold lint within this factor of parsing every file with ``ast.parse`` (same workers)
FLOOR_TARGET = 2.0
WARM_TARGET = 0.1
DEFAULT_TORCHFIX_VENV = "/tmp/torchfix-venv"


@dataclass
class Measure:
    label: str
    files: int
    lines: int
    walls: list[float] = field(default_factory=list)
    cpus: list[float] = field(default_factory=list)
    note: str = ""
    scale: float = 1.0  # > 1 when the time was measured on a sample and extrapolated

    @property
    def wall(self) -> float:
        return statistics.median(self.walls) * self.scale

    @property
    def cpu(self) -> float:
        return statistics.median(self.cpus) * self.scale


class BenchError(Exception):
    pass


# -- the tree ----------------------------------------------------------------------------------


def transformers_source() -> tuple[Path, str]:
    """The installed transformers package folder, found without importing it."""
    spec = importlib.util.find_spec("transformers")
    if spec is None or not spec.submodule_search_locations:
        raise BenchError(
            "transformers is not installed in this Python; install it (pip install transformers) or pass --path"
        )
    folder = Path(list(spec.submodule_search_locations)[0])
    try:
        from importlib.metadata import version

        return folder, version("transformers")
    except Exception:
        return folder, "?"


def python_files(folder: Path) -> list[Path]:
    found = []
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        found.extend(Path(dirpath) / f for f in sorted(filenames) if f.endswith((".py", ".pyi")))
    return found


def count_lines(files: list[Path]) -> int:
    total = 0
    for path in files:
        with open(path, "rb") as handle:
            total += handle.read().count(b"\n")
    return total


# -- a tree with settings files (issue 14's file types) ------------------------------------------------

#: Settings files with no compile setting in them, as a repository holds them: the prefilter
#: rejects each on its bytes (never decoded, never parsed).
UNRELATED_SETTINGS = {
    "ci_{i}.yml": "name: tests\non: [push]\njobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n"
    "      - uses: actions/checkout@v4\n      - run: pip install -e . && pytest -q\n",
    "config_{i}.json": '{{"hidden_size": 768, "num_layers": 12, "vocab_size": 32000, "dropout": 0.1}}\n',
    "setup_{i}.sh": "#!/bin/bash\nset -euo pipefail\npip install -r requirements.txt\npython -m pytest tests/\n",
    "Makefile_{i}/Makefile": "test:\n\tpytest -q\n\nlint:\n\truff check .\n",
    "docker_{i}/Dockerfile": 'FROM python:3.11-slim\nCOPY . /app\nRUN pip install -e /app\nCMD ["python", "-m", "app"]\n',
    "env_{i}/.env": "DATA_DIR=/data\nWANDB_PROJECT=demo\nOMP_NUM_THREADS=4\n",
}


def tree_with_settings(folder: Path, work: Path, copies: int) -> tuple[Path, list[Path], int]:
    """A copy of ``folder`` plus ``copies`` rounds of settings files: every settings fixture
    (``fixtures/settings/``: accelerate configs, launch scripts, workflows... with compile
    settings) and the unrelated files above. Returns the tree, its settings files, and how many
    of them the prefilter rejects on their bytes."""
    sys.path.insert(0, str(ROOT))
    from regcomp_lint.analysis.compile_settings import mentions_settings

    tree = work / "tree"
    shutil.copytree(folder, tree / folder.name, ignore=shutil.ignore_patterns("__pycache__"))
    fixtures = [
        p for p in sorted((ROOT / "fixtures" / "settings").iterdir()) if p.suffix not in (".expected", ".fixed", ".py")
    ]
    written: list[Path] = []
    for i in range(copies):
        target = tree / "settings" / f"set{i:03d}"
        for fixture in fixtures:
            written.append(target / fixture.name)
            written[-1].parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(fixture, written[-1])
        for name, text in UNRELATED_SETTINGS.items():
            written.append(target / name.format(i=i))
            written[-1].parent.mkdir(parents=True, exist_ok=True)
            written[-1].write_text(text.format(i=i))
    rejected = sum(not mentions_settings(path.read_bytes()) for path in written)
    return tree, written, rejected


# -- running a tool --------------------------------------------------------------------------------


def timed(command: list[str], cwd: str, env: dict[str, str], output: Path) -> tuple[float, float]:
    """Wall and CPU seconds (the whole process tree) of one run; stdout goes to ``output``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with open(output, "wb") as out:
        start = time.perf_counter()
        proc = subprocess.run(command, cwd=cwd, env=env, stdout=out, stderr=subprocess.PIPE)
        wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in (0, 1):
        tail = proc.stderr.decode(errors="replace")[-2000:]
        raise BenchError(f"{' '.join(command[:4])} ... exited {proc.returncode}:\n{tail}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def snapshot_tool(work: Path) -> Path:
    """Copy this checkout's package and run the copy: every round measures the same code even
    while the checkout is being edited (the cache is keyed on the tool's own source, so an edit
    between a cold and a warm run would make the warm run cold)."""
    source = Path(__file__).resolve().parent.parent / "regcomp_lint"
    target = work / "tool"
    shutil.copytree(source, target / "regcomp_lint", ignore=shutil.ignore_patterns("__pycache__"))
    return target


#: The floor of any Python linter: read and ``ast.parse`` every file (argv: file list, workers),
#: with the same relaxed cyclic-GC thresholds as the lint's runner (``lint/runner._relaxed_gc``):
#: with Python's defaults the parse alone costs ~20 % more CPU, which flattered the ratio.
_FLOOR = """
import ast, gc, sys, warnings
from concurrent.futures import ProcessPoolExecutor
def parse(paths):
    warnings.simplefilter("ignore")
    gc.set_threshold(100_000, 50, 100)
    for path in paths:
        try:
            ast.parse(open(path, "rb").read(), path)
        except (SyntaxError, ValueError):
            pass
    return len(paths)
paths = open(sys.argv[1]).read().splitlines()
jobs = int(sys.argv[2])
chunks = [paths[i::jobs * 8] for i in range(jobs * 8)]
if jobs == 1:
    parse(paths)
else:
    with ProcessPoolExecutor(jobs) as pool:
        list(pool.map(parse, chunks))
"""


def floor_command(file_list: Path, jobs: int) -> list[str]:
    return [sys.executable, "-c", _FLOOR, str(file_list), str(jobs)]


def regcomp_command(jobs: int | None = None, select: str | None = None) -> list[str]:
    """The real CLI (``python -m regcomp_lint``) from this checkout, default output format."""
    command = [sys.executable, "-m", "regcomp_lint"]
    if jobs:
        command += ["--jobs", str(jobs)]
    if select:
        command += ["--select", select]
    return command


def ruff_command(concise: bool = False) -> list[str]:
    """The reference command of the targets, ``ruff check --select ALL --no-cache`` (its default
    output format); ``--isolated`` only makes sure no stray config changes the rule set."""
    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    if ruff is None:
        raise BenchError("ruff is not installed (pip install ruff)")
    command = [ruff, "check", "--select", "ALL", "--no-cache", "--isolated"]
    return command + ["--output-format", "concise"] if concise else command


def torchfix_python(venv: Path) -> tuple[Path | None, str]:
    """TorchFix's venv (created when absent); None plus the reason when it cannot be had."""
    exe = venv / "bin" / "torchfix"
    if exe.exists():
        return exe, ""
    print(f"creating a TorchFix environment in {venv} (TorchFix pins libcst<1.6) ...", file=sys.stderr)
    try:
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True)
        subprocess.run(
            [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "torchfix"],
            check=True,
            capture_output=True,
            timeout=900,
        )
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError) as exc:
        stderr = getattr(exc, "stderr", b"") or b""
        return (
            None,
            f"TorchFix skipped: could not create {venv} ({exc}; {stderr.decode(errors='replace')[-300:].strip()})",
        )
    return (exe, "") if exe.exists() else (None, f"TorchFix skipped: no torchfix executable in {venv}")


def tool_version(command: list[str]) -> str:
    try:
        out = subprocess.run(command, capture_output=True, text=True, timeout=60)
        return (out.stdout or out.stderr).strip().splitlines()[0]
    except (OSError, IndexError, subprocess.TimeoutExpired):
        return "?"


# -- the benchmark ----------------------------------------------------------------------------------


def sample(files: list[Path], size: int) -> list[Path]:
    """Every k-th file of the sorted list: deterministic and spread over the whole tree."""
    if size >= len(files):
        return list(files)
    step = len(files) / size
    return [files[int(i * step)] for i in range(size)]


@dataclass
class Tree:
    """One tree the tools lint in a round, with its rows: ruff, regcomp-lint cold and warm, the floor."""

    name: str  # "" for the only tree; a short name in the row labels when there are two
    folder: Path
    files: list[Path]
    lines: int
    jobs: int
    identical: bool = True  # warm output identical to cold in every round
    ruff_findings: int = 0  # lines of ruff's concise output (last round)
    rows: dict[str, Measure] = field(default_factory=dict)

    def __post_init__(self) -> None:
        where = f" [{self.name}]" if self.name else ""
        n, lines = len(self.files), self.lines
        self.rows = {
            "ruff": Measure(f"ruff check --select ALL --no-cache{where}", n, lines),
            "ruff_concise": Measure(f"ruff, same with --output-format concise (for information){where}", n, lines),
            "cold": Measure(f"regcomp-lint, cold (empty cache){where}", n, lines),
            "warm": Measure(f"regcomp-lint, warm (nothing changed){where}", n, lines),
            "floor": Measure(
                f"floor: ast.parse of every file ({self.jobs} worker(s), as regcomp-lint){where}", n, lines
            ),
        }

    def ratios(self) -> dict[str, float]:
        r = self.rows
        return {
            "cold_ratio": r["cold"].wall / r["ruff"].wall,
            "warm_ratio": r["warm"].wall / r["ruff"].wall,
            "floor_ratio": r["cold"].wall / r["floor"].wall,
            "floor_cpu_ratio": r["cold"].cpu / r["floor"].cpu,
        }


def run_round(tree: Tree, round_: int, args: argparse.Namespace, work: Path, env, others_env) -> None:
    """Every tool once on ``tree``, in turns (a busy machine slows them alike)."""
    tag = f"{round_}-{tree.name or 'tree'}"
    folder = str(tree.folder)
    file_list = work / f"files-{tree.name or 'tree'}.txt"
    if not file_list.exists():
        file_list.write_text("\n".join(map(str, tree.files)))
    label = f"round {round_ + 1}/{args.repeat}" + (f" [{tree.name}]" if tree.name else "")
    print(f"{label}: ruff ...", file=sys.stderr, flush=True)
    times = {"ruff": timed(ruff_command() + [folder], str(work), others_env, work / "ruff.out")}
    times["ruff_concise"] = timed(
        ruff_command(concise=True) + [folder], str(work), others_env, work / "ruff-concise.out"
    )
    tree.ruff_findings = (work / "ruff-concise.out").read_text(errors="replace").count("\n")
    run_env = {**env, "REGCOMP_CACHE_DIR": str(work / f"cache-{tag}")}
    print(f"{label}: regcomp-lint cold, warm ...", file=sys.stderr, flush=True)
    command = regcomp_command(args.jobs, args.select) + [folder]
    times["cold"] = timed(command, str(work), run_env, work / "cold.out")
    times["warm"] = timed(command, str(work), run_env, work / "warm.out")
    tree.identical &= (work / "cold.out").read_bytes() == (work / "warm.out").read_bytes()
    times["floor"] = timed(floor_command(file_list, tree.jobs), str(work), others_env, work / "floor.out")
    for key, (wall, cpu) in times.items():
        tree.rows[key].walls.append(wall)
        tree.rows[key].cpus.append(cpu)


def run_benchmark(args: argparse.Namespace) -> int:
    folder, version = (Path(args.path).resolve(), "") if args.path else transformers_source()
    files = python_files(folder)
    if not files:
        raise BenchError(f"no Python files under {folder}")
    lines = count_lines(files)
    args.load_before = load_average()
    work = Path(tempfile.mkdtemp(prefix="regcomp-bench-"))
    jobs = args.jobs or os.cpu_count() or 1
    notes: list[str] = []
    if args.with_settings:
        # Like with like: the same copy with and without the settings files, side by side (a copy
        # outside site-packages lints differently from the installed package: its absolute
        # imports resolve, so far more files are reached by a compile).
        with_settings, written, rejected = tree_with_settings(folder, work, args.with_settings)
        plain = work / "plain"
        shutil.copytree(folder, plain / folder.name, ignore=shutil.ignore_patterns("__pycache__"))
        trees = [
            Tree("copy", plain, python_files(plain), lines, jobs),
            Tree("copy + settings", with_settings, python_files(with_settings), lines, jobs),
        ]
        notes.append(
            f"[copy]: the tree copied to {work} (outside site-packages, as a checkout: its absolute imports resolve); "
            f"[copy + settings]: the same copy plus {len(written):,} settings files ({len(written) - rejected:,} with "
            f"compile settings, copies of fixtures/settings/; {rejected:,} unrelated CI workflows, JSON configs, shell "
            "scripts, Makefiles, Dockerfiles and .env files, which the prefilter rejects on their bytes: never decoded "
            "or parsed); files and lines count the Python files, which ruff and the floor read"
        )
    else:
        trees = [Tree("", folder, files, lines, jobs)]
    others_env = {k: v for k, v in os.environ.items() if k != "REGCOMP_CACHE_DIR"}
    env = dict(others_env)  # regcomp-lint's: runs the snapshot
    # "cold" means an empty result cache, not a fresh install: the snapshot's bytecode is written
    # once (below) and reused, as on any machine where Python may write it. An environment that
    # forbids it (PYTHONDONTWRITEBYTECODE, set in some sandboxes) would make every run, warm ones
    # included, compile the whole package again (0.1-0.2 s a process).
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    measures: list[Measure] = []
    try:
        env["PYTHONPATH"] = str(snapshot_tool(work)) + os.pathsep + env.get("PYTHONPATH", "")
        args.rule_count = rule_count(args.select, env)
        # compile the snapshot's bytecode: "cold" means an empty result cache, not a fresh install
        timed(regcomp_command() + ["--version"], str(work), env, work / "version.out")
        for round_ in range(args.repeat):
            for tree in trees:
                run_round(tree, round_, args, work, env, others_env)
        for tree in trees:
            measures.extend(tree.rows.values())
            notes.append(
                (f"[{tree.name}] " if tree.name else "")
                + f"warm output identical to cold: {'yes' if tree.identical else 'NO'}; ruff printed "
                f"{tree.ruff_findings:,} concise lines (its default output renders each finding with source "
                "context, part of its time)"
            )

        if not args.no_torchfix:
            torchfix, why_not = torchfix_python(Path(args.torchfix_venv))
            if torchfix is None:
                notes.append(why_not)
            else:
                files = trees[0].files
                chosen = files if args.torchfix_full else sample(files, args.torchfix_sample)
                chosen_lines = count_lines(chosen)
                label = "TorchFix --select ALL" + ("" if args.torchfix_full else " (sample, extrapolated †)")
                tf = Measure(label, len(files), lines, scale=lines / chosen_lines if chosen_lines else 1.0)
                print(f"TorchFix on {len(chosen)} files ({chosen_lines:,} lines) ...", file=sys.stderr, flush=True)
                wall, cpu = timed(
                    [str(torchfix), "--select", "ALL", *map(str, chosen)], str(work), others_env, work / "torchfix.out"
                )
                tf.walls.append(wall)
                tf.cpus.append(cpu)
                measures.append(tf)
                if not args.torchfix_full:
                    notes.append(
                        f"† TorchFix measured on {len(chosen)} of {len(files)} files ({chosen_lines:,} of {lines:,} lines; "
                        f"{wall:.1f} s wall, {cpu:.1f} s CPU), scaled by lines ×{tf.scale:.1f}; `--torchfix-full` runs the whole tree"
                    )
                notes.append(f"TorchFix: {tool_version([str(torchfix), '--version'])}")
    finally:
        shutil.rmtree(work, ignore_errors=True)

    notes.append(
        f"load average (1 min) before / after: {args.load_before} / {load_average()}: other work on the machine slows every tool"
    )
    print_report(folder, version, files, lines, measures, notes, args)
    results = {}
    passed = True
    for tree in trees:
        r = tree.rows
        ratios = tree.ratios()
        cold_ok = ratios["cold_ratio"] <= COLD_TARGET
        warm_ok = ratios["warm_ratio"] <= WARM_TARGET
        floor_ok = ratios["floor_ratio"] <= FLOOR_TARGET
        where = f" [{tree.name}]" if tree.name else ""
        print()
        print(f"- cold ≤ {COLD_TARGET} × ruff{where}: {ratios['cold_ratio']:.2f} × → {'PASS' if cold_ok else 'FAIL'}")
        print(f"- warm ≤ {WARM_TARGET} × ruff{where}: {ratios['warm_ratio']:.3f} × → {'PASS' if warm_ok else 'FAIL'}")
        print(
            f"- cold ≤ {FLOOR_TARGET} × the ast.parse floor (same run, same workers){where}: {ratios['floor_ratio']:.2f} × → "
            f"{'PASS' if floor_ok else 'FAIL'} (CPU: {ratios['floor_cpu_ratio']:.2f} ×)"
        )
        print(
            f"- for information, against ruff with concise output{where}: cold "
            f"{r['cold'].wall / r['ruff_concise'].wall:.2f} ×, warm {r['warm'].wall / r['ruff_concise'].wall:.3f} ×"
        )
        passed &= cold_ok and warm_ok
        results[tree.name or "tree"] = {
            "tree": str(tree.folder),
            "files": len(tree.files),
            "lines": tree.lines,
            "rows": [
                {"tool": m.label, "wall_s": m.wall, "cpu_s": m.cpu, "walls": m.walls, "cpus": m.cpus, "scale": m.scale}
                for m in tree.rows.values()
            ],
            **ratios,
            "pass": cold_ok and warm_ok,
        }
    if len(trees) == 2:
        plain_rows, settings_rows = trees[0].rows, trees[1].rows
        print()
        print(
            "- what the settings files add (same copy, same run): cold "
            f"{settings_rows['cold'].wall - plain_rows['cold'].wall:+.2f} s wall "
            f"({settings_rows['cold'].cpu - plain_rows['cold'].cpu:+.2f} s CPU), warm "
            f"{settings_rows['warm'].wall - plain_rows['warm'].wall:+.2f} s wall "
            f"({settings_rows['warm'].cpu - plain_rows['warm'].cpu:+.2f} s CPU)"
        )
    if args.json:
        Path(args.json).write_text(json.dumps({"trees": results, "pass": passed}, indent=2))
    return 0 if passed else 1


def load_average() -> str:
    try:
        return f"{os.getloadavg()[0]:.2f}"
    except (AttributeError, OSError):
        return "?"


def machine() -> str:
    model = platform.processor() or "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return f"{cpus} CPUs ({model}), {platform.system()} {platform.release()}, Python {platform.python_version()}"


def rule_count(select: str | None, env: dict[str, str]) -> str:
    """How many rules the measured regcomp-lint runs (read from its --show-settings)."""
    try:
        out = subprocess.run(
            regcomp_command(select=select) + ["--show-settings"], capture_output=True, text=True, timeout=60, env=env
        )
        return str(len(json.loads(out.stdout)["enabled"]))
    except (OSError, ValueError, KeyError, subprocess.TimeoutExpired):
        return "?"


def print_report(folder, version, files, lines, measures, notes, args) -> None:
    what = f"transformers {version}" if version else str(folder)
    print(f"## Lint speed: {what} ({len(files):,} files, {lines:,} lines)")
    print()
    print(
        f"{time.strftime('%Y-%m-%d')}; {machine()}; median of {args.repeat} round(s); "
        f"{tool_version(ruff_command()[:1] + ['--version'])}; regcomp-lint --jobs {args.jobs or 'default (one per CPU)'}, "
        f"rules: {'--select ' + args.select if args.select else 'default selection'} ({args.rule_count} rules)"
    )
    print()
    print("| tool | files | lines | wall s | CPU s | lines/s | wall × ruff |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    ruff_wall = measures[0].wall
    for m in measures:
        if m.label.startswith("ruff check"):
            ruff_wall = m.wall  # each tree's rows against ruff on the same tree
        print(
            f"| {m.label} | {m.files:,} | {m.lines:,} | {m.wall:.2f} | {m.cpu:.2f} | {m.lines / m.wall:,.0f} | {m.wall / ruff_wall:.3f} |"
        )
    print()
    for note in notes:
        print(f"- {note}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--path", help="lint this folder instead of the installed transformers package")
    parser.add_argument("--repeat", type=int, default=3, help="rounds; the table shows medians (default 3)")
    parser.add_argument("--jobs", type=int, default=None, help="regcomp-lint --jobs (default: its own default)")
    parser.add_argument(
        "--select", help="regcomp-lint --select (default: its default rule set); ruff always runs --select ALL"
    )
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "--torchfix-sample",
        type=int,
        default=200,
        metavar="N",
        help="TorchFix on N files, extrapolated per line (default 200)",
    )
    group.add_argument("--torchfix-full", action="store_true", help="TorchFix on the whole tree (about 18 CPU-minutes)")
    group.add_argument("--no-torchfix", action="store_true", help="leave TorchFix out")
    parser.add_argument(
        "--torchfix-venv",
        default=os.environ.get("REGCOMP_BENCH_TORCHFIX_VENV", DEFAULT_TORCHFIX_VENV),
        help="virtual environment holding TorchFix (default $REGCOMP_BENCH_TORCHFIX_VENV or /tmp/torchfix-venv)",
    )
    parser.add_argument(
        "--with-settings",
        type=int,
        default=0,
        metavar="N",
        help="lint a copy of the tree plus N rounds of settings files (YAML, JSON, shell, Makefile, Dockerfile, .env)",
    )
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    try:
        return run_benchmark(args)
    except BenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
