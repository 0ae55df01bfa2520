"""``# noqa`` and ``# regcomp: ignore[...]`` comments: which findings they silence, and RC002/RC003.

- ``# noqa`` (bare) or ``# noqa: RC101, RC102`` on the line a finding starts on.
- ``# regcomp: ignore`` / ``# regcomp: ignore[RC101]`` on that line, on the first line of the
  statement holding the finding, or alone on the line just above that statement.

A code of ours (``RC...``) listed in a suppression that silenced nothing is RC002; one that is
not a rule at all is RC003. Foreign codes (``E501``) and bare ``# noqa`` belong to other tools
and are left alone.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from regcomp_lint.files.source import comments

# A code is letters then a digit then any alphanumerics, so a typo such as ``RC1O1`` stays one
# (unknown) code instead of splitting into ``RC1`` and ``O1``.
_NOQA = re.compile(
    r"#\s*noqa(?::\s*(?P<codes>[A-Za-z]+[0-9][A-Za-z0-9]*(?:(?:\s*,\s*|\s+)[A-Za-z]+[0-9][A-Za-z0-9]*)*))?",
    re.IGNORECASE,
)
_IGNORE = re.compile(r"#\s*regcomp:\s*ignore(?:\[(?P<codes>[^\]]*)\])?")
_CODE = re.compile(r"[A-Za-z]+[0-9][A-Za-z0-9]*|[A-Za-z0-9_]+")


@dataclass
class Suppression:
    kind: str  # "noqa" or "ignore"
    row: int
    column: int  # 0-based char column of the directive inside the line
    end_column: int
    codes: list[str] | None  # None: every code
    own_line: bool  # the comment is alone on its line
    used: set[str] = field(default_factory=set)
    used_any: bool = False

    def covers(self, code: str) -> bool:
        return self.codes is None or code in self.codes


def might_have_suppressions(text: str) -> bool:
    return "noqa" in text or "NOQA" in text or "regcomp:" in text


def parse(
    text: str, lines: list[str], found_comments: Iterable[tuple[int, int, str]] | None = None
) -> list[Suppression]:
    """Directives in the comments of a Python text, or in ``found_comments`` (other formats)."""
    found: list[Suppression] = []
    for row, col, comment in comments(text) if found_comments is None else found_comments:
        own_line = lines[row - 1][:col].strip() == "" if row - 1 < len(lines) else False
        for regex, kind in ((_NOQA, "noqa"), (_IGNORE, "ignore")):
            for m in regex.finditer(comment):
                raw = m.group("codes")
                codes = None if raw is None else [c.upper() for c in _CODE.findall(raw)]
                if kind == "ignore" and raw is not None and not codes:
                    codes = None
                found.append(Suppression(kind, row, col + m.start(), col + m.end(), codes, own_line))
    return found


class SuppressionIndex:
    def __init__(self, suppressions: list[Suppression]) -> None:
        self.all = suppressions
        self.by_row: dict[int, list[Suppression]] = {}
        for sup in suppressions:
            self.by_row.setdefault(sup.row, []).append(sup)

    def match(self, code: str, row: int, stmt_row: int) -> Suppression | None:
        """The suppression that silences ``code`` at ``row`` (statement starting at ``stmt_row``)."""
        for sup in self.by_row.get(row, ()):
            if sup.covers(code):
                return sup
        for candidate_row in (stmt_row, stmt_row - 1):
            for sup in self.by_row.get(candidate_row, ()):
                if sup.kind != "ignore" or not sup.covers(code):
                    continue
                if candidate_row == stmt_row or sup.own_line:
                    return sup
        return None
