"""RC501's advice where compilation is configured outside Python: an ``accelerate config`` file,
``accelerate launch`` command or ``ACCELERATE_DYNAMO_BACKEND=`` assignment that picks a backend
without regional compilation, and
``TrainingArguments`` flags/keys that compile through the ``Trainer`` (which can only be told
to compile regionally through the environment).

The fix turns regional compilation on in place (``dynamo_use_regional_compilation: true``, or
``--dynamo_use_regional_compilation`` after the backend flag); a variable gets no fix (an
``export``, a command prefix, a ``.env`` line, ``ENV`` and a workflow ``env:`` map each spell the
second variable differently). Safe: ``compile_regions``
compiles a model without repeated blocks whole, as before (accelerate 1.15
``utils/other.py``), and the numerics do not change; only what is compiled as one graph does.
"""

from __future__ import annotations

from regcomp_lint.analysis.compile_settings import Origin, Setting, SettingsFile
from regcomp_lint.checks.base import SettingsReport
from regcomp_lint.checks.settings_values import describe, is_templated
from regcomp_lint.diagnostics import Applicability, Edit, Fix, Location
from regcomp_lint.files.kinds import Kind
from regcomp_lint.knowledge.launch_settings import CONFIG_KEYS, ENVIRONMENT, LAUNCH_FLAGS, is_true_word

REGIONAL = "use_regional_compilation"
#: Text that turns regional compilation on outside the plugin: a Python file holding one is
#: trusted to set it (``os.environ[...] = "1"``, a launch command string).
REGIONAL_SWITCHES = (ENVIRONMENT[REGIONAL], LAUNCH_FLAGS[REGIONAL], CONFIG_KEYS[REGIONAL])
_TURN_ON = f"`{ENVIRONMENT[REGIONAL]}=1` in the launch environment or `accelerate launch {LAUNCH_FLAGS[REGIONAL]}`"


def regional_advice(found: SettingsFile) -> list[SettingsReport]:
    reports: list[SettingsReport] = []
    regional_anywhere = any(s.field == REGIONAL and _is_on(s) for s in found.settings)
    for setting in found.settings:
        if setting.field == "backend" and setting.origin in (Origin.CONFIG_FILE, Origin.LAUNCH_FLAG):
            if not _compiles(setting.value):
                continue
            regional = [s for s in found.in_scope(setting.scope) if s.field == REGIONAL]
            if any(_is_on(s) for s in regional):
                continue
            reports.append(_report_backend(found, setting, regional[0] if regional else None))
        elif setting.field == "backend" and setting.origin is Origin.ENVIRONMENT:
            # an exported variable reaches every later launch: regional on anywhere in the file
            # counts, and a backend flag on the same command wins over it (that flag is judged)
            flagged = any(
                s.field == "backend" and s.origin is Origin.LAUNCH_FLAG for s in found.in_scope(setting.scope)
            )
            if regional_anywhere or flagged or not _compiles(setting.value):
                continue
            reports.append(
                SettingsReport(
                    setting.start,
                    setting.end,
                    f"`{setting.spelled}={setting.value}` compiles the whole model: for a model of repeated blocks "
                    f"also set `{ENVIRONMENT[REGIONAL]}=1` (cold start stays flat with depth)",
                )
            )
        elif setting.origin in (Origin.TRAINER_FLAG, Origin.TRAINER_FILE) and setting.field in (
            "backend",
            "torch_compile",
        ):
            if regional_anywhere or not _trainer_compiles(setting):
                continue
            reports.append(
                SettingsReport(
                    setting.start,
                    setting.end,
                    f"the `Trainer` compiles the whole model ({describe(setting)}); for a model of repeated blocks "
                    f"(every transformers model) turn regional compilation on with {_TURN_ON}: "
                    "`TrainingArguments` has no field for it",
                )
            )
    return reports


def _compiles(backend: str) -> bool:
    return bool(backend) and not is_templated(backend) and backend.strip().lower() != "no"


def _trainer_compiles(setting: Setting) -> bool:
    if setting.field == "backend":
        return _compiles(setting.value)
    return setting.value == "" or is_true_word(setting.value)  # a bare --torch_compile is true


def _is_on(setting: Setting) -> bool:
    return setting.value == "" if setting.origin is Origin.LAUNCH_FLAG else is_true_word(setting.value)


def _report_backend(found: SettingsFile, backend: Setting, regional: Setting | None) -> SettingsReport:
    if backend.origin is Origin.LAUNCH_FLAG:
        message = (
            f"`accelerate launch {backend.spelled} {backend.value}` compiles the whole model: for a model of "
            f"repeated blocks add `{LAUNCH_FLAGS[REGIONAL]}` (cold start stays flat with depth)"
        )
        after = Location(backend.end.row, backend.end.column + 1) if backend.quoted else backend.end
        flag = Edit(f" {LAUNCH_FLAGS[REGIONAL]}", after, after)
        return SettingsReport(backend.start, backend.end, message, _fix([flag]))
    message = (
        f"`{backend.spelled}: {backend.value}` compiles the whole model: for a model of repeated blocks set "
        f"`{CONFIG_KEYS[REGIONAL]}: true` (cold start stays flat with depth)"
    )
    edit: Edit | None
    if regional is not None:
        edit = Edit("true", regional.start, regional.end) if not regional.quoted else None
    else:
        edit = _insert_key(found, backend)
    return SettingsReport(backend.start, backend.end, message, _fix([edit]) if edit else None)


def _insert_key(found: SettingsFile, backend: Setting) -> Edit | None:
    """A ``dynamo_use_regional_compilation: true`` line after the backend's, same indentation."""
    if found.kind is not Kind.YAML or backend.start.row != backend.end.row:
        return None
    line = found.lines[backend.start.row - 1]
    indent = line[: len(line) - len(line.lstrip())]
    if not line.lstrip().startswith(backend.spelled):  # a flow mapping: {dynamo_backend: X}
        return None
    at = Location(backend.start.row + 1, 1)
    return Edit(f"{indent}{CONFIG_KEYS[REGIONAL]}: true\n", at, at)


def _fix(edits: list[Edit]) -> Fix:
    return Fix(Applicability.SAFE, "Turn regional compilation on", tuple(edits))
