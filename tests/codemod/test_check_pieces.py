"""The result check's comment test on the changed statements only (``convert._none_lost``).

``_check`` tokenizes only the top-level statements a conversion dropped and those it printed
anew when it can show that the kept ones tokenize alike in both files; otherwise (a string or
bracket left open, an error token) or when a comment is missing, the whole texts decide, so the
answer and the refusal's words are those of the full check."""

from __future__ import annotations

from pathlib import Path

import pytest

from regcomp_lint.codemod import convert
from regcomp_lint.codemod.convert import _check, _none_lost, convert_source

ROOT = Path(__file__).resolve().parents[2]


def test_comments_carried_over_are_not_lost() -> None:
    assert _none_lost(["x = 1  # keep\n# a line\n"], ["# a line\nx = f(1)  # keep\n", "y = 2  # new\n"])


def test_a_missing_comment_is_not_shown_lost_here() -> None:
    assert not _none_lost(["x = 1  # keep\n"], ["x = f(1)\n"])
    assert not _none_lost(["x = 1  # keep\n# keep\n"], ["x = f(1)  # keep\n"])  # counted


@pytest.mark.parametrize(
    "printed",
    ['s = """open\n', "x = (1,\n", "x = 1 + \\\n", "x = 'a\n"],
    ids=["string", "bracket", "continuation", "error-token"],
)
def test_a_printed_piece_that_does_not_end_between_statements_defers(printed: str) -> None:
    assert not _none_lost(["x = 1  # keep\n"], [printed, "# keep\n"])


def test_the_check_answers_as_the_full_one() -> None:
    before = "import torch\n# top\nx = 1  # one\ndef f():\n    # inner\n    return 2\n"
    kept_after = "import torch\nimport accelerate\n# top\nx = 1  # one\ndef f():\n    # inner\n    return 3\n"
    changed = (
        ["def f():\n    # inner\n    return 2\n"],
        ["import accelerate\n", "def f():\n    # inner\n    return 3\n"],
    )
    assert _check(before, kept_after, "t.py", changed) is None is _check(before, kept_after, "t.py")
    lost_after = kept_after.replace("    # inner\n", "")
    lossy = (changed[0], ["import accelerate\n", "def f():\n    return 3\n"])
    assert _check(before, lost_after, "t.py", lossy) == _check(before, lost_after, "t.py") is not None


def test_fixture_conversions_check_as_with_the_whole_texts(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[str | None, str | None]] = []
    real = convert._check

    def both(before: str, after: str, filename: str, changed=None) -> str | None:
        seen.append((real(before, after, filename, changed), real(before, after, filename)))
        return seen[-1][0]

    monkeypatch.setattr(convert, "_check", both)
    for path in sorted((ROOT / "fixtures" / "fix").glob("*/input.py")):
        convert_source(path.read_bytes().decode("utf-8", errors="replace"), str(path))
    assert seen and all(quick == full for quick, full in seen)
