"""regcomp-fix gives the same answer whatever Python's hash seed.

A set iterated where order reaches the output made sweep15's coconut_muon convert to
``prepare(model, model, optimizer)`` under PYTHONHASHSEED 0, 1 and 5 and to ``prepare(model,
optimizer)`` under others. Each seed runs in its own interpreter (the seed is fixed at start-up);
every golden input and equivalence script is converted and the results compared."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]

_CONVERT_ALL = """
import json, sys
from pathlib import Path
from regcomp_lint.codemod import convert_source
out = {}
for folder in ("fixtures/fix", "fixtures/equivalence"):
    for path in sorted(Path(folder).rglob("*.py")):
        if path.name in ("expected.py", "case.py"):
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:  # the coding-line fixtures; their decoding is tested elsewhere
            continue
        try:
            result = convert_source(text, str(path))
        except Exception as error:  # a crash is an answer too, and must not depend on the seed
            out[str(path)] = repr(error)
            continue
        out[str(path)] = [result.text, result.refused, result.notes]
json.dump(out, sys.stdout)
"""


def _convert_all(seed: str) -> dict:
    env = {**os.environ, "PYTHONHASHSEED": seed}
    done = subprocess.run(
        [sys.executable, "-c", _CONVERT_ALL], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout)


def test_every_fixture_converts_the_same_under_two_hash_seeds():
    first, second = _convert_all("1"), _convert_all("2")
    assert len(first) > 100, "the fixture folders were not found"
    differ = sorted(path for path in first if first[path] != second.get(path))
    assert not differ, differ
