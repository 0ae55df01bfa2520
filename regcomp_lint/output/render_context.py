"""What a renderer needs besides the diagnostics: colour, paths, source lines, fix counts."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from regcomp_lint.diagnostics import Applicability, Diagnostic
from regcomp_lint.files import reading
from regcomp_lint.files.source import DecodeError, decode_source, split_lines

_ANSI = {"bold": "1", "red": "31", "green": "32", "yellow": "33", "blue": "34", "cyan": "36", "dim": "2"}


@dataclass
class RenderContext:
    #: ANSI colour (the caller decides: TTY and no ``NO_COLOR``).
    color: bool = False
    #: ``--unsafe-fixes`` given: unsafe fixes count as applicable.
    unsafe_fixes: bool = False
    #: ``--fix`` ran: how many findings it fixed (for the summary line).
    fix_mode: bool = False
    fixed: int = 0
    #: Some paths could not be linted (errors follow the report): no "All checks passed!".
    incomplete: bool = False
    #: Files (stdin counts as one) that were linted; None: not known (library callers).
    files_linted: int | None = None
    #: False when the selection enables no rule at all (``--ignore ALL``): nothing was checked.
    rules_enabled: bool = True
    #: Text of files that are not on disk (stdin), by filename.
    sources: dict[str, str] = field(default_factory=dict)
    #: Folder paths are shown relative to.
    cwd: str = field(default_factory=os.getcwd)
    _lines: dict[str, list[str] | None] = field(default_factory=dict, repr=False)

    # -- fixes -----------------------------------------------------------------------------
    def fix_applies(self, diag: Diagnostic) -> bool:
        """Would ``--fix`` (with the current ``--unsafe-fixes``) apply this finding's fix?"""
        if diag.fix is None:
            return False
        if diag.fix.applicability is Applicability.SAFE:
            return True
        return self.unsafe_fixes and diag.fix.applicability is Applicability.UNSAFE

    @staticmethod
    def hidden_unsafe(diag: Diagnostic) -> bool:
        return diag.fix is not None and diag.fix.applicability is Applicability.UNSAFE

    # -- paths and source ------------------------------------------------------------------
    def display_path(self, filename: str) -> str:
        """``filename`` relative to ``cwd`` when it lies below it, else as given."""
        if filename in self.sources or filename.startswith("<"):
            return filename
        absolute = os.path.abspath(filename)
        try:
            rel = os.path.relpath(absolute, self.cwd)
        except ValueError:  # another drive on Windows
            return filename
        return filename if rel.startswith("..") else rel

    def source_line(self, filename: str, row: int) -> str | None:
        """Line ``row`` of the file without its ending, or None when it cannot be read."""
        if filename not in self._lines:
            self._lines[filename] = self._read_lines(filename)
        lines = self._lines[filename]
        if lines is None or not 1 <= row <= len(lines):
            return None
        return lines[row - 1].rstrip("\r\n")

    def _read_lines(self, filename: str) -> list[str] | None:
        text = self.sources.get(filename)
        if text is None:
            try:
                data = reading.read_bytes(filename)
            except OSError:
                return None
            try:
                text = decode_source(data)
            except DecodeError:
                text = data.decode("utf-8", errors="replace")
        return split_lines(text)

    # -- colour ----------------------------------------------------------------------------
    def style(self, text: str, *styles: str) -> str:
        if not self.color or not styles or not text:
            return text
        codes = ";".join(_ANSI[s] for s in styles)
        return f"\x1b[{codes}m{text}\x1b[0m"


def plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def color_enabled(stream) -> bool:
    """Colour only on a terminal; ``NO_COLOR`` (https://no-color.org) wins, ``FORCE_COLOR`` forces."""
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False
