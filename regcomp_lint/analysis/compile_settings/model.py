"""The values the settings readers hand the rules: one ``Setting`` per value found, with where
it is written, and the launch command it belongs to."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from regcomp_lint.diagnostics import Location
from regcomp_lint.files.kinds import Kind


class Origin(str, enum.Enum):
    CONFIG_FILE = "accelerate config file"  # dynamo_config: section of a YAML/JSON file
    LAUNCH_FLAG = "accelerate launch flag"  # accelerate launch --dynamo_backend ...
    ENVIRONMENT = "environment variable"  # ACCELERATE_DYNAMO_*=..., TORCHDYNAMO_SUPPRESS_ERRORS=...
    TRAINER_FLAG = "TrainingArguments flag"  # --torch_compile_backend ... on a command line
    TRAINER_FILE = "TrainingArguments file key"  # torch_compile_backend: in an HfArgumentParser file


@dataclass(frozen=True)
class LaunchCommand:
    """An ``accelerate launch`` command: the script it starts, where that word is written."""

    script: str | None
    start: Location
    end: Location
    config_file: str | None = None


@dataclass(frozen=True)
class Setting:
    """One compile setting as written: ``field`` is the ``TorchDynamoPlugin`` field it feeds
    (``backend``, ``mode``, ``fullgraph``, ``dynamic``, ``use_regional_compilation``), or
    ``torch_compile`` / ``suppress_errors``; ``start``/``end`` span the value (the key or flag
    for a switch written without one)."""

    field: str
    value: str
    origin: Origin
    spelled: str  # the key, flag or variable as written
    start: Location
    end: Location
    scope: int  # settings of one command, one config section or one file share a scope
    command: LaunchCommand | None = None
    quoted: bool = False


@dataclass
class SettingsFile:
    kind: Kind
    settings: list[Setting] = field(default_factory=list)
    #: (message, location) when the file does not parse in its format
    error: tuple[str, Location] | None = None
    lines: list[str] = field(default_factory=list)  # the text's lines, without line endings
    commands: list[LaunchCommand] = field(default_factory=list)  # every launch command with a script

    def in_scope(self, scope: int) -> list[Setting]:
        return [s for s in self.settings if s.scope == scope]

    def scope_value(self, scope: int, name: str) -> str | None:
        for setting in self.settings:
            if setting.scope == scope and setting.field == name:
                return setting.value
        return None
