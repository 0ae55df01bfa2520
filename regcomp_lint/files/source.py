"""Reading a Python file the way the interpreter does, and mapping ``ast`` positions to text.

``ast`` reports columns as UTF-8 byte offsets; everything the user sees counts characters. The
helpers here do that conversion once, in one place.
"""

from __future__ import annotations

import codecs
import io
import re
import tokenize
from dataclasses import dataclass
from functools import cached_property
from itertools import accumulate
from typing import Protocol

from regcomp_lint.diagnostics import Edit, Location

_CODING_COOKIE = re.compile(r"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)", re.MULTILINE)


class DecodeError(Exception):
    """The bytes are not text in the encoding the file declares (or UTF-8)."""

    def __init__(self, message: str, row: int = 1, column: int = 1):
        super().__init__(message)
        self.row = row
        self.column = column


def decode_source(data: bytes) -> str:
    """Decode like the interpreter: BOM, then a PEP 263 coding line, else UTF-8.

    The BOM is dropped from the returned text (callers that write files keep the raw bytes).
    """
    if b"\x00" in data:
        row = data[: data.index(b"\x00")].count(b"\n") + 1
        raise DecodeError("source contains a NUL byte: not a Python text file", row)
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        message = exc.msg if hasattr(exc, "msg") else str(exc)
        if not message.startswith("invalid or missing encoding declaration"):
            raise DecodeError(f"cannot determine the encoding: {message}") from exc
        # tokenize says this when line 1 or 2 is not UTF-8; read the cookie from the raw bytes
        # (as the interpreter does) so the decode below reports the bad byte where it is
        cookie = _CODING_COOKIE.search(b"\n".join(data.split(b"\n", 2)[:2]).decode("latin-1"))
        encoding = cookie.group(1) if cookie else "utf-8"
    try:
        text = data.decode(encoding)
    except (UnicodeDecodeError, LookupError) as exc:
        start = getattr(exc, "start", 0)
        row = data[:start].count(b"\n") + 1
        line_start = data.rfind(b"\n", 0, start) + 1
        if line_start == 0 and data.startswith(codecs.BOM_UTF8):
            line_start = len(codecs.BOM_UTF8)
        try:
            column = len(data[line_start:start].decode(encoding, errors="replace")) + 1  # characters, not bytes
        except LookupError:
            column = start - line_start + 1
        raise DecodeError(
            f"file is not valid {encoding} text: {exc.reason if hasattr(exc, 'reason') else exc}", row, column
        ) from exc
    if text.startswith("\ufeff"):
        text = text[1:]
    return text


def split_lines(text: str) -> list[str]:
    """Split on ``\\r\\n``, ``\\r`` and ``\\n`` only (what the tokenizer counts), keeping ends."""
    # StringIO with newline="" recognises exactly \r\n, \r and \n and keeps them untranslated;
    # it is C code, ~30x faster than a regex split on large files.
    return io.StringIO(text, newline="").readlines()


class Positioned(Protocol):
    """An ast node that carries a source position (expressions, statements, arguments, keywords...)."""

    lineno: int
    col_offset: int
    end_lineno: int | None
    end_col_offset: int | None


@dataclass
class SourceFile:
    """Text of one file plus position helpers shared by every rule."""

    filename: str
    text: str

    def __post_init__(self) -> None:
        self._line_bytes: dict[int, bytes] = {}

    @cached_property
    def lines(self) -> list[str]:
        """Split on first use: most files are never reported on, and splitting every file of a
        large tree costs more than walking the few that are."""
        return split_lines(self.text)

    def line(self, row: int) -> str:
        """Line ``row`` (1-based) without its line ending; '' past the end."""
        if 1 <= row <= len(self.lines):
            return self.lines[row - 1].rstrip("\r\n")
        return ""

    def char_column(self, row: int, byte_col: int) -> int:
        """0-based character column from ast's 0-based byte column."""
        line = self.line(row)
        if line.isascii():
            return byte_col
        raw = self._line_bytes.get(row)
        if raw is None:
            raw = self._line_bytes[row] = line.encode("utf-8")
        return len(raw[:byte_col].decode("utf-8", errors="replace"))

    def start(self, node: Positioned) -> Location:
        return Location(node.lineno, self.char_column(node.lineno, node.col_offset) + 1)

    def end(self, node: Positioned) -> Location:
        row = node.end_lineno or node.lineno
        col = node.end_col_offset if node.end_col_offset is not None else node.col_offset
        return Location(row, self.char_column(row, col) + 1)

    def segment(self, node: Positioned) -> str:
        return self.text_between(self.start(node), self.end(node))

    def offset(self, loc: Location) -> int:
        """Character offset in ``text`` of a location."""
        if loc.row < 1:  # (not a real row: the sum over all but the last lines, as slicing gives)
            return sum(len(line) for line in self.lines[: loc.row - 1]) + loc.column - 1
        return self._line_starts[min(loc.row - 1, len(self.lines))] + loc.column - 1

    @cached_property
    def _line_starts(self) -> list[int]:
        """Character offset of each line's start (and of the end of the text): ``offset`` is one
        lookup, not a sum over every line above (quadratic with a fix per line)."""
        return [0, *accumulate(len(line) for line in self.lines)]

    def text_between(self, start: Location, end: Location) -> str:
        return self.text[self.offset(start) : self.offset(end)]

    def replace(self, node: Positioned, content: str) -> Edit:
        return Edit(content, self.start(node), self.end(node))

    def insert_at(self, loc: Location, content: str) -> Edit:
        return Edit(content, loc, loc)

    @property
    def newline(self) -> str:
        """The file's own line ending, so inserted lines match it."""
        for line in self.lines:
            if line.endswith("\r\n"):
                return "\r\n"
            if line.endswith("\r"):
                return "\r"
            if line.endswith("\n"):
                return "\n"
        return "\n"


def apply_edits(text: str, edits: list[Edit]) -> str:
    """Apply non-overlapping edits (any order) to ``text``."""
    src = SourceFile("<edit>", text)
    spans = sorted(((src.offset(e.location), src.offset(e.end_location), e.content) for e in edits), reverse=True)
    out = text
    last_start = None
    for start, end, content in spans:
        if last_start is not None and end > last_start:
            raise ValueError("overlapping edits")
        out = out[:start] + content + out[end:]
        last_start = start
    return out


def comments(text: str) -> list[tuple[int, int, str]]:
    """All comments as (row, 0-based char column, text) using the real tokenizer (not a regex),
    so a ``#`` inside a string is never mistaken for a comment."""
    found = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT:
                found.append((tok.start[0], tok.start[1], tok.string))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        pass
    return found


def utf8_bom(data: bytes) -> bool:
    return data.startswith(codecs.BOM_UTF8)
