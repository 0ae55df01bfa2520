"""RC102 unknown-mode."""

from __future__ import annotations

import ast

from regcomp_lint.analysis.callsites import COMPILE_SITE_WORDS, Site, compile_config_site, plugin_argument
from regcomp_lint.analysis.compile_settings import Origin, Setting, SettingsFile
from regcomp_lint.analysis.file_context import has_star_kwargs, keyword_value, string_literal
from regcomp_lint.checks.base import Invalid, Rule, SettingsExample, SettingsReport
from regcomp_lint.checks.settings_values import describe, is_templated, replace_value
from regcomp_lint.checks.text_edits import replace_string_literal
from regcomp_lint.diagnostics import Applicability, Severity
from regcomp_lint.knowledge.launch_settings import (
    LAUNCH_MODE_CHOICES,
    TRAINER_DEFAULT_BACKEND,
    TRAINING_ARGUMENTS,
    TRAINING_ARGUMENTS_SUBCLASSES,
)
from regcomp_lint.knowledge.modes import INDUCTOR_MODES, TORCH_VERSION
from regcomp_lint.knowledge.suggest import did_you_mean

TORCH_SITES = (Site.TORCH_COMPILE, Site.MODULE_COMPILE, Site.COMPILE_REGIONS)


def mode_reaches_inductor(call: ast.Call, site: Site) -> bool:
    """True when the backend that receives ``mode`` is inductor, the only one that checks it.

    torch.compile's default backend is inductor; ``TorchDynamoPlugin`` without ``backend=`` takes
    it from ``ACCELERATE_DYNAMO_BACKEND`` (``accelerate launch --dynamo_backend``), where a mode
    is meant for inductor too. Any other or unknown backend may define its own modes.
    """
    given = plugin_argument(call, "backend") if site is Site.DYNAMO_PLUGIN else keyword_value(call, "backend")
    if given is None:
        return not has_star_kwargs(call)
    backend = string_literal(given)
    if backend is None:
        return False
    return backend.upper() == "INDUCTOR" if site is Site.DYNAMO_PLUGIN else backend == "inductor"


def judge_mode_setting(setting: Setting, backend: str | None) -> tuple[str, str | None] | None:
    """(message, suggestion) for a mode written in a config file, launch flag, variable or
    TrainingArguments; ``backend`` is the one set beside it (None: not set there)."""
    mode = setting.value
    if not mode or is_templated(mode):
        return None
    if setting.origin is Origin.LAUNCH_FLAG:
        if mode in LAUNCH_MODE_CHOICES:
            return None
        suggestion = did_you_mean(mode, LAUNCH_MODE_CHOICES, separator="-")
        if mode in INDUCTOR_MODES:
            return (
                f"`accelerate launch` refuses `--dynamo_mode {mode}` (choices: {', '.join(LAUNCH_MODE_CHOICES)}), "
                f'although torch accepts it: set `ACCELERATE_DYNAMO_MODE={mode}` or `TorchDynamoPlugin(mode="{mode}")`',
                None,
            )
        tail = f'did you mean "{suggestion}"?' if suggestion else f"choices: {', '.join(LAUNCH_MODE_CHOICES)}"
        return f"`accelerate launch` refuses `--dynamo_mode {mode}`; {tail}", suggestion
    if mode in INDUCTOR_MODES:
        return None
    if backend is not None and not is_templated(backend) and backend.lower() != "inductor":
        return None  # another backend may define its own modes
    suggestion = did_you_mean(mode, INDUCTOR_MODES, separator="-")
    tail = f'did you mean "{suggestion}"?' if suggestion else f"modes: {', '.join(INDUCTOR_MODES)}"
    trainer = setting.origin in (Origin.TRAINER_FLAG, Origin.TRAINER_FILE)
    raiser = "the `Trainer`" if trainer else "`accelerator.prepare()`"
    return (
        f'unknown mode "{mode}" in {describe(setting)}: {raiser} raises RuntimeError in torch {TORCH_VERSION}; {tail}',
        suggestion,
    )


