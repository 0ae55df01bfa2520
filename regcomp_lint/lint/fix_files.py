"""``--fix`` and ``--diff`` on files: fix the text with ``lint.fixes.fix_source``, then write or diff it.

Writing goes through ``writeback`` (atomic, encoding/BOM/newlines/mode kept, never over a file
that changed since it was read). A file that cannot be fixed keeps its findings and reports why.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field

from regcomp_lint.diagnostics import Diagnostic
from regcomp_lint.files import writeback
from regcomp_lint.files.source import DecodeError, split_lines
from regcomp_lint.lint.config import Settings
from regcomp_lint.lint.fixes import applicable, fix_source


@dataclass
class FileFix:
    path: str
    fixed: int = 0
    remaining: list[Diagnostic] = field(default_factory=list)
    diff: str = ""
    new_text: str | None = None
    error: str | None = None


def needs_fixing(diagnostics: list[Diagnostic], unsafe: bool, unsafe_codes: frozenset[str] = frozenset()) -> bool:
    return any(applicable(d, unsafe, unsafe_codes) for d in diagnostics)


def fix_text(
    text: str,
    filename: str,
    diagnostics: list[Diagnostic],
    settings: Settings,
    unsafe: bool,
    unsafe_codes: frozenset[str] = frozenset(),
) -> FileFix:
    """Fix ``text`` in memory (stdin, or a file already read)."""
    new_text, remaining = fix_source(text, filename, settings, unsafe=unsafe, unsafe_codes=unsafe_codes)
    if new_text == text:
        return FileFix(filename, 0, remaining)
    return FileFix(
        filename, max(len(diagnostics) - len(remaining), 0), remaining, unified_diff(text, new_text, filename), new_text
    )


def fix_file(path: str, diagnostics: list[Diagnostic], settings: Settings, unsafe: bool, write: bool) -> FileFix:
    """Fix one file on disk; with ``write`` false only compute the diff."""
    try:
        snap = writeback.read(path)
    except OSError as exc:
        return FileFix(path, 0, diagnostics, error=f"{path}: cannot read: {exc.strerror or exc}")
    except DecodeError as exc:
        return FileFix(path, 0, diagnostics, error=f"{path}: cannot fix: {exc}")
    result = fix_text(snap.text, path, diagnostics, settings, unsafe)
    if write and result.new_text is not None:
        try:
            writeback.write(snap, result.new_text)
        except writeback.WritebackError as exc:
            return FileFix(path, 0, diagnostics, error=str(exc))
    return result


def unified_diff(old: str, new: str, filename: str) -> str:
    """A ``git apply``-able unified diff; marks a missing final newline like diff(1)."""
    lines = difflib.unified_diff(split_lines(old), split_lines(new), fromfile=f"a/{filename}", tofile=f"b/{filename}")
    out = []
    for line in lines:
        if line.endswith(("\n", "\r")):
            out.append(line)
        else:
            out.append(line + "\n\\ No newline at end of file\n")
    return "".join(out)
