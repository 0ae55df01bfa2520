"""RC101 unknown-backend."""

from __future__ import annotations

import ast
from dataclasses import dataclass

from regcomp_lint.analysis.callsites import COMPILE_SITE_WORDS, Site, compile_config_site, plugin_argument
from regcomp_lint.analysis.compile_settings import Origin, Setting, SettingsFile
from regcomp_lint.analysis.file_context import keyword_value, string_literal
from regcomp_lint.checks.base import Invalid, Report, Rule, SettingsExample, SettingsReport
from regcomp_lint.checks.settings_values import WHO_READS, is_templated, keep_case, replace_value
from regcomp_lint.checks.text_edits import replace_string_literal
from regcomp_lint.diagnostics import Applicability, Severity
from regcomp_lint.knowledge import backends as B
from regcomp_lint.knowledge.launch_settings import (
    LAUNCH_BACKEND_CHOICES,
    TRAINING_ARGUMENTS,
    TRAINING_ARGUMENTS_SUBCLASSES,
)
from regcomp_lint.knowledge.suggest import did_you_mean

TORCH_SITES = (Site.TORCH_COMPILE, Site.MODULE_COMPILE, Site.COMPILE_REGIONS, Site.DYNAMO_OPTIMIZE)
REGISTER_BACKEND = ("torch._dynamo.register_backend", "torch._dynamo.backends.registry.register_backend")


@dataclass(frozen=True)
class Verdict:
    message: str
    suggestion: str | None = None


def judge_torch_backend(name: str) -> Verdict | None:
    """Why ``torch.compile(backend=name)`` fails in torch 2.13, or None when it can work."""
    if B.torch_accepts(name):
        return None
    if name in B.REMOVED_TORCH_BACKENDS:
        replacement = B.REMOVED_TORCH_BACKENDS[name]
        hint = f'; use "{replacement}"' if replacement else ""
        return Verdict(
            f'backend "{name}" no longer exists (torch {B.TORCH_VERSION} raises InvalidBackend){hint}', replacement
        )
    suggestion = did_you_mean(name, B.TORCH_SUGGESTIONS)
    if suggestion:
        return Verdict(
            f'unknown backend "{name}" (torch.compile raises InvalidBackend); did you mean "{suggestion}"?', suggestion
        )
    if name.upper() in {b.upper() for b in B.ACCELERATE_BACKENDS}:
        return Verdict(
            f'"{name}" is an Accelerate `DynamoBackend` value, not a torch.compile backend (torch raises InvalidBackend)'
        )
    return Verdict(
        f'unknown backend "{name}": not registered by torch {B.TORCH_VERSION} nor a known plugin (see `torch._dynamo.list_backends()`)'
    )


def judge_accelerate_backend(name: str, where: str) -> Verdict | None:
    """Why Accelerate rejects ``name`` (at construction or in ``prepare()``), or None."""
    lower = name.strip().lower()
    if B.accelerate_parses(name):
        if lower not in B.ACCELERATE_DEAD:
            return None
        replacement = B.REMOVED_TORCH_BACKENDS.get(lower)
        replacement = replacement if replacement in B.ACCELERATE_SUGGESTIONS else None
        hint = f'; use "{replacement}"' if replacement else ""
        return Verdict(
            f'Accelerate backend "{name}" is dead in torch {B.TORCH_VERSION}: `prepare()` raises InvalidBackend{hint}',
            replacement,
        )
    if B.torch_accepts(name):
        return Verdict(
            f'"{name}" is a torch.compile backend but not an Accelerate `DynamoBackend`: {where} raises ValueError; '
            f'call `torch.compile(model, backend="{name}")` yourself'
        )
    if lower in B.REMOVED_TORCH_BACKENDS:
        replacement = B.REMOVED_TORCH_BACKENDS[lower]
        replacement = replacement if replacement in B.ACCELERATE_SUGGESTIONS else None
        hint = f'; use "{replacement}"' if replacement else ""
        return Verdict(
            f'"{name}" is not an Accelerate `DynamoBackend` ({where} raises ValueError) and no longer exists in torch{hint}',
            replacement,
        )
    suggestion = did_you_mean(name, B.ACCELERATE_SUGGESTIONS)
    tail = f'; did you mean "{suggestion}"?' if suggestion else f" (choices: {', '.join(B.ACCELERATE_SUGGESTIONS)})"
    return Verdict(f'unknown Accelerate dynamo backend "{name}": {where} raises ValueError{tail}', suggestion)


