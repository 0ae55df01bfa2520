"""Compile settings written outside Python: ``accelerate config`` YAML, ``accelerate launch``
flags, ``ACCELERATE_DYNAMO_*`` variables, ``TrainingArguments`` flags and files.

:func:`mentions_settings` is the prefilter (a substring test, no parsing): most YAML, JSON and
shell files in a repository hold no compile setting and are rejected by it.
"""

from __future__ import annotations

from regcomp_lint.analysis.compile_settings.commands import read_commands
from regcomp_lint.analysis.compile_settings.comments import hash_comments
from regcomp_lint.analysis.compile_settings.model import LaunchCommand, Origin, Setting, SettingsFile
from regcomp_lint.analysis.compile_settings.structured import YamlError, load_documents, read_structured
from regcomp_lint.files.kinds import Kind
from regcomp_lint.knowledge.launch_settings import MARKERS

__all__ = [
    "LaunchCommand",
    "Origin",
    "Setting",
    "SettingsFile",
    "hash_comments",
    "mentions_settings",
    "parses_as",
    "read_settings",
]


_BYTE_MARKERS = tuple(marker.encode() for marker in MARKERS)


def mentions_settings(text: str | bytes) -> bool:
    """The prefilter, on the text or on the raw bytes (the markers are ASCII, so an unrelated file
    in any encoding is rejected before it is even decoded)."""
    if isinstance(text, bytes):
        return any(marker in text for marker in _BYTE_MARKERS)
    return any(marker in text for marker in MARKERS)


def read_settings(text: str, kind: Kind) -> SettingsFile:
    if kind in (Kind.YAML, Kind.JSON):
        found = read_structured(text, kind)
    else:
        lines = [(row, 0, line) for row, line in enumerate(text.splitlines(), start=1)]
        found = SettingsFile(kind)
        found.settings = read_commands(lines, commands=found.commands)
    found.lines = text.splitlines()
    return found


def parses_as(text: str, kind: Kind) -> bool:
    """The text still parses in its format (a fix must never break a file)."""
    if kind in (Kind.YAML, Kind.JSON):
        try:
            load_documents(text)
        except YamlError:
            return False
    return True
