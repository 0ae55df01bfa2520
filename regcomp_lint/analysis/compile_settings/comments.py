"""``#`` comments in YAML, shell, Makefile, Dockerfile and ``.env`` text, for ``# noqa``.

A ``#`` starts a comment at the start of a line or after white space, outside quotes: the rule
YAML and the shell share (``a#b`` and ``"# x"`` are not comments). JSON has no comments.
"""

from __future__ import annotations

from collections.abc import Iterator


def hash_comments(lines: list[str]) -> Iterator[tuple[int, int, str]]:
    """(row, 0-based column, comment text from ``#``) for each comment."""
    for row, line in enumerate(lines, start=1):
        quote = ""
        for col, char in enumerate(line):
            if quote:
                if char == quote:
                    quote = ""
            elif char in "'\"":
                quote = char
            elif char == "#" and (col == 0 or line[col - 1] in " \t"):
                yield row, col, line[col:]
                break