def judge_launch_backend(name: str) -> Verdict | None:
    """``accelerate launch --dynamo_backend NAME``: argparse ``choices`` are the lower-case
    ``DynamoBackend`` members, checked before anything starts; dead members pass and fail in
    ``prepare()``."""
    if name in LAUNCH_BACKEND_CHOICES:
        return judge_accelerate_backend(name, WHO_READS[Origin.LAUNCH_FLAG])
    if name in B.ACCELERATE_BACKENDS:
        return Verdict(
            f"`accelerate launch` refuses `--dynamo_backend {name}`: its choices miss this `DynamoBackend` member; "
            f"set `ACCELERATE_DYNAMO_BACKEND={name}` or `TorchDynamoPlugin(backend=...)` instead"
        )
    if name.lower() in LAUNCH_BACKEND_CHOICES:
        return Verdict(
            f'`accelerate launch` refuses `--dynamo_backend {name}`: its choices are lower-case; use "{name.lower()}"',
            name.lower(),
        )
    verdict = judge_accelerate_backend(name, "`accelerate launch`")
    suggestion = verdict.suggestion.lower() if verdict and verdict.suggestion else None
    tail = f'; did you mean "{suggestion}"?' if suggestion else f" (choices: {', '.join(B.ACCELERATE_SUGGESTIONS)})"
    return Verdict(f"`accelerate launch` refuses `--dynamo_backend {name}` (not one of its choices){tail}", suggestion)


def judge_backend_setting(setting: Setting) -> Verdict | None:
    """Why a backend written in a config file, launch flag, variable or TrainingArguments fails."""
    if not setting.value or is_templated(setting.value):
        return None
    if setting.origin is Origin.LAUNCH_FLAG:
        return judge_launch_backend(setting.value)
    verdict = judge_accelerate_backend(setting.value, WHO_READS[setting.origin])
    if verdict is None or verdict.suggestion is None:
        return verdict
    return Verdict(verdict.message, keep_case(setting.value, verdict.suggestion))


