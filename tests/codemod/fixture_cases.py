"""The before/after pairs in ``fixtures/fix/<case>/``: how to find them and run the conversion on one.

A case is ``input.py`` plus ``expected.py`` (the spec, reviewed by eye), and optionally
``options.json`` (ConvertOptions fields), ``plan.json`` (a plan from the tracer),
``expected_refusal.txt`` (the one line a refused script gets; then expected.py == input.py) and
``expected_notes.txt`` (what the conversion says it did).
"""

from __future__ import annotations

import json
from pathlib import Path

from regcomp_lint.codemod import ConversionResult, ConvertOptions, convert_bytes
from regcomp_lint.plan import Plan

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "fix"
CASES = sorted(p.name for p in FIXTURES.iterdir() if (p / "input.py").is_file())


def options_for(case: str, **overrides) -> ConvertOptions:
    folder = FIXTURES / case
    data = json.loads((folder / "options.json").read_text()) if (folder / "options.json").is_file() else {}
    if (folder / "plan.json").is_file():
        data["plan"] = Plan.load(folder / "plan.json")
    data.update(overrides)
    return ConvertOptions.from_dict(data)


def convert_case(case: str, **overrides) -> ConversionResult:
    data = (FIXTURES / case / "input.py").read_bytes()
    return convert_bytes(data, "input.py", options_for(case, **overrides))
