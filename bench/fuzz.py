"""Long fuzz profile: >= 5,000 generated programs (hypothesmith) through lint, fix and convert.

    python bench/fuzz.py                 # 5,000 programs from the grammar
    python bench/fuzz.py --count 500 --strategy node

Checks the properties of ``tests/reliability/fuzz_properties.py`` (the fast profile is
``tests/reliability/test_fuzz.py``): lint never raises; lint fixes parse and are idempotent;
libcst's round trip is exact or the conversion refuses; the conversion's output parses, is
idempotent and keeps the generated lines. Failures are collected, not raised, so every program
runs; prints the count and a table, exits 1 when any property failed.
"""

from __future__ import annotations

import argparse
import sys
import time
import traceback
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import hypothesmith  # noqa: E402
from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402

from tests.reliability import fuzz_properties as props  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=5000)
    parser.add_argument("--strategy", choices=["grammar", "node"], default="grammar")
    args = parser.parse_args()
    strategy = hypothesmith.from_grammar() if args.strategy == "grammar" else hypothesmith.from_node()
    seconds: Counter = Counter()
    failed: Counter = Counter()
    examples: dict[str, str] = {}
    programs = [0]
    inexact = [0]
    began = time.monotonic()

    @settings(
        max_examples=args.count,
        deadline=None,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(code=strategy)
    def run(code: str) -> None:
        programs[0] += 1
        for prop in props.ALL:
            start = time.perf_counter()
            try:
                result = prop(code)
                if prop is props.cst_round_trip and result is False:
                    inexact[0] += 1
            except Exception:  # noqa: BLE001 - collected and reported
                failed[prop.__name__] += 1
                examples.setdefault(prop.__name__, f"{code!r}\n{traceback.format_exc(limit=3)}")
            seconds[prop.__name__] += time.perf_counter() - start
        if programs[0] % 500 == 0:
            print(f"... {programs[0]} programs, {time.monotonic() - began:.0f} s", file=sys.stderr, flush=True)

    run()
    total = time.monotonic() - began
    print(f"{programs[0]} generated programs ({args.strategy}), {total:.0f} s wall")
    print()
    print("| property | failures | seconds |")
    print("|---|---:|---:|")
    for prop in props.ALL:
        print(f"| {prop.__name__} | {failed[prop.__name__]} | {seconds[prop.__name__]:.1f} |")
    print(f"\nlibcst round trip not exact (conversion refused, nothing changed): {inexact[0]} programs")
    for name, example in examples.items():
        print(f"\nfirst failure of {name}:\n{example}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
