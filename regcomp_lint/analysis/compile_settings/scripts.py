"""Which compile settings a launched Python script fixes itself, so launch flags cannot change them.

``TorchDynamoPlugin.__post_init__`` reads ``ACCELERATE_DYNAMO_*`` (what ``accelerate launch``
flags and config files become) only for fields left ``None``. A script that passes
``TorchDynamoPlugin(backend=...)`` fixes ``backend``; ``TrainingArguments(torch_compile=True)``
or ``torch_compile_backend=`` makes the ``Trainer`` pass ``backend=`` (``inductor`` by default),
and ``torch_compile_mode=`` passes ``mode=``.
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass

from regcomp_lint.analysis import dependencies
from regcomp_lint.analysis.compile_settings.model import Origin, Setting
from regcomp_lint.analysis.compile_settings.structured import read_structured
from regcomp_lint.analysis.file_context import is_none
from regcomp_lint.analysis.reachability.modules import load_module
from regcomp_lint.files import reading
from regcomp_lint.files.kinds import Kind, is_settings_file
from regcomp_lint.files.parsing import walk
from regcomp_lint.knowledge.accelerate_api import DYNAMO_PLUGIN, PLUGIN_FIELDS
from regcomp_lint.knowledge.launch_settings import (
    TRAINER_COMPILE_FIELDS,
    TRAINING_ARGUMENTS,
    TRAINING_ARGUMENTS_SUBCLASSES,
)


@dataclass(frozen=True)
class FixedField:
    field: str
    row: int
    how: str  # what the script writes, for the message: ``TorchDynamoPlugin(backend=...)``


def script_path(settings_file: str, script: str) -> str | None:
    """The local ``.py`` file a launch command starts, looked for beside the settings file and
    in the current folder (where the command usually runs)."""
    if not script.endswith(".py") or "$" in script:
        return None
    for folder in (os.path.dirname(os.path.abspath(settings_file)), os.getcwd()):
        candidate = os.path.normpath(os.path.join(folder, script))
        if os.path.isfile(candidate):
            return candidate
    return None


def config_settings(settings_file: str, config_file: str) -> tuple[str, list[Setting]] | None:
    """The ``dynamo_config:`` settings of the YAML a launch command names with ``--config_file``
    (found beside the settings file or in the current folder), and its path."""
    if "$" in config_file:
        return None
    for folder in (os.path.dirname(os.path.abspath(settings_file)), os.getcwd()):
        candidate = os.path.normpath(os.path.join(folder, config_file))
        if os.path.isfile(candidate):
            dependencies.record(candidate)
            try:
                text = reading.read_bytes(candidate).decode("utf-8")
            except (OSError, UnicodeDecodeError):
                return None
            found = read_structured(text, Kind.JSON if candidate.endswith(".json") else Kind.YAML)
            return candidate, [s for s in found.settings if s.origin is Origin.CONFIG_FILE]
    return None


#: Settings files larger than this are not searched for a regional switch (data, not launch files).
_NEARBY_MAX_BYTES = 256 * 1024


def switch_nearby(path: str, switches: tuple[str, ...]) -> str | None:
    """A settings file beside ``path`` (a launch script, Makefile, accelerate config...) that
    mentions one of ``switches``: the name of the first, or None. The files read are recorded,
    so a cached finding goes stale when one of them changes."""
    if path.startswith("<") or path == "-":
        return None
    folder = os.path.dirname(os.path.abspath(path))
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return None
    for name in names:
        candidate = os.path.join(folder, name)
        if not is_settings_file(name) or not os.path.isfile(candidate):
            continue
        try:
            if os.path.getsize(candidate) > _NEARBY_MAX_BYTES:
                continue
            data = reading.read_bytes(candidate)
        except OSError:
            continue
        dependencies.record(candidate)
        if any(switch.encode() in data for switch in switches):
            return name
    return None


def fixed_fields(path: str) -> list[FixedField]:
    """The plugin fields ``path`` sets itself (first place for each field)."""
    module = load_module(path)
    if module is None:
        return []
    found: dict[str, FixedField] = {}
    plugin_names = {name.rsplit(".", 1)[1] for name in DYNAMO_PLUGIN}
    trainer_names = {name.rsplit(".", 1)[1] for name in TRAINING_ARGUMENTS + TRAINING_ARGUMENTS_SUBCLASSES}
    for node in walk(module.tree):
        if not isinstance(node, ast.Call):
            continue
        qualname = module.imports.qualname(node.func) or ""
        last = qualname.rsplit(".", 1)[-1] if qualname else _last_name(node.func)
        if last in plugin_names:
            given = {kw.arg: kw.value for kw in node.keywords if kw.arg}
            given.update(zip(PLUGIN_FIELDS, node.args))
            for name, value in given.items():
                if name in PLUGIN_FIELDS and not is_none(value):
                    found.setdefault(name, FixedField(name, node.lineno, f"TorchDynamoPlugin({name}=...)"))
        elif last in trainer_names:
            given = {kw.arg: kw.value for kw in node.keywords if kw.arg}
            compiles = _is_true(given.get(TRAINER_COMPILE_FIELDS["torch_compile"])) or any(
                TRAINER_COMPILE_FIELDS[f] in given and not is_none(given[TRAINER_COMPILE_FIELDS[f]])
                for f in ("backend", "mode")
            )
            if compiles:
                key = TRAINER_COMPILE_FIELDS["backend"]
                found.setdefault(
                    "backend", FixedField("backend", node.lineno, f"TrainingArguments({key}=...) or torch_compile=True")
                )
                if TRAINER_COMPILE_FIELDS["mode"] in given and not is_none(given[TRAINER_COMPILE_FIELDS["mode"]]):
                    found.setdefault(
                        "mode", FixedField("mode", node.lineno, "TrainingArguments(torch_compile_mode=...)")
                    )
    return list(found.values())


def _last_name(func: ast.AST) -> str:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return ""


def _is_true(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Constant) and node.value is True
