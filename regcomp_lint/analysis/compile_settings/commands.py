"""Compile settings in command lines: shell scripts, Makefile recipes, Dockerfile ``RUN``/``ENV``,
``.env`` files and the ``run:`` blocks of CI workflows.

Each logical line (``\\`` continuations joined) is split into words with ``shlex`` (quotes and
``#`` comments as the shell reads them). Found:

- ``accelerate launch`` options before the script: ``--dynamo_backend X``, ``--dynamo_mode=X``,
  ``--dynamo_use_regional_compilation`` (``-`` or ``_``); the script and ``--config_file``;
- ``--torch_compile_backend/--torch_compile_mode/--torch_compile`` anywhere (HfArgumentParser);
- assignments of ``ACCELERATE_DYNAMO_*`` and ``TORCHDYNAMO_SUPPRESS_ERRORS``: ``NAME=value``
  (shell, ``export``, ``.env``, Dockerfile ``ENV``/``ARG``), ``ENV NAME value`` and Makefile
  ``NAME := value``.

Positions: each word is found again in the raw line from a cursor, and the logical line keeps
the row and column of every character, so a finding points at the value as written.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterable
from dataclasses import dataclass

from regcomp_lint.analysis.compile_settings.model import LaunchCommand, Origin, Setting
from regcomp_lint.diagnostics import Location
from regcomp_lint.knowledge import launch_settings as L

#: (row, 0-based column where ``text`` starts, text) of one physical line.
Line = tuple[int, int, str]

_FLAG_FIELDS = {flag: name for name, flag in L.LAUNCH_FLAGS.items()}
_VARIABLE_FIELDS = {variable: name for name, variable in L.ENVIRONMENT.items()}
_VARIABLE_FIELDS[L.SUPPRESS_ERRORS_VARIABLE] = "suppress_errors"
_TRAINER_FLAGS = {"--" + spelled: name for name, spelled in L.TRAINER_COMPILE_FIELDS.items()}
_MAKE_ASSIGN = frozenset({"=", ":=", "::=", "?=", "+="})


@dataclass
class _Logical:
    text: str
    places: list[tuple[int, int]]  # (row, 0-based column) of each character of text

    def location(self, offset: int) -> Location:
        if not self.places:
            return Location(1, 1)
        row, col = self.places[min(offset, len(self.places) - 1)]
        return Location(row, col + 1 + max(0, offset - (len(self.places) - 1)))


def logical_lines(lines: Iterable[Line]) -> list[_Logical]:
    """Join lines ending in ``\\`` with the next, keeping each character's place."""
    found: list[_Logical] = []
    text: list[str] = []
    places: list[tuple[int, int]] = []
    for row, col, raw in lines:
        body = raw.rstrip("\r\n")
        continued = body.endswith("\\") and not body.endswith("\\\\")
        if continued:
            body = body[:-1]
        text.append(body)
        places.extend((row, col + i) for i in range(len(body)))
        if continued:
            text.append(" ")
            places.append((row, col + len(body)))
            continue
        found.append(_Logical("".join(text), places))
        text, places = [], []
    if text:
        found.append(_Logical("".join(text), places))
    return found


def split_words(text: str) -> list[str] | None:
    """The words of a command as the shell reads them (None: unbalanced quotes)."""
    stripped = text.strip()
    for prefix in ("RUN ", "CMD ", "ENTRYPOINT "):  # Dockerfile exec form: a JSON list of words
        if stripped.startswith(prefix) and stripped[len(prefix) :].lstrip().startswith("["):
            try:
                words = json.loads(stripped[len(prefix) :])
            except ValueError:
                return None
            return [prefix.strip(), *[str(w) for w in words]] if isinstance(words, list) else None
    lexer = shlex.shlex(text, posix=True, punctuation_chars=";&|()<>")
    lexer.whitespace_split = True
    lexer.commenters = "#"
    try:
        return list(lexer)
    except ValueError:
        return None


class _Reader:
    def __init__(self, line: _Logical, scope: int, commands: list[LaunchCommand]) -> None:
        self.line = line
        self.scope = scope
        self.cursor = 0
        self.found: list[Setting] = []
        self.commands = commands

    def locate(self, text: str) -> tuple[Location, Location, bool]:
        """Where ``text`` is next written from the cursor (moved past it); quoted or not."""
        at = self.line.text.find(text, self.cursor) if text else -1
        if at < 0:
            here = self.line.location(self.cursor)
            return here, here, False
        self.cursor = at + len(text)
        before = self.line.text[at - 1] if at > 0 else ""
        return self.line.location(at), self.line.location(at + len(text)), before in "'\""

    def add(self, name: str, value: str, origin: Origin, spelled: str, command: LaunchCommand | None = None) -> None:
        if value:
            start, end, quoted = self.locate(value)
        else:
            start, end, quoted = self.locate(spelled)
        self.found.append(Setting(name, value, origin, spelled, start, end, self.scope, command, quoted))

    def skip_to(self, word: str) -> None:
        at = self.line.text.find(word.split("=", 1)[0], self.cursor)
        if at >= 0:
            self.cursor = at