class UnknownMode(Rule):
    """## What it does
    Reports a `mode=` string that inductor does not know, at `torch.compile` (call or decorator),
    `model.compile`, `accelerate.utils.compile_regions` and `TorchDynamoPlugin`. torch 2.13's
    modes are `default`, `reduce-overhead`, `max-autotune`, `max-autotune-no-cudagraphs` and
    `lite` (`torch._inductor.list_mode_options()`), spelt exactly so: `max_autotune` and
    `Max-Autotune` are errors. `mode=None` and a mode that is not a string literal are fine.

    The same modes are judged in `transformers.TrainingArguments(torch_compile_mode=)`,
    `dynamo_mode:` in `accelerate config` YAML files, `ACCELERATE_DYNAMO_MODE=` assignments,
    `--torch_compile_mode` flags and keys, and `accelerate launch --dynamo_mode`, which is
    stricter than torch: its argparse choices are only `default`, `reduce-overhead` and
    `max-autotune`, so `--dynamo_mode lite` stops the launch although torch knows `lite`.

    Only the inductor backend checks the mode, so the rule looks at calls whose backend is
    inductor: given as `"inductor"`, or not given (torch.compile's default; for
    `TorchDynamoPlugin`, the backend chosen at launch). With another backend the mode is handed
    to that backend, which may ignore it or define its own.

    ## Why is this bad
    `torch.compile` raises `RuntimeError: Unrecognized mode=...` when it is called;
    `TorchDynamoPlugin` does not check the string, so the same error comes from
    `accelerator.prepare()`, after everything else was set up.

    ## Example
    ```python
    model = torch.compile(model, mode="max_autotune")
    plugin = TorchDynamoPlugin(backend="inductor", mode="reduce_overhead")
    ```

    ## Use instead
    ```python
    model = torch.compile(model, mode="max-autotune")
    plugin = TorchDynamoPlugin(backend="inductor", mode="reduce-overhead")
    ```

    ## Fix safety
    Unsafe: when one mode is clearly meant (wrong case, `_` for `-`, a small typo) the string is
    replaced, keeping its quotes. The program then compiles with that mode instead of failing,
    which changes what it does; review it.

    ## References
    - [torch.compile](https://docs.pytorch.org/docs/stable/generated/torch.compile.html)
    - [Accelerate `TorchDynamoPlugin`](https://huggingface.co/docs/accelerate/package_reference/utilities#accelerate.utils.TorchDynamoPlugin)
    """

    code = "RC102"
    name = "unknown-mode"
    severity = Severity.ERROR
    settings_invalid = [
        SettingsExample(
            "default_config.yaml",
            "dynamo_config:\n  dynamo_backend: INDUCTOR\n  dynamo_mode: max_autotune\n",
            fixed="dynamo_config:\n  dynamo_backend: INDUCTOR\n  dynamo_mode: max-autotune\n",
        ),
        SettingsExample(
            "run.sh", "accelerate launch --dynamo_backend inductor --dynamo_mode lite train.py\n", message="refuses"
        ),
        SettingsExample(
            "Makefile",
            "train:\n\tpython train.py --torch_compile_mode reduce_overhead\n",
            fixed="train:\n\tpython train.py --torch_compile_mode reduce-overhead\n",
        ),
    ]
    settings_valid = [
        SettingsExample("default_config.yaml", "dynamo_config:\n  dynamo_backend: TENSORRT\n  dynamo_mode: fp16\n"),
        SettingsExample("run.sh", "export ACCELERATE_DYNAMO_MODE=max-autotune-no-cudagraphs\n"),
    ]
    message = "unknown torch.compile mode"
    triggers = ("mode=", "mode =", "TorchDynamoPlugin")
    required = ((*COMPILE_SITE_WORDS, "torch_compile_mode"),)  # a call that takes a mode
    fix_applicability = Applicability.UNSAFE

    valid = [
        "from transformers import TrainingArguments\nargs = TrainingArguments('out', torch_compile_mode='reduce-overhead')\n",
        "import torch\nfor m in models:\n    torch.compile(m, mode='max-autotune-no-cudagraphs')\n",
        "import torch\nmodel = torch.compile(model, mode='reduce-overhead')\n",
        "import torch\nmodel = torch.compile(model, mode='lite')\n",
        "import torch\nmodel = torch.compile(model, mode=None)\n",
        "import torch\nmodel = torch.compile(model, mode=args.mode)\n",
        "import torch\nmodel = torch.compile(model, mode='my-mode', backend=my_backend)\n",
        "import torch\nmodel = torch.compile(model, mode='max_autotune', backend='eager')\n",
        "import torch\nmodel = torch.compile(model, mode='fast', **compile_kwargs)\n",
        "from accelerate.utils import TorchDynamoPlugin\nplugin = TorchDynamoPlugin(backend='INDUCTOR', mode='max-autotune')\n",
        "from accelerate.utils import TorchDynamoPlugin\nplugin = TorchDynamoPlugin(backend='tensorrt', mode='fp16')\n",
        "from accelerate import Accelerator\nacc = Accelerator(mode='max_autotune')\n",  # not a compile setting
        "import torch\nopen(path, mode='max_autotune')\n",
    ]
    invalid = [
        Invalid(
            "from transformers import TrainingArguments\nargs = TrainingArguments('out', torch_compile_mode='max_autotune')\n",
            fixed="from transformers import TrainingArguments\nargs = TrainingArguments('out', torch_compile_mode='max-autotune')\n",
            message="Trainer",
        ),
        Invalid(
            "import torch\nmodel = torch.compile(model, mode='max_autotune')\n",
            fixed="import torch\nmodel = torch.compile(model, mode='max-autotune')\n",
            message='did you mean "max-autotune"?',
        ),
        Invalid(
            'import torch as T\nmodel = T.compile(model, backend="inductor", mode="Reduce-Overhead")\n',
            fixed='import torch as T\nmodel = T.compile(model, backend="inductor", mode="reduce-overhead")\n',
            message="RuntimeError",
        ),
        Invalid(
            "from torch import compile as tc\n@tc(mode='max-autotune-no-cudagraph')\ndef step(x):\n    return x\n",
            fixed="from torch import compile as tc\n@tc(mode='max-autotune-no-cudagraphs')\ndef step(x):\n    return x\n",
        ),
        Invalid("import torch\nmodel.compile(mode='defualt')\n", fixed="import torch\nmodel.compile(mode='default')\n"),
        Invalid(
            "from accelerate.utils import compile_regions\nmodel = compile_regions(model, mode='reduce_overhead')\n",
            fixed="from accelerate.utils import compile_regions\nmodel = compile_regions(model, mode='reduce-overhead')\n",
        ),
        Invalid(
            "from accelerate.utils import TorchDynamoPlugin\nplugin = TorchDynamoPlugin(backend='inductor', mode='max_autotune')\n",
            fixed="from accelerate.utils import TorchDynamoPlugin\nplugin = TorchDynamoPlugin(backend='inductor', mode='max-autotune')\n",
            message="accelerator.prepare()",
        ),
        Invalid(
            "from accelerate.utils import TorchDynamoPlugin\nplugin = TorchDynamoPlugin(mode='fast')\n",
            message="modes:",
        ),
        Invalid("import torch\nmodel = torch.compile(model, mode='')\n"),
        Invalid(
            "from accelerate.utils import TorchDynamoPlugin\nplugin = TorchDynamoPlugin('inductor', 'max_autotune')\n",
            fixed="from accelerate.utils import TorchDynamoPlugin\nplugin = TorchDynamoPlugin('inductor', 'max-autotune')\n",
        ),
    ]

    @classmethod
    def check_settings(cls, found: SettingsFile, path: str) -> list[SettingsReport]:
        reports = []
        for setting in found.settings:
            if setting.field != "mode":
                continue
            backend = found.scope_value(setting.scope, "backend")
            if backend is None and setting.origin in (Origin.TRAINER_FLAG, Origin.TRAINER_FILE):
                backend = TRAINER_DEFAULT_BACKEND
            judged = judge_mode_setting(setting, backend)
            if judged is None:
                continue
            message, suggestion = judged
            fix = (
                cls.settings_fix(f'Use mode "{suggestion}"', [replace_value(setting, suggestion)])
                if suggestion
                else None
            )
            reports.append(SettingsReport(setting.start, setting.end, message, fix))
        return reports

    def visit_Call(self, node: ast.Call) -> None:
        site = compile_config_site(self.ctx, node)
        if site is None and self.ctx.resolves_to(node.func, *TRAINING_ARGUMENTS, *TRAINING_ARGUMENTS_SUBCLASSES):
            self._check_trainer(node)
            return
        if site is None or (site not in TORCH_SITES and site is not Site.DYNAMO_PLUGIN):
            return
        value = plugin_argument(node, "mode") if site is Site.DYNAMO_PLUGIN else keyword_value(node, "mode")
        mode = string_literal(value)
        if value is None or mode is None or mode in INDUCTOR_MODES or not mode_reaches_inductor(node, site):
            return
        raiser = "`accelerator.prepare()`" if site is Site.DYNAMO_PLUGIN else "torch.compile"
        suggestion = did_you_mean(mode, INDUCTOR_MODES, separator="-")
        tail = f'did you mean "{suggestion}"?' if suggestion else f"modes: {', '.join(INDUCTOR_MODES)}"
        message = f'unknown mode "{mode}": {raiser} raises RuntimeError in torch {TORCH_VERSION}; {tail}'
        fix = None
        edit = replace_string_literal(self.ctx, value, suggestion) if suggestion else None
        if edit is not None:
            fix = self.make_fix(f'Use mode "{suggestion}"', [edit])
        self.report(value, message, fix=fix)

    def _check_trainer(self, node: ast.Call) -> None:
        """``TrainingArguments(torch_compile_mode=)``: the backend defaults to inductor."""
        value = keyword_value(node, "torch_compile_mode")
        mode = string_literal(value)
        if value is None or mode is None or mode in INDUCTOR_MODES:
            return
        backend = string_literal(keyword_value(node, "torch_compile_backend"))
        if keyword_value(node, "torch_compile_backend") is not None and (
            backend is None or backend.lower() != "inductor"
        ):
            return
        suggestion = did_you_mean(mode, INDUCTOR_MODES, separator="-")
        tail = f'did you mean "{suggestion}"?' if suggestion else f"modes: {', '.join(INDUCTOR_MODES)}"
        message = f'unknown mode "{mode}": the `Trainer` raises RuntimeError in torch {TORCH_VERSION}; {tail}'
        edit = replace_string_literal(self.ctx, value, suggestion) if suggestion else None
        fix = self.make_fix(f'Use mode "{suggestion}"', [edit]) if edit is not None else None
        self.report(value, message, fix=fix)