class UnknownBackend(Rule):
    """## What it does
    Reports a backend string that will fail: at `torch.compile(..., backend=)` (call or
    decorator), `model.compile(backend=)`, `torch._dynamo.optimize("...")`,
    `accelerate.utils.compile_regions(..., backend=)`, `TorchDynamoPlugin(backend=)` and
    `Accelerator(dynamo_backend=)`, however they were imported.

    The two families accept different names. `torch.compile` looks the string up, exactly and
    case-sensitively, in torch's backend registry (torch 2.13: `inductor`, `eager`, `aot_eager`,
    `aot_eager_decomp_partition`, `cudagraphs`, `openxla`, `openxla_eval`, `tvm`, `ts`, `aot_ts` and
    the debug backends of `torch._dynamo.list_backends(exclude_tags=())`). Backends that other
    packages register on import (`tensorrt`/`torch_tensorrt`, `openvino`, `ipex`, `hidet`,
    `neuron`, `hpu_backend`) and any backend registered with `register_backend` in the same file
    are accepted too. Accelerate accepts only its `DynamoBackend` names, in any case; of those,
    `aot_ts_nvfuser`, `nvprims_nvfuser`, `ofi`, `fx2trt`, `onnxrt`, `aot_torchxla_trace_once` and
    `torchxla_trace_once` are no longer registered by torch 2.13 and fail in `prepare()`. So
    `openxla` is right for `torch.compile` and wrong for `TorchDynamoPlugin`, and `aot_nvfuser`
    (a name from older torch and Accelerate releases, in neither now) is wrong for both.

    The same backends are judged where most people set them: `transformers.TrainingArguments(
    torch_compile_backend=)` (the `Trainer` hands it to `TorchDynamoPlugin`), `dynamo_backend:`
    in an `accelerate config` YAML file, `accelerate launch --dynamo_backend` in shell scripts,
    Makefiles, Dockerfiles and CI workflows, `ACCELERATE_DYNAMO_BACKEND=` assignments (also in
    `.env` files and `env:` maps), and `--torch_compile_backend` / `torch_compile_backend:` for
    `HfArgumentParser`. `accelerate launch` is stricter than the plugin: its `--dynamo_backend`
    takes lower-case names only (`INDUCTOR` is refused before anything starts) from a list of
    its own that lacks `hpu_backend` and `neuron` and misspells `torchxla_trace_once`, while
    config files and variables accept any case of every `DynamoBackend` member.

    A backend that is not a string literal (`backend=args.backend`, a compiler function, a
    `$BACKEND` shell variable) is never reported. A backend that a package outside the known list registers when imported is
    reported: silence that line with `# noqa: RC101`. The tables were read from torch 2.13.0 and accelerate 1.15.0
    (`bench/read_backend_tables.py`).

    ## Why is this bad
    `torch.compile` raises `InvalidBackend` on the spot; `TorchDynamoPlugin` raises `ValueError`
    when built; a dead Accelerate backend passes the plugin and raises only inside
    `accelerator.prepare()`, after the data, model and optimizer were set up, often on a remote
    multi-GPU job.

    ## Example
    ```python
    model = torch.compile(model, backend="inductr")
    plugin = TorchDynamoPlugin(backend="aot_nvfuser")
    accelerator = Accelerator(dynamo_plugin=TorchDynamoPlugin(backend="openxla"))
    ```

    ## Use instead
    ```python
    model = torch.compile(model, backend="inductor")
    plugin = TorchDynamoPlugin(backend="inductor")
    model = torch.compile(model, backend="openxla")  # XLA: compile directly, not through Accelerate
    ```

    ## Fix safety
    Unsafe: when one replacement is clearly meant (a typo, a case or `-`/`_` slip, or a removed
    backend with a named successor such as `aot_nvfuser` → `inductor`) the string is replaced,
    keeping its quotes. Another backend compiles differently, so review the change.

    ## References
    - [torch.compiler: backends](https://docs.pytorch.org/docs/stable/torch.compiler.html)
    - [Custom backends](https://docs.pytorch.org/docs/stable/torch.compiler_custom_backends.html)
    - [Accelerate `DynamoBackend`](https://huggingface.co/docs/accelerate/package_reference/utilities#accelerate.utils.DynamoBackend)
    """

    code = "RC101"
    name = "unknown-backend"
    severity = Severity.ERROR
    settings_invalid = [
        SettingsExample(
            "default_config.yaml",
            "compute_environment: LOCAL_MACHINE\ndynamo_config:\n  dynamo_backend: AOT_NVFUSER  # from an old tutorial\n",
            fixed="compute_environment: LOCAL_MACHINE\ndynamo_config:\n  dynamo_backend: INDUCTOR  # from an old tutorial\n",
            message="no longer exists",
        ),
        SettingsExample(
            "launch.sh",
            "accelerate launch --num_processes 2 \\\n  --dynamo_backend INDUCTOR train.py\n",
            fixed="accelerate launch --num_processes 2 \\\n  --dynamo_backend inductor train.py\n",
            message="lower-case",
        ),
        SettingsExample(
            "train.env", "ACCELERATE_DYNAMO_BACKEND=fx2trt\n", fixed="ACCELERATE_DYNAMO_BACKEND=tensorrt\n"
        ),
        SettingsExample(
            "args.json",
            '{"output_dir": "out", "torch_compile_backend": "indcutor"}\n',
            fixed='{"output_dir": "out", "torch_compile_backend": "inductor"}\n',
        ),
    ]
    settings_valid = [
        SettingsExample("default_config.yaml", "dynamo_config:\n  dynamo_backend: INDUCTOR\n  dynamo_mode: default\n"),
        SettingsExample(
            "launch.sh", 'accelerate launch --dynamo_backend "$BACKEND" train.py --dynamo_backend whatever\n'
        ),
        SettingsExample("Dockerfile", "ENV ACCELERATE_DYNAMO_BACKEND=aot_nvfuser  # noqa: RC101\n"),
    ]
    message = "unknown compile backend"
    triggers = ("backend", "optimize", "TorchDynamoPlugin")
    #: a call that takes a backend: a compile site, ``Accelerator(dynamo_backend=)`` or ``TrainingArguments``
    required = ((*COMPILE_SITE_WORDS, "Accelerator", "torch_compile_backend"),)
    fix_applicability = Applicability.UNSAFE

    valid = [
        "import torch\nmodel = torch.compile(model, backend='inductor')\n",
        "import torch\nfor b in ('eager', 'aot_eager', 'cudagraphs', 'openxla', 'tvm'):\n    torch.compile(model, backend='openxla')\n",
        "import torch\nmodel = torch.compile(model, backend=args.backend)\n",
        "import torch\nmodel = torch.compile(model, backend=my_compiler)\n",
        "import torch\nimport torch_tensorrt\nmodel = torch.compile(model, backend='torch_tensorrt')\n",
        "import torch\n@torch.compile(backend='openvino')\ndef f(x):\n    return x\n",
        "from accelerate.utils import TorchDynamoPlugin\nplugin = TorchDynamoPlugin(backend='INDUCTOR')\n",
        "from accelerate.utils import TorchDynamoPlugin\nplugin = TorchDynamoPlugin(backend='Inductor', mode='max-autotune')\n",
        "from accelerate import Accelerator\naccelerator = Accelerator(dynamo_backend='no')\n",
        "import transformers\nargs = transformers.TrainingArguments('out', torch_compile_backend='INDUCTOR')\n",
        "from accelerate import Accelerator\naccelerator = Accelerator(dynamo_backend='tensorrt')\n",
        "from accelerate.utils import TorchDynamoPlugin, DynamoBackend\nplugin = TorchDynamoPlugin(backend=DynamoBackend.INDUCTOR)\n",
        # registered in the same file, by decorator or by call
        "import torch\nfrom torch._dynamo import register_backend\n@register_backend\ndef my_backend(gm, inputs):\n    return gm\nm = torch.compile(m, backend='my_backend')\n",
        "import torch\nm = torch.compile(m, backend='toy')\ntorch._dynamo.register_backend(compiler_fn=toy_fn, name='toy')\n",
        # not torch's compile at all
        "import re\npattern = re.compile('backend')\n",
        "model.compile(optimizer='adam', loss='mse', backend='jax')\n",
        "code = compile(source, 'backend.py', 'exec')\n",
        "torch.compile(model, backend='inductr')\n",  # `torch` was never imported
    ]
    invalid = [
        Invalid(
            "from transformers import TrainingArguments\nargs = TrainingArguments('out', torch_compile_backend='aot_nvfuser')\n",
            fixed="from transformers import TrainingArguments\nargs = TrainingArguments('out', torch_compile_backend='inductor')\n",
            message="Trainer",
        ),
        Invalid(
            "import torch\nmodel = torch.compile(model, backend='inductr')\n",
            fixed="import torch\nmodel = torch.compile(model, backend='inductor')\n",
            message='did you mean "inductor"?',
        ),
        Invalid(
            'import torch as T\nmodel = T.compile(model, backend="Inductor")\n',
            fixed='import torch as T\nmodel = T.compile(model, backend="inductor")\n',
            message="InvalidBackend",
        ),
        Invalid(
            'from torch import compile as tc\nmodel = tc(model, backend="aot_nvfuser")\n',
            fixed='from torch import compile as tc\nmodel = tc(model, backend="inductor")\n',
            message="no longer exists",
        ),
        Invalid(
            "import torch\n@torch.compile(backend='eagr', fullgraph=True)\ndef step(x):\n    return x\n",
            fixed="import torch\n@torch.compile(backend='eager', fullgraph=True)\ndef step(x):\n    return x\n",
        ),
        Invalid(
            "import torch\nmodel.compile(backend='aot-eager')\n",
            fixed="import torch\nmodel.compile(backend='aot_eager')\n",
        ),
        Invalid(
            "import torch._dynamo as dynamo\nfn = dynamo.optimize('indcutor')(fn)\n",
            fixed="import torch._dynamo as dynamo\nfn = dynamo.optimize('inductor')(fn)\n",
        ),
        Invalid(
            "from accelerate.utils import compile_regions\nmodel = compile_regions(model, backend='cudagraph')\n",
            fixed="from accelerate.utils import compile_regions\nmodel = compile_regions(model, backend='cudagraphs')\n",
        ),
        Invalid(
            "import torch\nmodel = torch.compile(model, backend='no')\n", message="Accelerate `DynamoBackend` value"
        ),
        Invalid("import torch\nmodel = torch.compile(model, backend='my_trt')\n", message="not registered"),
        Invalid(
            "from accelerate.utils import TorchDynamoPlugin\nplugin = TorchDynamoPlugin(backend='openxla')\n",
            message="not an Accelerate `DynamoBackend`",
        ),
        Invalid(
            "from accelerate.utils import TorchDynamoPlugin\nplugin = TorchDynamoPlugin(backend='aot_nvfuser', mode='default')\n",
            fixed="from accelerate.utils import TorchDynamoPlugin\nplugin = TorchDynamoPlugin(backend='inductor', mode='default')\n",
        ),
        Invalid(
            "from accelerate import Accelerator, utils\nacc = Accelerator(dynamo_plugin=utils.TorchDynamoPlugin(backend='INDUCTR'))\n",
            fixed="from accelerate import Accelerator, utils\nacc = Accelerator(dynamo_plugin=utils.TorchDynamoPlugin(backend='inductor'))\n",
        ),
        Invalid(
            "from accelerate.utils import TorchDynamoPlugin\nplugin = TorchDynamoPlugin('onnxrt', 'default')\n",
            message="dead",
        ),
        Invalid(
            "from accelerate import Accelerator\naccelerator = Accelerator(dynamo_backend='fx2trt')\n",
            fixed="from accelerate import Accelerator\naccelerator = Accelerator(dynamo_backend='tensorrt')\n",
            message="dead",
        ),
        Invalid(
            "from accelerate import Accelerator\naccelerator = Accelerator(dynamo_backend='TORCHXLA_TRACE_ONCE')\n",
            message="`prepare()` raises",
        ),
        Invalid(
            "from accelerate import Accelerator\naccelerator = Accelerator(dynamo_backend='nvprims_nvfuser', mixed_precision='bf16')\n",
            fixed="from accelerate import Accelerator\naccelerator = Accelerator(dynamo_backend='inductor', mixed_precision='bf16')\n",
        ),
        Invalid(
            "import torch\nfrom accelerate.utils import TorchDynamoPlugin\na = torch.compile(m1, backend='openxla')\n"
            "b = TorchDynamoPlugin(backend='openxla')\nc = torch.compile(m2, backend='aot_torchxla_trace_once')\n",
            count=2,
            fixed="import torch\nfrom accelerate.utils import TorchDynamoPlugin\na = torch.compile(m1, backend='openxla')\n"
            "b = TorchDynamoPlugin(backend='openxla')\nc = torch.compile(m2, backend='openxla')\n",
        ),
    ]

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._torch_reports: list[tuple[Report, str]] = []
        self._registered: set[str] = set()
        self._registers_unknown_names = False

    # -- registrations in this file ----------------------------------------------------------
    def _is_register_backend(self, func: ast.AST) -> bool:
        if isinstance(func, ast.Attribute) and func.attr != "register_backend":
            return False  # cheap exit before resolving imports
        return self.ctx.resolves_to(func, *REGISTER_BACKEND)

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        for decorator in node.decorator_list:
            if self._is_register_backend(decorator):
                self._registered.add(node.name)
            elif isinstance(decorator, ast.Call) and self._is_register_backend(decorator.func):
                self._note_registration(keyword_value(decorator, "name"), node.name)

    visit_AsyncFunctionDef = visit_FunctionDef

    def _note_registration(self, name: ast.expr | None, function_name: str | None) -> None:
        """``register_backend`` registers ``name=`` or else the compiler function's ``__name__``."""
        if name is None and function_name is not None:
            self._registered.add(function_name)
        elif (literal := string_literal(name)) is not None:
            self._registered.add(literal)
        else:
            self._registers_unknown_names = True

    # -- call sites --------------------------------------------------------------------------
    def visit_Call(self, node: ast.Call) -> None:
        if self._is_register_backend(node.func):
            compiler_fn = keyword_value(node, "compiler_fn") or (node.args[0] if node.args else None)
            if compiler_fn is not None:  # without one it is a decorator factory: see visit_FunctionDef
                self._note_registration(
                    keyword_value(node, "name"), compiler_fn.id if isinstance(compiler_fn, ast.Name) else None
                )
            return
        site = compile_config_site(self.ctx, node)
        if site is None:
            if self.ctx.resolves_to(node.func, *TRAINING_ARGUMENTS, *TRAINING_ARGUMENTS_SUBCLASSES):
                self._check_accelerate(
                    keyword_value(node, "torch_compile_backend"), "the `Trainer`'s `TorchDynamoPlugin(...)`"
                )
            return
        if site is Site.ACCELERATOR:
            self._check_accelerate(keyword_value(node, "dynamo_backend"), "`Accelerator(...)`")
        elif site is Site.DYNAMO_PLUGIN:
            self._check_accelerate(plugin_argument(node, "backend"), "`TorchDynamoPlugin(...)`")
        elif site in TORCH_SITES:
            value = keyword_value(node, "backend")
            if value is None and site is Site.DYNAMO_OPTIMIZE and node.args:
                value = node.args[0]
            self._check_torch(value)

    def _check_torch(self, value: ast.expr | None) -> None:
        name = string_literal(value)
        if value is None or name is None:
            return
        verdict = judge_torch_backend(name)
        if verdict is not None:
            self._report(value, verdict)
            self._torch_reports.append((self.reports[-1], name))

    def _check_accelerate(self, value: ast.expr | None, where: str) -> None:
        name = string_literal(value)
        if value is None or name is None:
            return
        verdict = judge_accelerate_backend(name, where)
        if verdict is not None:
            self._report(value, verdict)

    def _report(self, value: ast.expr, verdict: Verdict) -> None:
        fix = None
        if verdict.suggestion:
            edit = replace_string_literal(self.ctx, value, verdict.suggestion)
            if edit is not None:
                fix = self.make_fix(f'Use backend "{verdict.suggestion}"', [edit])
        self.report(value, verdict.message, fix=fix)

    @classmethod
    def check_settings(cls, found: SettingsFile, path: str) -> list[SettingsReport]:
        reports = []
        for setting in found.settings:
            if setting.field != "backend":
                continue
            verdict = judge_backend_setting(setting)
            if verdict is None:
                continue
            fix = None
            if verdict.suggestion:
                fix = cls.settings_fix(
                    f'Use backend "{verdict.suggestion}"', [replace_value(setting, verdict.suggestion)]
                )
            reports.append(SettingsReport(setting.start, setting.end, verdict.message, fix))
        return reports

    def finish(self) -> None:
        """Drop torch findings for backends this file registers itself (anywhere in the file)."""
        dropped = {
            id(rep) for rep, name in self._torch_reports if self._registers_unknown_names or name in self._registered
        }
        if dropped:
            self.reports = [rep for rep in self.reports if id(rep) not in dropped]