def read_commands(
    lines: Iterable[Line], first_scope: int = 0, commands: list[LaunchCommand] | None = None
) -> list[Setting]:
    """Every compile setting in these lines; each logical line is its own scope. Launch commands
    that name a script are added to ``commands``."""
    commands = [] if commands is None else commands
    found: list[Setting] = []
    for number, line in enumerate(logical_lines(lines)):
        if not any(marker in line.text for marker in L.MARKERS):
            continue
        words = split_words(line.text)
        if not words:
            continue
        reader = _Reader(line, first_scope + number, commands)
        _read_words(reader, words)
        found.extend(reader.found)
    return found


def _is_launch(words: list[str], i: int) -> int:
    """How many words an ``accelerate launch`` command name takes at ``i`` (0: none)."""
    word = words[i].lstrip("@-")  # Makefile recipe prefixes
    for command in L.LAUNCH_COMMANDS:
        if word == command[0] and tuple(words[i + 1 : i + len(command)]) == command[1:]:
            return len(command)
    return 0


def _read_words(reader: _Reader, words: list[str]) -> None:
    i = 0
    while i < len(words):
        taken = _is_launch(words, i)
        if taken:
            reader.skip_to(words[i].lstrip("@-"))
            i = _read_launch(reader, words, i + taken)
            continue
        i = _read_other(reader, words, i)


def _read_launch(reader: _Reader, words: list[str], i: int) -> int:
    """The options of one ``accelerate launch`` up to its script; returns the index after it."""
    pending: list[tuple[str, str, str]] = []  # (field, value, spelled) until the script is known
    config_file = None
    begin = reader.cursor
    while i < len(words):
        word = words[i]
        if word in (";", "&&", "||", "|", "&"):
            break
        if not word.startswith("-"):
            start, end, _ = reader.locate(word)
            command = LaunchCommand(word, start, end, config_file)
            reader.commands.append(command)
            reader.cursor = begin  # settings are located from the start of the command again
            for name, value, spelled in pending:
                reader.skip_to(spelled)
                reader.add(name, value, Origin.LAUNCH_FLAG, spelled, command)
            reader.locate(word)
            return i + 1
        flag, has_value, inline = word.partition("=")
        name = L.flag_name(flag)
        if name in L.LAUNCH_SWITCHES:
            if name in _FLAG_FIELDS:
                pending.append((_FLAG_FIELDS[name], "", flag))
            i += 1
            continue
        value = inline if has_value else (words[i + 1] if i + 1 < len(words) else "")
        if name in _FLAG_FIELDS:
            pending.append((_FLAG_FIELDS[name], value, flag))
        elif name == L.CONFIG_FILE_FLAG:
            config_file = value
        i += 1 if has_value else 2
    # no script: the settings still count
    reader.cursor = begin
    for name, value, spelled in pending:
        reader.skip_to(spelled)
        reader.add(name, value, Origin.LAUNCH_FLAG, spelled)
    return i


def _read_other(reader: _Reader, words: list[str], i: int) -> int:
    word = words[i]
    variable, has_value, value = word.partition("=")
    if has_value and variable in _VARIABLE_FIELDS:
        reader.skip_to(variable)
        reader.add(_VARIABLE_FIELDS[variable], value, Origin.ENVIRONMENT, variable)
        return i + 1
    if word in _VARIABLE_FIELDS and i + 1 < len(words):
        following = words[i + 1]
        if following in _MAKE_ASSIGN and i + 2 < len(words):  # Makefile: NAME := value
            reader.skip_to(word)
            reader.add(_VARIABLE_FIELDS[word], words[i + 2], Origin.ENVIRONMENT, word)
            return i + 3
        if i > 0 and words[i - 1] in ("ENV", "ARG") and "=" not in following:  # Dockerfile: ENV NAME value
            reader.skip_to(word)
            reader.add(_VARIABLE_FIELDS[word], following, Origin.ENVIRONMENT, word)
            return i + 2
    flag = L.flag_name(variable)
    if flag in _TRAINER_FLAGS:
        name = _TRAINER_FLAGS[flag]
        reader.skip_to(variable)
        if has_value:
            reader.add(name, value, Origin.TRAINER_FLAG, variable)
            return i + 1
        following = words[i + 1] if i + 1 < len(words) else ""
        if name == "torch_compile" and (not following or following.startswith("-")):
            reader.add(name, "", Origin.TRAINER_FLAG, variable)  # a bare --torch_compile is True
            return i + 1
        if following:
            reader.add(name, following, Origin.TRAINER_FLAG, variable)
            return i + 2
    return i + 1
