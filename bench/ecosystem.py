"""Ecosystem check: lint and fix every Python file of the installed torch and transformers.

    python bench/ecosystem.py                      # lint + lint fixes on all files, conversion on a sample
    python bench/ecosystem.py --convert-sample 0   # conversion on every file that could be a training script
    python bench/ecosystem.py --packages transformers --jobs 2

Nothing is ever written: sources are read (never imported) from site-packages, linted with
``api.lint_source``, fixed in memory with ``api.fix_source`` (safe and unsafe fixes) and converted
in memory with ``convert_source`` (the libcst codemod of ``regcomp-fix``). Counted per package:
crashes (an exception, or an "internal error" RC001), fixes or conversions whose result does not
parse, and the time of each stage (summed over files, measured inside the workers). The conversion is slow (libcst with scope metadata) and
only files mentioning ``backward``/``Accelerator``/``TorchDynamoPlugin`` reach it, so by default
it runs on an evenly spaced sample of those. Exit 1 when anything crashed or broke.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time
import traceback
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

TRIGGERS = (b"backward", b"Accelerator", b"TorchDynamoPlugin")


def package_files(name: str) -> list[str]:
    spec = importlib.util.find_spec(name)  # finds the folder; does not import the package
    if spec is None or not spec.submodule_search_locations:
        return []
    root = Path(list(spec.submodule_search_locations)[0])
    return sorted(str(p) for p in root.rglob("*.py") if p.is_file())


def check(task: tuple[str, bool]) -> dict:
    path, convert = task
    from regcomp_lint import api
    from regcomp_lint.codemod.convert import convert_source
    from regcomp_lint.files.source import DecodeError, decode_source
    from regcomp_lint.lint.config import Settings
    from regcomp_lint.lint.fixes import parses

    out = {
        "path": path,
        "lint_s": 0.0,
        "fix_s": 0.0,
        "convert_s": 0.0,
        "crash": None,
        "broken": None,
        "findings": 0,
        "fixed": 0,
        "converted": 0,
        "converted_tried": 0,
    }
    settings = Settings()
    with open(path, "rb") as handle:
        data = handle.read()
    try:
        start = time.perf_counter()
        found = api.lint_source(data, path, settings)
        out["lint_s"] = time.perf_counter() - start
        out["findings"] = len(found)
        if any("internal error" in d.message for d in found):
            out["crash"] = "lint: " + next(d.message for d in found if "internal error" in d.message)
            return out
        try:
            text = decode_source(data)
        except DecodeError:
            return out
        start = time.perf_counter()
        fixed, _ = api.fix_source(text, path, settings, unsafe=True)
        out["fix_s"] = time.perf_counter() - start
        if fixed != text:
            out["fixed"] = 1
            if parses(text) and not parses(fixed):
                out["broken"] = "lint fix"
        if convert:
            out["converted_tried"] = 1
            start = time.perf_counter()
            result = convert_source(text, path)
            out["convert_s"] = time.perf_counter() - start
            if result.changed:
                out["converted"] = 1
                if not parses(result.text):
                    out["broken"] = "conversion"
    except Exception as exc:  # noqa: BLE001 - counted and shown
        out["crash"] = f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=4)}"
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--packages", nargs="+", default=["transformers", "torch"])
    parser.add_argument(
        "--convert-sample",
        type=int,
        default=60,
        help="files per package given to the conversion (evenly spaced); 0: all candidates",
    )
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.2f}; {args.jobs} worker processes", flush=True)
    rows, problems = [], []
    for name in args.packages:
        files = package_files(name)
        if not files:
            print(f"{name}: not installed; skipped")
            continue
        candidates = []
        for path in files:
            with open(path, "rb") as handle:
                head = handle.read()
            if any(t in head for t in TRIGGERS):
                candidates.append(path)
        if args.convert_sample and len(candidates) > args.convert_sample:
            step = len(candidates) / args.convert_sample
            chosen = {candidates[int(i * step)] for i in range(args.convert_sample)}
        else:
            chosen = set(candidates)
        began = time.monotonic()
        with ProcessPoolExecutor(max_workers=args.jobs) as pool:
            results = list(pool.map(check, [(p, p in chosen) for p in files], chunksize=4))
        wall = time.monotonic() - began
        size = sum(os.path.getsize(p) for p in files)
        crashes = [r for r in results if r["crash"]]
        broken = [r for r in results if r["broken"]]
        problems += crashes + broken
        rows.append(
            (
                name,
                len(files),
                size / 1e6,
                sum(r["findings"] for r in results),
                sum(r["fixed"] for r in results),
                f"{sum(r['converted'] for r in results)}/{sum(r['converted_tried'] for r in results)} of {len(candidates)}",
                len(crashes),
                len(broken),
                sum(r["lint_s"] for r in results),
                sum(r["fix_s"] for r in results),
                sum(r["convert_s"] for r in results),
                wall,
            )
        )
        print(f"{name}: done in {wall:.0f} s", flush=True)
    print()
    print(
        "| package | files | MB | findings | files lint-fixed | converted / tried of candidates | crashes | broken parses | lint s | lint-fix s | convert s | wall s |"
    )
    print("|---|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|")
    for row in rows:
        print("| {} | {:,} | {:.1f} | {:,} | {:,} | {} | {} | {} | {:.0f} | {:.0f} | {:.0f} | {:.0f} |".format(*row))
    print(f"\nload average after: {os.getloadavg()[0]:.2f}")
    for problem in problems[:20]:
        print(f"\n{problem['path']}: {problem['crash'] or problem['broken']}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
