"""Compile settings in YAML and JSON files, read with ruamel.yaml's round-trip loader (it keeps
each key's and value's line and column; JSON is read as the YAML it is).

Found anywhere in the document, at any depth:

- a ``dynamo_config:`` mapping (``accelerate config`` files, also nested in a bigger file) and
  an old top-level ``dynamo_backend`` beside accelerate's ``compute_environment``;
- ``torch_compile``, ``torch_compile_backend``, ``torch_compile_mode`` keys (the files
  ``HfArgumentParser.parse_yaml_file/parse_json_file`` read);
- ``ACCELERATE_DYNAMO_*`` / ``TORCHDYNAMO_SUPPRESS_ERRORS`` as keys (CI ``env:``, compose
  ``environment:``) or as ``NAME=value`` list items;
- command lines in string values (a workflow's ``run: |`` block, a compose ``command:``): the
  raw lines of the value are read by :mod:`commands`, so positions stay exact.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from regcomp_lint.analysis.compile_settings.commands import Line, read_commands
from regcomp_lint.analysis.compile_settings.model import LaunchCommand, Origin, Setting, SettingsFile
from regcomp_lint.diagnostics import Location
from regcomp_lint.files.kinds import Kind
from regcomp_lint.knowledge import launch_settings as L

_CONFIG_FIELDS = {key: name for name, key in L.CONFIG_KEYS.items()}
_TRAINER_FIELDS = {key: name for name, key in L.TRAINER_COMPILE_FIELDS.items()}
_VARIABLE_FIELDS = {variable: name for name, variable in L.ENVIRONMENT.items()}
_VARIABLE_FIELDS[L.SUPPRESS_ERRORS_VARIABLE] = "suppress_errors"
#: A top-level key that marks an ``accelerate config`` file (for the old top-level dynamo_backend).
_ACCELERATE_CONFIG_MARKERS = ("compute_environment", "distributed_type")


class YamlError(Exception):
    def __init__(self, message: str, location: Location) -> None:
        super().__init__(message)
        self.location = location


def load_documents(text: str) -> list[Any]:
    """Every document of a YAML (or JSON) text, round-trip loaded; raises :class:`YamlError`."""
    from ruamel.yaml import YAML  # imported only for a file that passed the prefilter
    from ruamel.yaml.error import MarkedYAMLError, YAMLError

    yaml = YAML(typ="rt")
    try:
        return list(yaml.load_all(text))
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = Location(mark.line + 1, mark.column + 1) if mark is not None else Location(1, 1)
        raise YamlError(f"{exc.problem or exc.context or 'invalid YAML'}", where) from None
    except (YAMLError, ValueError, RecursionError) as exc:
        raise YamlError(str(exc).splitlines()[0] if str(exc) else type(exc).__name__, Location(1, 1)) from None


def read_structured(text: str, kind: Kind) -> SettingsFile:
    found = SettingsFile(kind)
    try:
        documents = load_documents(text)
    except YamlError as exc:
        found.error = (f"cannot parse {'JSON' if kind is Kind.JSON else 'YAML'}: {exc}", exc.location)
        return found
    reader = _Reader(text.splitlines(), found.commands)
    for document in documents:
        reader.visit(document, top=True)
    found.settings = reader.found
    return found


class _Reader:
    def __init__(self, lines: list[str], commands: list[LaunchCommand]) -> None:
        self.lines = lines
        self.commands = commands
        self.found: list[Setting] = []
        self.scope = 0

    def new_scope(self) -> int:
        self.scope += 1
        return self.scope

    def visit(self, node: Any, top: bool = False) -> None:
        from ruamel.yaml.comments import CommentedMap, CommentedSeq

        if isinstance(node, CommentedMap):
            self._mapping(node, top)
        elif isinstance(node, CommentedSeq):
            for index, item in enumerate(node):
                if isinstance(item, str):
                    row, col = node.lc.item(index)
                    self._string(item, row, col, in_list=True)
                else:
                    self.visit(item)

    def _mapping(self, node: Any, top: bool) -> None:
        trainer_scope = self.new_scope()
        for key, value in node.items():
            if not isinstance(key, str):
                self.visit(value)
                continue
            if key == L.CONFIG_SECTION and _is_mapping(value):
                self._section(value)
            elif key == "dynamo_backend" and top and any(k in node for k in _ACCELERATE_CONFIG_MARKERS):
                self._value(node, key, "backend", Origin.CONFIG_FILE, self.new_scope())
            elif key in _TRAINER_FIELDS:
                self._value(node, key, _TRAINER_FIELDS[key], Origin.TRAINER_FILE, trainer_scope)
            elif key in _VARIABLE_FIELDS and not _is_container(value):
                self._value(node, key, _VARIABLE_FIELDS[key], Origin.ENVIRONMENT, trainer_scope)
            elif isinstance(value, str):
                where = _value_position(node, key)
                if where is not None:
                    self._string(value, *where)
            else:
                self.visit(value)

    def _section(self, section: Any) -> None:
        scope = self.new_scope()
        for key in section:
            if isinstance(key, str) and key in _CONFIG_FIELDS:
                self._value(section, key, _CONFIG_FIELDS[key], Origin.CONFIG_FILE, scope)

    def _value(self, mapping: Any, key: str, name: str, origin: Origin, scope: int) -> None:
        value = mapping[key]
        where = _value_position(mapping, key)
        if _is_container(value) or where is None:
            return  # a value merged in from an anchor (``<<: *base``) is reported where it is written
        row, col = where
        key_row, key_col = mapping.lc.key(key)
        if value is None:  # ``dynamo_backend:`` with nothing: point at the key
            start = Location(key_row + 1, key_col + 1)
            self.found.append(
                Setting(name, "", origin, key, start, Location(key_row + 1, key_col + 1 + len(key)), scope)
            )
            return
        raw_start, raw_end, quoted = self._scalar_span(row, col)
        text = str(value) if not isinstance(value, bool) else self._raw(row, raw_start, raw_end)
        self.found.append(
            Setting(
                name,
                text,
                origin,
                key,
                Location(row + 1, raw_start + 1),
                Location(row + 1, raw_end + 1),
                scope,
                None,
                quoted,
            )
        )

    def _raw(self, row: int, start: int, end: int) -> str:
        return self.lines[row][start:end] if row < len(self.lines) else ""

    def _scalar_span(self, row: int, col: int) -> tuple[int, int, bool]:
        """0-based (start, end) columns of a one-line scalar's text, and whether it is quoted."""
        line = self.lines[row] if row < len(self.lines) else ""
        if col < len(line) and line[col] in "'\"":
            close = line.find(line[col], col + 1)
            return col + 1, (close if close > col else len(line)), True
        end = len(line)
        for stop in (" #", ",", "}", "]"):
            at = line.find(stop, col)
            if at >= 0:
                end = min(end, at)
        return col, len(line[:end].rstrip()), False

    def _string(self, value: str, row: int, col: int, in_list: bool = False) -> None:
        """A string value: a ``NAME=value`` list item, or command lines to read."""
        if not any(marker in value for marker in L.MARKERS):
            return
        line = self.lines[row] if row < len(self.lines) else ""
        if col < len(line) and line[col] in "|>":  # a block scalar: its raw lines follow
            lines = list(self._block_lines(row))
        else:
            lines = [(row + 1, col, line[col:])]
        first = self.scope + 1
        self.found.extend(read_commands(lines, first_scope=first, commands=self.commands))
        self.scope = first + len(lines)

    def _block_lines(self, row: int) -> Iterator[Line]:
        """The raw lines of a ``|``/``>`` block scalar whose indicator is on ``row`` (0-based)."""
        indent = None
        owner = len(self.lines[row]) - len(self.lines[row].lstrip())
        for number in range(row + 1, len(self.lines)):
            raw = self.lines[number]
            if not raw.strip():
                continue
            here = len(raw) - len(raw.lstrip())
            if indent is None:
                if here <= owner:
                    return
                indent = here
            elif here < indent:
                return
            yield number + 1, indent, raw[indent:]


def _value_position(mapping: Any, key: str) -> tuple[int, int] | None:
    """0-based (row, column) of a key's value as written in this mapping (None: merged in)."""
    try:
        where = mapping.lc.value(key)
    except (KeyError, TypeError, AttributeError):
        return None
    if not isinstance(where, (tuple, list)) or len(where) != 2:
        return None
    return where[0], where[1]


def _is_mapping(value: Any) -> bool:
    from ruamel.yaml.comments import CommentedMap

    return isinstance(value, CommentedMap)


def _is_container(value: Any) -> bool:
    return isinstance(value, (dict, list))
