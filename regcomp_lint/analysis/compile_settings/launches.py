"""How the project launches a script: the ``TorchDynamoPlugin`` fields its launch commands set.

The reverse of RC406's question. A project that starts ``train.py`` with
``accelerate launch --dynamo_backend no train.py`` (in ``run.sh``, a Makefile, a Dockerfile...),
or with ``--config_file fsdp.yaml`` whose ``dynamo_config:`` sets fields, or that sets
``ACCELERATE_DYNAMO_*`` in a ``.env`` file, chooses those fields outside the script. The
converter must leave them out of the plugin it writes (``TorchDynamoPlugin.__post_init__`` reads
the launch's value only for a field left ``None``), or the launch setting would silently stop
working.

The settings files looked at are those beside the script, in a ``scripts/`` folder beside it,
and the same in the folder above (where launch scripts of a ``src/`` or ``examples/`` layout
live); each is prefiltered on its bytes, as the lint does.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass

from regcomp_lint.analysis.compile_settings import mentions_settings, read_settings
from regcomp_lint.analysis.compile_settings.model import Origin, SettingsFile
from regcomp_lint.analysis.compile_settings.scripts import config_settings, script_path
from regcomp_lint.files import reading
from regcomp_lint.files.kinds import is_settings_file, kind_of
from regcomp_lint.knowledge.accelerate_api import PLUGIN_FIELDS

#: Larger files are data, not launch files.
_MAX_BYTES = 256 * 1024


@dataclass(frozen=True)
class LaunchedField:
    """A plugin field a launch of the script sets, and where (``run.sh:2 `--dynamo_backend no```)."""

    field: str
    value: str
    where: str


def launched_fields(script: str) -> dict[str, LaunchedField]:
    """The plugin fields the project's launch commands, their config files and ``.env`` files set
    for ``script`` (a path), first place for each field."""
    if script.startswith("<") or script == "-" or not os.path.isfile(script):
        return {}
    target = os.path.normpath(os.path.abspath(script))
    found: dict[str, LaunchedField] = {}
    for path in _candidates(os.path.dirname(target)):
        for launched in _fields_in(path, target):
            found.setdefault(launched.field, launched)
    return found


def _candidates(folder: str) -> list[str]:
    folders = [folder, os.path.join(folder, "scripts")]
    parent = os.path.dirname(folder)
    if parent != folder:
        folders += [parent, os.path.join(parent, "scripts")]
    paths = []
    for where in folders:
        try:
            names = sorted(os.listdir(where))
        except OSError:
            continue
        paths += [os.path.join(where, n) for n in names if is_settings_file(n)]
    return paths


def _settings_in(path: str) -> SettingsFile | None:
    """What the settings file ``path`` sets (None: not a file, too large, unreadable, not UTF-8,
    or nothing a launch reads), read once per file while it stays the same: a folder of scripts
    asks about the same launch files once per script (a YAML of the parent folder, read by
    ruamel for each of 35 scripts, took most of a folder run)."""
    try:
        status = os.stat(path)
    except OSError:
        return None
    if not stat.S_ISREG(status.st_mode) or status.st_size > _MAX_BYTES:
        return None
    key = (path, status.st_size, status.st_mtime_ns)
    if key in _READ:
        return _READ[key]
    try:
        data = reading.read_bytes(path)
    except OSError:
        return None
    found: SettingsFile | None = None
    if mentions_settings(data):
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            pass
        else:
            found = read_settings(text, kind_of(path, text))
    if len(_READ) >= _REMEMBERED:
        _READ.clear()
    _READ[key] = found
    return found


#: settings files read, by path, size and modification time
_READ: dict[tuple[str, int, int], SettingsFile | None] = {}
_REMEMBERED = 256


def _fields_in(path: str, target: str) -> list[LaunchedField]:
    found = _settings_in(path)
    if found is None:
        return []
    shown = os.path.relpath(path, os.path.dirname(target))
    out: list[LaunchedField] = []
    for setting in found.settings:
        if setting.field not in PLUGIN_FIELDS:
            continue
        command = setting.command
        if setting.origin is Origin.LAUNCH_FLAG and command is not None and command.script is not None:
            if script_path(path, command.script) == target:
                out.append(
                    LaunchedField(
                        setting.field, setting.value, f"{shown}:{setting.start.row} `{setting.spelled} {setting.value}`"
                    )
                )
        elif setting.origin is Origin.ENVIRONMENT and os.path.dirname(path) == os.path.dirname(target):
            out.append(
                LaunchedField(
                    setting.field, setting.value, f"{shown}:{setting.start.row} `{setting.spelled}={setting.value}`"
                )
            )
    for command in found.commands:
        if command.config_file is None or command.script is None or script_path(path, command.script) != target:
            continue
        config = config_settings(path, command.config_file)
        if config is None:
            continue
        config_path, settings = config
        for setting in settings:
            if setting.field in PLUGIN_FIELDS:
                where = f"{os.path.relpath(config_path, os.path.dirname(target))}:{setting.start.row}"
                out.append(LaunchedField(setting.field, setting.value, f"{where} `{setting.spelled}: {setting.value}`"))
    return out
