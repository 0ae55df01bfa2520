"""Golden test: every ``fixtures/fix/<case>/input.py`` converts to exactly its ``expected.py``.

Regenerate with ``REGCOMP_UPDATE_GOLDEN=1 pytest tests/codemod/test_fixtures.py``, then review
each changed expected.py by eye: they are the specification of the conversion.
"""

from __future__ import annotations

import os

import pytest

from tests.codemod.fixture_cases import CASES, FIXTURES, convert_case

UPDATE = os.environ.get("REGCOMP_UPDATE_GOLDEN") == "1"


def _write_or_remove(path, content: str | bytes | None) -> None:
    if content is None:
        if path.exists():
            path.unlink()
    elif isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")


@pytest.mark.parametrize("case", CASES)
def test_conversion_matches_expected(case):
    folder = FIXTURES / case
    result = convert_case(case)
    notes = "".join(f"{note}\n" for note in result.notes) or None
    refusal = f"{result.refused}\n" if result.refused else None
    if UPDATE:
        _write_or_remove(folder / "expected.py", result.data)
        _write_or_remove(folder / "expected_refusal.txt", refusal)
        _write_or_remove(folder / "expected_notes.txt", notes)
    assert result.data == (folder / "expected.py").read_bytes()
    expected_refusal = folder / "expected_refusal.txt"
    assert refusal == (expected_refusal.read_text(encoding="utf-8") if expected_refusal.exists() else None)
    expected_notes = folder / "expected_notes.txt"
    assert notes == (expected_notes.read_text(encoding="utf-8") if expected_notes.exists() else None)


@pytest.mark.parametrize("case", CASES)
def test_refused_scripts_are_left_byte_identical(case):
    folder = FIXTURES / case
    if not (folder / "expected_refusal.txt").exists():
        assert (folder / "expected.py").read_bytes() != (folder / "input.py").read_bytes(), (
            "a converted case must change something"
        )
        return
    assert (folder / "expected.py").read_bytes() == (folder / "input.py").read_bytes()
    refusal = (folder / "expected_refusal.txt").read_text(encoding="utf-8")
    assert refusal.count("\n") == 1, "a refusal is one line"


def test_there_are_enough_cases():
    refusals = [c for c in CASES if (FIXTURES / c / "expected_refusal.txt").exists()]
    assert len(CASES) - len(refusals) >= 15
    assert len(refusals) >= 2
