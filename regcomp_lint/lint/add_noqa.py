"""``--add-noqa`` (like ruff's): write a ``# noqa: CODE`` for every current finding.

For adopting the linter on an existing code base: the findings of today are silenced where they
are, and new ones still fail. A finding's suppression goes on the line it starts on (where
``# noqa`` works); codes already in a ``# noqa:`` there are kept and the new ones added to it.
A line whose comment would change the code (inside a multi-line string, after a ``\\``) is
left alone: the new text must parse, line by line. Tool findings (RC001-RC003) are never
silenced this way.
"""

from __future__ import annotations

import ast
import re
import warnings
from collections import defaultdict
from dataclasses import dataclass

from regcomp_lint.diagnostics import Diagnostic
from regcomp_lint.files import writeback
from regcomp_lint.files.source import DecodeError, comments, split_lines

#: Engine findings about the file or its suppressions: a noqa cannot (or must not) silence them.
NOT_SILENCED = frozenset({"RC001", "RC002", "RC003"})
_EXISTING = re.compile(r"#\s*noqa:\s*(?P<codes>[A-Za-z]+[0-9][A-Za-z0-9]*(?:\s*,\s*[A-Za-z]+[0-9][A-Za-z0-9]*)*)")


@dataclass
class NoqaResult:
    path: str
    added: int = 0
    skipped: int = 0
    error: str | None = None


def add_noqa_text(text: str, diagnostics: list[Diagnostic]) -> tuple[str, int, int]:
    """(new text, suppressions added, findings left without one)."""
    by_row: dict[int, set[str]] = defaultdict(set)
    for diag in diagnostics:
        if diag.code not in NOT_SILENCED:
            by_row[diag.location.row].add(diag.code)
    lines = split_lines(text)
    added = skipped = 0
    for row in sorted(by_row):
        if not 1 <= row <= len(lines):
            skipped += len(by_row[row])
            continue
        candidate = lines.copy()
        candidate[row - 1] = _with_noqa(lines[row - 1], sorted(by_row[row]))
        if _comment_added("".join(candidate), row):
            lines = candidate
            added += len(by_row[row])
        else:
            skipped += len(by_row[row])
    return "".join(lines), added, skipped


def add_noqa_file(path: str, diagnostics: list[Diagnostic]) -> NoqaResult:
    try:
        snap = writeback.read(path)
    except (OSError, DecodeError) as exc:
        return NoqaResult(path, error=f"{path}: cannot add suppressions: {exc}")
    new_text, added, skipped = add_noqa_text(snap.text, diagnostics)
    if added:
        try:
            writeback.write(snap, new_text)
        except writeback.WritebackError as exc:
            return NoqaResult(path, error=str(exc))
    return NoqaResult(path, added, skipped)


def _with_noqa(line: str, codes: list[str]) -> str:
    body = line.rstrip("\r\n")
    ending = line[len(body) :]
    existing = _EXISTING.search(body)
    if existing:
        have = [c.strip().upper() for c in existing.group("codes").split(",")]
        merged = have + [c for c in codes if c not in have]
        return body[: existing.start()] + f"# noqa: {', '.join(merged)}" + body[existing.end() :] + ending
    return f"{body.rstrip()}  # noqa: {', '.join(codes)}{ending}"


def _comment_added(text: str, row: int) -> bool:
    """The text parses and row ``row`` now ends in a real ``# noqa`` comment (not string content)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(text)
        return any(r == row and "noqa" in comment for r, _col, comment in comments(text))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
