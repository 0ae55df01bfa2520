"""What the rules that read settings files share: naming a setting as the user wrote it, and
the edit that replaces its value in place (comments, quotes and layout untouched)."""

from __future__ import annotations

from regcomp_lint.analysis.compile_settings import Origin, Setting
from regcomp_lint.diagnostics import Edit

#: What raises when the value is wrong, per place.
WHO_READS = {
    Origin.CONFIG_FILE: "`accelerate launch` (reading this config)",
    Origin.LAUNCH_FLAG: "`accelerate launch`",
    Origin.ENVIRONMENT: "`TorchDynamoPlugin()` (reading the environment)",
    Origin.TRAINER_FLAG: "the `Trainer`'s `TorchDynamoPlugin(...)`",
    Origin.TRAINER_FILE: "the `Trainer`'s `TorchDynamoPlugin(...)`",
}


def describe(setting: Setting) -> str:
    """``--dynamo_backend``, ``dynamo_backend:``, ``ACCELERATE_DYNAMO_BACKEND``..."""
    if setting.origin in (Origin.CONFIG_FILE, Origin.TRAINER_FILE):
        return f"`{setting.spelled}:`"
    return f"`{setting.spelled}`"


def is_templated(value: str) -> bool:
    """A value filled in later (``$BACKEND``, ``${{ matrix.backend }}``, ``{{ x }}``): never judged."""
    return "$" in value or "{{" in value or "%" in value


def replace_value(setting: Setting, new: str) -> Edit:
    return Edit(new, setting.start, setting.end)


def keep_case(written: str, suggestion: str) -> str:
    """``INDUCTR`` → ``INDUCTOR``: a config file's upper-case style is kept."""
    return suggestion.upper() if written.isupper() else suggestion
