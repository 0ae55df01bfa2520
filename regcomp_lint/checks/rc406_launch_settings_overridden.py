"""RC406 launch-settings-overridden."""

from __future__ import annotations

import os

from regcomp_lint.analysis.compile_settings import LaunchCommand, Origin, SettingsFile
from regcomp_lint.analysis.compile_settings.scripts import config_settings, fixed_fields, script_path
from regcomp_lint.checks.base import Rule, SettingsExample, SettingsReport
from regcomp_lint.diagnostics import Severity
from regcomp_lint.knowledge.launch_settings import ENVIRONMENT

_PLUGIN_SCRIPT = (
    "from accelerate import Accelerator\nfrom accelerate.utils import TorchDynamoPlugin\n"
    "accelerator = Accelerator(dynamo_plugin=TorchDynamoPlugin(backend='eager'))\n"
)
_TRAINER_SCRIPT = (
    "from transformers import Trainer, TrainingArguments\n"
    "args = TrainingArguments('out', torch_compile=True)\ntrainer = Trainer(model=model, args=args)\n"
)


class LaunchSettingsOverridden(Rule):
    """## What it does
    Reports an `accelerate launch --dynamo_*` flag, or a `dynamo_config:` setting of the file
    given with `--config_file`, that the launched script ignores because it
    sets the same `TorchDynamoPlugin` field itself: `TorchDynamoPlugin(backend="eager")`, or a
    `TrainingArguments(torch_compile=True)` / `torch_compile_backend=` (the `Trainer` then passes
    `backend=`, `inductor` by default) or `torch_compile_mode=` (it passes `mode=`).

    The launch command is read in shell scripts, Makefiles, Dockerfiles and CI workflow YAML;
    the script is the first word after launch's own options, a `.py` file looked for beside the
    file holding the command and in the current folder. A flag for a field the script leaves
    unset (`None`) is not reported: it still applies.

    ## Why is this bad
    `accelerate launch` turns its flags into `ACCELERATE_DYNAMO_*` variables, and
    `TorchDynamoPlugin.__post_init__` reads a variable only for a field left `None`. The flag is
    accepted and silently does nothing: `--dynamo_use_regional_compilation` on a script that
    passes `use_regional_compilation=False` never compiles regionally, and a backend chosen per
    cluster in the launch script never reaches the model.

    ## Example
    ```bash
    accelerate launch --dynamo_backend inductor train.py
    ```
    where `train.py` has
    ```python
    accelerator = Accelerator(dynamo_plugin=TorchDynamoPlugin(backend="eager"))
    ```

    ## Use instead
    Set each field in one place: drop the flag, or leave the field out of the plugin
    (`TorchDynamoPlugin(mode="max-autotune")` takes its backend from `--dynamo_backend`).

    ## Fix safety
    No fix: which of the two settings is meant is the author's call.

    ## References
    - [Accelerate: compilation](https://huggingface.co/docs/accelerate/usage_guides/compilation)
    - [`accelerate launch`](https://huggingface.co/docs/accelerate/package_reference/cli#accelerate-launch)
    """

    code = "RC406"
    name = "launch-settings-overridden"
    message = "a launch flag the launched script overrides with its own TorchDynamoPlugin setting"
    #: the run works, but not as the launch command says: the flag is silently ignored
    severity = Severity.WARNING
    #: A Python file never holds a launch command: the rule reads settings files only.
    required = ("accelerate launch", "--dynamo_")

    settings_invalid = [
        SettingsExample(
            "launch.sh",
            "accelerate launch --num_processes 2 --dynamo_backend inductor train.py\n",
            message="train.py:3 sets `TorchDynamoPlugin(backend=...)`",
            files=(("train.py", _PLUGIN_SCRIPT),),
        ),
        SettingsExample(
            "train.sh",
            "accelerate launch --config_file fsdp.yaml train.py\n",
            message="`dynamo_backend: INDUCTOR` in fsdp.yaml:3 is ignored",
            files=(
                ("train.py", _PLUGIN_SCRIPT),
                (
                    "fsdp.yaml",
                    "distributed_type: FSDP\ndynamo_config:\n  dynamo_backend: INDUCTOR\n  dynamo_use_regional_compilation: true\n",
                ),
            ),
        ),
        SettingsExample(
            "Makefile",
            "train:\n\taccelerate launch --dynamo_backend inductor --dynamo_mode max-autotune train.py --epochs 3\n",
            message="torch_compile_backend",
            files=(("train.py", _TRAINER_SCRIPT),),
        ),
    ]
    settings_valid = [
        SettingsExample(  # the plugin leaves backend unset: the flag applies
            "launch.sh",
            "accelerate launch --dynamo_backend inductor train.py\n",
            files=(
                (
                    "train.py",
                    "from accelerate.utils import TorchDynamoPlugin\nplugin = TorchDynamoPlugin(mode='max-autotune')\n",
                ),
            ),
        ),
        SettingsExample(  # a flag after the script belongs to the script
            "launch.sh",
            "accelerate launch train.py --dynamo_backend inductor\n",
            files=(("train.py", _PLUGIN_SCRIPT),),
        ),
    ]

    @classmethod
    def check_settings(cls, found: SettingsFile, path: str) -> list[SettingsReport]:
        reports = []
        cache: dict[str, dict[str, tuple[int, str]]] = {}
        for launch in found.commands:
            reports.extend(cls._config_file_overridden(path, launch, cache))
        for setting in found.settings:
            command = setting.command
            if setting.origin is not Origin.LAUNCH_FLAG or command is None or command.script is None:
                continue
            script = script_path(path, command.script)
            if script is None:
                continue
            if script not in cache:
                cache[script] = {f.field: (f.row, f.how) for f in fixed_fields(script)}
            if setting.field not in cache[script]:
                continue
            row, how = cache[script][setting.field]
            written = f"{setting.spelled} {setting.value}".strip()
            reports.append(
                SettingsReport(
                    setting.start,
                    setting.end,
                    f"`{written}` is ignored: {command.script}:{row} sets `{how}`, and a plugin field that is set "
                    f"wins over launch flags, config files and `{ENVIRONMENT[setting.field]}`",
                )
            )
        return reports

    @classmethod
    def _config_file_overridden(
        cls, path: str, command: LaunchCommand, cache: dict[str, dict[str, tuple[int, str]]]
    ) -> list[SettingsReport]:
        """``accelerate launch --config_file cfg.yaml train.py``: cfg's dynamo_config settings
        that train.py fixes itself, reported at the script word."""
        if command.config_file is None or command.script is None:
            return []
        script = script_path(path, command.script)
        config = config_settings(path, command.config_file)
        if script is None or config is None:
            return []
        if script not in cache:
            cache[script] = {f.field: (f.row, f.how) for f in fixed_fields(script)}
        config_path, settings = config
        reports = []
        for setting in settings:
            if setting.field in cache[script]:
                row, how = cache[script][setting.field]
                shown = os.path.basename(config_path)
                reports.append(
                    SettingsReport(
                        command.start,
                        command.end,
                        f"`{setting.spelled}: {setting.value}` in {shown}:{setting.start.row} is ignored: "
                        f"{command.script}:{row} sets `{how}`, and a plugin field that is set wins over config files",
                    )
                )
        return reports
