"""RC501 prefer-regional-compilation."""

from __future__ import annotations

import ast
from dataclasses import dataclass

from regcomp_lint.analysis import callsites
from regcomp_lint.analysis.bindings import Where, binding_key
from regcomp_lint.analysis.compile_settings import SettingsFile
from regcomp_lint.analysis.compile_settings.scripts import switch_nearby
from regcomp_lint.analysis.file_context import (
    has_star_kwargs,
    is_none,
    is_true,
    keyword,
    keyword_value,
    method_receiver,
    string_literal,
)
from regcomp_lint.analysis.models import ModelFinder, RepeatedBlocks
from regcomp_lint.checks.accelerate_fixes import backend_keyword_to_plugin, local_name
from regcomp_lint.checks.base import Invalid, Rule, SettingsExample, SettingsReport
from regcomp_lint.checks.regional_settings import REGIONAL_SWITCHES, regional_advice
from regcomp_lint.checks.text_edits import append_keyword
from regcomp_lint.diagnostics import Applicability, Fix, Severity
from regcomp_lint.knowledge.accelerate_api import (
    COMPILE_REGIONS,
    DYNAMO_BACKEND_ENUM,
    MODEL_PREPARE_METHODS,
    REGIONAL_FIELD,
    UTILS_MODULE,
)
from regcomp_lint.knowledge.launch_settings import (
    ENVIRONMENT,
    LAUNCH_FLAGS,
    TRAINERS,
    TRAINING_ARGUMENTS,
    TRAINING_ARGUMENTS_SUBCLASSES,
)


@dataclass
class _Site:
    call: ast.Call
    where: Where
    parent: ast.AST | None = None


_TRAINER_NAMES = frozenset(
    name.rsplit(".", 1)[1] for name in (*TRAINERS, *TRAINING_ARGUMENTS, *TRAINING_ARGUMENTS_SUBCLASSES)
)


def func_name(func: ast.expr) -> str:
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""


def trainer_compiles(call: ast.Call) -> bool:
    """``TrainingArguments(torch_compile=True)``, or a literal compile backend/mode (either turns
    ``torch_compile`` on; a backend of ``"no"`` compiles nothing)."""
    if is_true(keyword_value(call, "torch_compile")):
        return True
    backend = string_literal(keyword_value(call, "torch_compile_backend"))
    if backend is not None:
        return backend.lower() != "no"
    return string_literal(keyword_value(call, "torch_compile_mode")) is not None


class PreferRegionalCompilation(Rule):
    """## What it does
    Reports a whole-model compile of a model made of repeated blocks: `torch.compile(model)`,
    `model.compile()`, or an Accelerate setup that compiles the model it prepares with a
    `TorchDynamoPlugin` lacking `use_regional_compilation=True` (or with
    `Accelerator(dynamo_backend=...)`).

    A model "has repeated blocks" when it comes from transformers (`AutoModel*`, `*Model`,
    `*LMHeadModel`, `*For<Task>` via `from_pretrained`, `from_config` or the constructor) or is
    an instance of a class defined in the same file, or in a local module it imports (nanoGPT's
    `train.py` doing `from model import GPT`: the finding names that file's line of the block
    list), whose `__init__` builds an `nn.ModuleList`
    of at least 4 instances of one class (`[Block(cfg) for _ in range(n)]`, `[Block()] * 6`,
    `append` in a loop), at any nesting, as nanoGPT does. A depth read from a config
    (`range(config.n_layer)`) counts as deep. Names are followed through assignments,
    `.to(device)`-style calls, `self.model`, `accelerator.prepare(...)` and local functions that
    return a model. Not reported: compiling a function, models without repeated blocks,
    `compile_regions`, a plugin whose backend is not a literal (it may be `"no"`), and
    `use_regional_compilation` set to anything but a literal `False`/`None`. A plugin without
    the keyword is reported: it then reads `ACCELERATE_DYNAMO_USE_REGIONAL_COMPILATION`
    (default false), so the script alone does not ask for regional compilation.

    A `transformers.Trainer` (or `Seq2SeqTrainer`, trl's `SFTTrainer`/`DPOTrainer`) given such a
    model and `TrainingArguments(torch_compile=True)` (or a compile backend or mode) is reported
    at that argument unless the file, or a settings file beside it (launch script, Makefile,
    accelerate config, `.env`), mentions `ACCELERATE_DYNAMO_USE_REGIONAL_COMPILATION`,
    `--dynamo_use_regional_compilation` or `dynamo_use_regional_compilation`: the Trainer's
    plugin can be told only by those.

    Outside Python the same advice is given where compilation is switched on: an `accelerate
    config` file whose `dynamo_config:` picks a backend without
    `dynamo_use_regional_compilation: true`, an `accelerate launch --dynamo_backend X` without
    `--dynamo_use_regional_compilation`, an `ACCELERATE_DYNAMO_BACKEND=X` assignment (shell,
    Makefile, Dockerfile, `.env`, workflow `env:`) in a file that nowhere turns regional
    compilation on (no fix: the second variable is spelled differently in each), and
    `TrainingArguments` flags or file keys
    (`--torch_compile`, `--torch_compile_backend`, `torch_compile_backend:`): the `Trainer` has
    no field for regional compilation, so the finding names the switch that does it,
    `ACCELERATE_DYNAMO_USE_REGIONAL_COMPILATION=1` or `accelerate launch
    --dynamo_use_regional_compilation` (not reported when the same file sets it). There the
    model is not known, so check it is made of repeated blocks.

    ## Why is this bad
    Compiling the whole model traces every block into one big graph, so the cold start grows
    with depth: measured on GPT-2 (CPU, inductor, fresh cache) it went from ~33 s at 6 layers
    to ~52 s at 24, while regional compilation, which compiles one block and reuses the code for
    its identical siblings, stayed at ~23 s at every depth. The steady training step was about
    5-10% slower than a whole-model compile: a long run on a shallow model may prefer whole.
    That trade-off is why this is advice (severity info, which does not fail a run unless
    `--fail-on info`), why a project that excludes compile time on purpose turns it off with
    `prefer-steady-state = true`, and why a compile behind a constant-false flag
    (`use_compile = False`) is not reported.

    ## Example
    ```python
    model = AutoModelForCausalLM.from_pretrained("gpt2")
    model = torch.compile(model, mode="max-autotune")

    accelerator = Accelerator(dynamo_plugin=TorchDynamoPlugin(backend="inductor"))
    model = accelerator.prepare(model)
    ```

    ## Use instead
    ```python
    from accelerate.utils import compile_regions

    model = compile_regions(model, mode="max-autotune")

    accelerator = Accelerator(
        dynamo_plugin=TorchDynamoPlugin(backend="inductor", use_regional_compilation=True)
    )
    ```

    ## Fix safety
    Unsafe. `compile_regions(model, **kwargs)` (accelerate 1.15) takes the same keywords as
    `torch.compile` and, like it, returns a new module rather than compiling in place, but it
    compiles each repeated block and the remaining children separately, so the state-dict keys
    change (`h.0._orig_mod.` instead of `_orig_mod.h.0.`) and code that unwraps `_orig_mod` or
    relies on one graph (e.g. `fullgraph=True` across blocks) behaves differently. The plugin
    fix adds `use_regional_compilation=True` (or replaces a literal `False`), which makes
    `accelerator.prepare` call `compile_regions` the same way. `dynamo_backend=` is rewritten
    as a plugin with regional compilation. `model.compile()` compiles in place and has no
    drop-in regional twin, so it is display only: use `model = compile_regions(model)` where
    every reference to the model is reassigned, or call `.compile()` on each block.

    ## References
    - [Reducing torch.compile cold start with regional compilation](https://docs.pytorch.org/tutorials/recipes/regional_compilation.html)
    - [Accelerate: regional compilation](https://huggingface.co/docs/accelerate/usage_guides/compilation)
    - [`compile_regions`](https://huggingface.co/docs/accelerate/package_reference/utilities)
    """

    code = "RC501"
    name = "prefer-regional-compilation"
    severity = Severity.INFO
    cold_start_advice = True
    settings_invalid = [
        SettingsExample(
            "default_config.yaml",
            "distributed_type: MULTI_GPU\ndynamo_config:\n  dynamo_backend: INDUCTOR  # compile\n  dynamo_mode: default\nnum_processes: 2\n",
            fixed="distributed_type: MULTI_GPU\ndynamo_config:\n  dynamo_backend: INDUCTOR  # compile\n"
            "  dynamo_use_regional_compilation: true\n  dynamo_mode: default\nnum_processes: 2\n",
        ),
        SettingsExample(
            "default_config.yaml",
            "dynamo_config:\n  dynamo_backend: INDUCTOR\n  dynamo_use_regional_compilation: false\n",
            fixed="dynamo_config:\n  dynamo_backend: INDUCTOR\n  dynamo_use_regional_compilation: true\n",
        ),
        SettingsExample(
            "train.sh",
            "accelerate launch --dynamo_backend inductor train.py  # nightly\n",
            fixed="accelerate launch --dynamo_backend inductor --dynamo_use_regional_compilation train.py  # nightly\n",
        ),
        SettingsExample(
            "ci.yml",
            "steps:\n  - run: |\n      python run_clm.py --torch_compile --model_name_or_path gpt2\n",
            message="ACCELERATE_DYNAMO_USE_REGIONAL_COMPILATION=1",
        ),
        SettingsExample(
            "train.sh",
            "export ACCELERATE_DYNAMO_BACKEND=inductor\naccelerate launch train.py\n",
            message="ACCELERATE_DYNAMO_USE_REGIONAL_COMPILATION=1",
        ),
    ]
    settings_valid = [
        SettingsExample("default_config.yaml", "dynamo_config:\n  dynamo_backend: NO\n"),
        SettingsExample(
            "default_config.yaml",
            "dynamo_config:\n  dynamo_backend: INDUCTOR\n  dynamo_use_regional_compilation: true\n",
        ),
        SettingsExample(
            "train.sh", "accelerate launch --dynamo_use_regional_compilation --dynamo_backend inductor train.py\n"
        ),
        SettingsExample(
            "train.sh",
            "export ACCELERATE_DYNAMO_USE_REGIONAL_COMPILATION=1\npython run_clm.py --torch_compile_backend inductor\n",
        ),
        SettingsExample(
            ".env", "ACCELERATE_DYNAMO_BACKEND=inductor\nACCELERATE_DYNAMO_USE_REGIONAL_COMPILATION=true\n"
        ),
        SettingsExample(".env", "ACCELERATE_DYNAMO_BACKEND=no\n"),
    ]
    message = "whole-model compile of a model with repeated blocks: use regional compilation"
    triggers = (callsites.COMPILE_NAME, "torch_compile", "DynamoPlugin", "dynamo_backend")
    fix_applicability = Applicability.UNSAFE

    valid = [
        "import os\nfrom transformers import AutoModelForCausalLM, Trainer, TrainingArguments\n"
        "os.environ['ACCELERATE_DYNAMO_USE_REGIONAL_COMPILATION'] = '1'\n"
        "model = AutoModelForCausalLM.from_pretrained('gpt2')\n"
        "Trainer(model=model, args=TrainingArguments('out', torch_compile_backend='inductor')).train()\n",
        "from transformers import AutoModelForCausalLM, Trainer, TrainingArguments\n"
        "model = AutoModelForCausalLM.from_pretrained('gpt2')\n"
        "Trainer(model=model, args=TrainingArguments('out', torch_compile_backend='no')).train()\n",
        # a function, not a model
        "import torch\ndef step(x):\n    return x * 2\nstep = torch.compile(step)\n",
        # a small model without repeated blocks
        "import torch\nfrom torch import nn\nclass Net(nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        self.fc = nn.Linear(4, 4)\nmodel = torch.compile(Net())\n",
        # three blocks only
        "import torch\nfrom torch import nn\nclass Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.blocks = nn.ModuleList([Block() for _ in range(3)])\nmodel = Net()\nmodel = torch.compile(model)\n",
        # a stack of plain layers is not a stack of blocks
        "import torch\nfrom torch import nn\nclass MLP(nn.Module):\n    def __init__(self, n):\n        super().__init__()\n"
        "        self.layers = nn.ModuleList([nn.Linear(8, 8) for _ in range(n)])\nmodel = torch.compile(MLP(6))\n",
        # already regional
        "from accelerate.utils import compile_regions\nfrom transformers import AutoModelForCausalLM\n"
        "model = AutoModelForCausalLM.from_pretrained('gpt2')\nmodel = compile_regions(model)\n",
        "from accelerate import Accelerator\nfrom accelerate.utils import TorchDynamoPlugin\nfrom transformers import AutoModel\n"
        "model = AutoModel.from_pretrained('bert-base-uncased')\n"
        "acc = Accelerator(dynamo_plugin=TorchDynamoPlugin(backend='inductor', use_regional_compilation=True))\n"
        "model = acc.prepare(model)\n",
        # the backend is not a literal, or does not compile
        "from accelerate import Accelerator\nfrom accelerate.utils import TorchDynamoPlugin\nfrom transformers import AutoModel\n"
        "model = AutoModel.from_pretrained('x')\nacc = Accelerator(dynamo_plugin=TorchDynamoPlugin(backend=args.backend))\n"
        "model = acc.prepare(model)\n",
        "from accelerate import Accelerator\nfrom transformers import AutoModel\nmodel = AutoModel.from_pretrained('x')\n"
        "acc = Accelerator(dynamo_backend='no')\nmodel = acc.prepare(model)\n",
        # the plugin is never given to an accelerator that prepares the model
        "from accelerate.utils import TorchDynamoPlugin\nfrom transformers import AutoModel\n"
        "model = AutoModel.from_pretrained('x')\nplugin = TorchDynamoPlugin(backend='inductor')\n",
        # not transformers' model class; a tokenizer
        "import torch\nfrom mylib import AutoModel\nmodel = torch.compile(AutoModel.from_pretrained('x'))\n",
        "import torch\nfrom transformers import AutoTokenizer\ntok = AutoTokenizer.from_pretrained('x')\ntok = torch.compile(tok)\n",
        # the name was rebound to something else
        "import torch\nfrom transformers import AutoModel\nmodel = AutoModel.from_pretrained('x')\n"
        "model = model.lm_head\nmodel = torch.compile(model)\n",
        # a parameter shadows the module-level model
        "import torch\nfrom transformers import AutoModel\nmodel = AutoModel.from_pretrained('x')\n"
        "def compile_it(model):\n    return torch.compile(model)\n",
    ]
    invalid = [
        # the Trainer builds the plugin: only the environment or the launch flag turn regional on
        Invalid(
            "from transformers import AutoModelForCausalLM, Trainer, TrainingArguments\n"
            "model = AutoModelForCausalLM.from_pretrained('gpt2')\n"
            "args = TrainingArguments('out', torch_compile=True)\n"
            "Trainer(model=model, args=args).train()\n",
            message="ACCELERATE_DYNAMO_USE_REGIONAL_COMPILATION=1",
        ),
        Invalid(
            "import torch\nfrom transformers import AutoModelForCausalLM\n"
            "model = AutoModelForCausalLM.from_pretrained('gpt2')\nmodel = torch.compile(model, mode='max-autotune')\n",
            fixed="import torch\nfrom transformers import AutoModelForCausalLM\nfrom accelerate.utils import compile_regions\n"
            "model = AutoModelForCausalLM.from_pretrained('gpt2')\nmodel = compile_regions(model, mode='max-autotune')\n",
            message="transformers model `AutoModelForCausalLM`",
        ),
        # nanoGPT: blocks nested in a ModuleDict, depth from the config, model moved to a device
        Invalid(
            "import torch\nimport torch.nn as nn\n\nclass Block(nn.Module):\n    pass\n\n"
            "class GPT(nn.Module):\n    def __init__(self, config):\n        super().__init__()\n"
            "        self.transformer = nn.ModuleDict(dict(\n            h=nn.ModuleList([Block(config) for _ in range(config.n_layer)]),\n        ))\n\n"
            "model = GPT(config)\nmodel.to(device)\nmodel = model.to(device)\nif compile:\n    model = torch.compile(model)\n",
            fixed="import torch\nimport torch.nn as nn\nfrom accelerate.utils import compile_regions\n\nclass Block(nn.Module):\n    pass\n\n"
            "class GPT(nn.Module):\n    def __init__(self, config):\n        super().__init__()\n"
            "        self.transformer = nn.ModuleDict(dict(\n            h=nn.ModuleList([Block(config) for _ in range(config.n_layer)]),\n        ))\n\n"
            "model = GPT(config)\nmodel.to(device)\nmodel = model.to(device)\nif compile:\n    model = compile_regions(model)\n",
            message="`Block` ×n",
        ),
        # multiplication with a literal count; alias of torch.compile; existing compile_regions import
        Invalid(
            "from torch import compile as tc, nn\nfrom accelerate.utils import compile_regions\n"
            "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.layers = nn.ModuleList([Layer()] * 6)\n"
            "net = tc(Net(), backend='eager', fullgraph=True)\n",
            fixed="from torch import compile as tc, nn\nfrom accelerate.utils import compile_regions\n"
            "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.layers = nn.ModuleList([Layer()] * 6)\n"
            "net = compile_regions(Net(), backend='eager', fullgraph=True)\n",
            message="`Layer` ×6",
        ),
        # Accelerate: a plugin given to the Accelerator that prepares the model
        Invalid(
            "from accelerate import Accelerator\nfrom accelerate.utils import TorchDynamoPlugin\nfrom transformers import GPT2LMHeadModel\n"
            "model = GPT2LMHeadModel.from_pretrained('gpt2')\nplugin = TorchDynamoPlugin(backend='inductor', mode='default')\n"
            "accelerator = Accelerator(dynamo_plugin=plugin)\nmodel, opt = accelerator.prepare(model, opt)\n",
            fixed="from accelerate import Accelerator\nfrom accelerate.utils import TorchDynamoPlugin\nfrom transformers import GPT2LMHeadModel\n"
            "model = GPT2LMHeadModel.from_pretrained('gpt2')\n"
            "plugin = TorchDynamoPlugin(backend='inductor', mode='default', use_regional_compilation=True)\n"
            "accelerator = Accelerator(dynamo_plugin=plugin)\nmodel, opt = accelerator.prepare(model, opt)\n",
            message="use_regional_compilation=True",
        ),
        # a multi-line plugin with use_regional_compilation=False, inside a trainer class
        Invalid(
            "import accelerate\nfrom accelerate.utils import TorchDynamoPlugin\nimport transformers\n\n"
            "class Trainer:\n    def __init__(self, name):\n"
            "        self.model = transformers.AutoModelForSequenceClassification.from_pretrained(name)\n"
            "        self.accelerator = accelerate.Accelerator(dynamo_plugin=TorchDynamoPlugin(\n"
            "            backend='inductor',\n            use_regional_compilation=False,\n        ))\n\n"
            "    def setup(self):\n        self.model = self.accelerator.prepare(self.model)\n",
            fixed="import accelerate\nfrom accelerate.utils import TorchDynamoPlugin\nimport transformers\n\n"
            "class Trainer:\n    def __init__(self, name):\n"
            "        self.model = transformers.AutoModelForSequenceClassification.from_pretrained(name)\n"
            "        self.accelerator = accelerate.Accelerator(dynamo_plugin=TorchDynamoPlugin(\n"
            "            backend='inductor',\n            use_regional_compilation=True,\n        ))\n\n"
            "    def setup(self):\n        self.model = self.accelerator.prepare(self.model)\n",
        ),
        Invalid(
            "from accelerate import Accelerator\nfrom accelerate.utils import TorchDynamoPlugin\nfrom transformers import AutoModel\n"
            "def build():\n    return AutoModel.from_config(cfg).cuda()\n"
            "def main():\n    acc = Accelerator(dynamo_plugin=TorchDynamoPlugin(\n        backend='inductor',\n        mode='max-autotune'\n    ))\n"
            "    model = build()\n    model = acc.prepare_model(model)\n",
            fixed="from accelerate import Accelerator\nfrom accelerate.utils import TorchDynamoPlugin\nfrom transformers import AutoModel\n"
            "def build():\n    return AutoModel.from_config(cfg).cuda()\n"
            "def main():\n    acc = Accelerator(dynamo_plugin=TorchDynamoPlugin(\n        backend='inductor',\n        mode='max-autotune',\n"
            "        use_regional_compilation=True\n    ))\n"
            "    model = build()\n    model = acc.prepare_model(model)\n",
        ),
        # the legacy dynamo_backend keyword compiles the whole model too
        Invalid(
            "from accelerate import Accelerator\nfrom transformers import LlamaForCausalLM\n"
            "model = LlamaForCausalLM(config)\naccelerator = Accelerator(dynamo_backend='inductor')\n"
            "model, optimizer, loader = accelerator.prepare(model, optimizer, loader)\n",
            fixed="from accelerate import Accelerator\nfrom transformers import LlamaForCausalLM\n"
            "from accelerate.utils import TorchDynamoPlugin\n"
            "model = LlamaForCausalLM(config)\n"
            "accelerator = Accelerator(dynamo_plugin=TorchDynamoPlugin(backend='inductor', use_regional_compilation=True))\n"
            "model, optimizer, loader = accelerator.prepare(model, optimizer, loader)\n",
            message="`dynamo_backend=`",
        ),
        # nn.Module.compile: compiled in place, shown but never applied
        Invalid(
            "from torch import nn\nclass Encoder(nn.Module):\n    def __init__(self, n):\n        super().__init__()\n"
            "        self.layers = nn.ModuleList()\n        for _ in range(n):\n            self.layers.append(EncoderLayer())\n"
            "enc = Encoder(12)\nenc.compile(mode='reduce-overhead')\n",
            message="`EncoderLayer` ×n",
        ),
        # a wrapper whose sub-model has the blocks; a DDP wrapper keeps the identity
        Invalid(
            "import torch\nfrom torch.nn.parallel import DistributedDataParallel as DDP\nfrom transformers import AutoModel\n"
            "class Classifier(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            "        self.backbone = AutoModel.from_pretrained('roberta-base')\n        self.head = torch.nn.Linear(768, 2)\n"
            "model = DDP(Classifier())\nmodel = torch.compile(model)\n",
            fixed="import torch\nfrom torch.nn.parallel import DistributedDataParallel as DDP\nfrom transformers import AutoModel\n"
            "from accelerate.utils import compile_regions\n"
            "class Classifier(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            "        self.backbone = AutoModel.from_pretrained('roberta-base')\n        self.head = torch.nn.Linear(768, 2)\n"
            "model = DDP(Classifier())\nmodel = compile_regions(model)\n",
        ),
    ]

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.bindings = ctx.semantic.bindings
        self._torch_compiles: list[_Site] = []
        self._module_compiles: list[_Site] = []
        self._prepares: list[_Site] = []
        self._accelerators: dict[int, Where] = {}
        self._regional_set: list[tuple[ast.expr, Where]] = []
        self._trainer_args: list[ast.Call] = []  # TrainingArguments(...) that turn compiling on
        self._trainers: list[_Site] = []

    # -- collecting, during the walk -------------------------------------------------------
    @classmethod
    def check_settings(cls, found: SettingsFile, path: str) -> list[SettingsReport]:
        return regional_advice(found)

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            if isinstance(target, ast.Attribute) and target.attr == REGIONAL_FIELD:
                self._regional_set.append((target.value, self.bindings.here(node)))

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Attribute):
            if func.attr in MODEL_PREPARE_METHODS:
                self._prepares.append(_Site(node, self.bindings.here(node)))
            elif func.attr == "compile":
                self._compile_call(node)
            elif func.attr == "Accelerator" and callsites.is_accelerator(self.ctx, func):
                self._accelerators[id(node)] = self.bindings.here(node)
        if isinstance(func, (ast.Name, ast.Attribute)) and func_name(func) in _TRAINER_NAMES:
            self._trainer_call(node)
        if isinstance(func, ast.Name) and (func.id == "Accelerator" or self.ctx.imports.imported(func.id)):
            if callsites.is_accelerator(self.ctx, func):
                self._accelerators[id(node)] = self.bindings.here(node)
            else:
                self._compile_call(node)

    def _trainer_call(self, node: ast.Call) -> None:
        if self.ctx.resolves_to(node.func, *TRAINING_ARGUMENTS, *TRAINING_ARGUMENTS_SUBCLASSES):
            if trainer_compiles(node):
                self._trainer_args.append(node)
        elif self.ctx.resolves_to(node.func, *TRAINERS):
            self._trainers.append(_Site(node, self.bindings.here(node)))

    def _compile_call(self, node: ast.Call) -> None:
        if callsites.is_torch_compile(self.ctx, node.func):
            if node.args and not isinstance(node.args[0], ast.Starred):
                self._torch_compiles.append(_Site(node, self.bindings.here(node)))
        elif callsites.is_module_compile(self.ctx, node):
            self._module_compiles.append(_Site(node, self.bindings.here(node), self.ctx.parent()))

    # -- judging, once the whole file is known ---------------------------------------------
    def finish(self) -> None:
        if self._trainer_args and self._trainers:
            self._judge_trainer()
        if not (self._torch_compiles or self._module_compiles or (self._prepares and self._accelerators)):
            return
        finder = self.ctx.semantic.model_finder
        for site in self._torch_compiles:
            model = finder.model_of(site.call.args[0], site.where)
            if model is not None:
                self._report_torch_compile(site.call, model)
        for site in self._module_compiles:
            model = finder.model_of(method_receiver(site.call), site.where)
            if model is not None:
                self._report_module_compile(site, model)
        self._judge_accelerators(finder)

    def _judge_trainer(self) -> None:
        """``TrainingArguments(torch_compile=True)`` handed to a ``Trainer`` of a model with
        repeated blocks, with no regional switch in this file (the only ways are the
        environment and the launch flag: ``TrainingArguments`` has no field for it)."""
        if any(switch in self.ctx.source.text for switch in REGIONAL_SWITCHES):
            return
        if switch_nearby(self.ctx.filename, REGIONAL_SWITCHES) is not None:
            return  # a launch script or config beside it turns regional compilation on
        finder = self.ctx.semantic.model_finder
        for site in self._trainers:
            given = keyword_value(site.call, "model") or (site.call.args[0] if site.call.args else None)
            model = finder.model_of(given, site.where) if given is not None else None
            if model is not None:
                break
        else:
            return
        for args in self._trainer_args:
            where = next(
                (
                    kw
                    for kw in args.keywords
                    if kw.arg in ("torch_compile", "torch_compile_backend", "torch_compile_mode")
                ),
                None,
            )
            self.report(
                where.value if where is not None else args,
                f"the `Trainer` compiles the whole model ({model.describe()}): `TrainingArguments` cannot ask for "
                f"regional compilation; set `{ENVIRONMENT[REGIONAL_FIELD]}=1` in the launch environment or launch "
                f"with `accelerate launch {LAUNCH_FLAGS[REGIONAL_FIELD]}`",
            )

    def _report_torch_compile(self, call: ast.Call, model: RepeatedBlocks) -> None:
        message = (
            f"whole-model `torch.compile` of a model with repeated blocks ({model.describe()}): use `compile_regions`"
        )
        fix = None
        spelled = local_name(self.ctx, COMPILE_REGIONS, UTILS_MODULE, "compile_regions")
        if spelled is not None and len(call.args) == 1:
            name, import_edit = spelled
            edits = [self.ctx.source.replace(call.func, name)] + ([import_edit] if import_edit else [])
            fix = self.make_fix("Compile the repeated blocks with `accelerate.utils.compile_regions`", edits)
        self.report(call, message, fix=fix)

    def _report_module_compile(self, site: _Site, model: RepeatedBlocks) -> None:
        message = (
            f"whole-model `.compile()` of a model with repeated blocks ({model.describe()}): "
            "compile its blocks (`compile_regions`)"
        )
        self.report(site.call, message, fix=self._module_compile_suggestion(site))

    def _module_compile_suggestion(self, site: _Site) -> Fix | None:
        """Display only: ``model.compile(kw)`` → ``model = compile_regions(model, kw)``."""
        call = site.call
        obj = method_receiver(call)
        if not (isinstance(site.parent, ast.Expr) and site.parent.value is call and binding_key(obj)):
            return None
        spelled = local_name(self.ctx, COMPILE_REGIONS, UTILS_MODULE, "compile_regions")
        if spelled is None:
            return None
        name, import_edit = spelled
        src = self.ctx.source
        target = src.segment(obj)
        arguments = src.text_between(src.end(call.func), src.end(call)).strip()[1:-1].strip()
        new = f"{target} = {name}({target}{', ' + arguments if arguments else ''})"
        edits = [src.replace(call, new)] + ([import_edit] if import_edit else [])
        return self.make_fix("Reassign the model to `compile_regions(model, ...)`", edits, Applicability.DISPLAY)

    def _judge_accelerators(self, finder: ModelFinder) -> None:
        prepared: dict[int, tuple[ast.Call, Where, RepeatedBlocks]] = {}
        for site in self._prepares:
            accelerator = self._accelerator_of(method_receiver(site.call), site.where)
            if accelerator is None or id(accelerator[0]) in prepared:
                continue
            for arg in site.call.args:
                if isinstance(arg, ast.Starred):
                    break
                model = finder.model_of(arg, site.where)
                if model is not None:
                    prepared[id(accelerator[0])] = (*accelerator, model)
                    break
        reported: set[int] = set()
        for call, where, model in prepared.values():
            plugin_kw, backend_kw = keyword(call, "dynamo_plugin"), keyword(call, "dynamo_backend")
            if backend_kw is not None and is_none(backend_kw.value):
                backend_kw = None
            if plugin_kw is not None and (backend_kw is not None or is_none(plugin_kw.value)):
                continue  # RC106, or no plugin at all
            if plugin_kw is not None:
                plugin = self._plugin_of(plugin_kw.value, where)
                if plugin is not None and id(plugin) not in reported and self._whole_model_plugin(plugin):
                    reported.add(id(plugin))
                    self._report_plugin(plugin, model)
            elif backend_kw is not None and not has_star_kwargs(call) and self._compiles(backend_kw.value):
                self._report_backend(backend_kw, model)

    def _accelerator_of(self, expr: ast.expr, where: Where) -> tuple[ast.Call, Where] | None:
        if isinstance(expr, ast.Call) and id(expr) in self._accelerators:
            return expr, self._accelerators[id(expr)]
        bound = self.bindings.lookup(expr, where)
        if (
            bound is not None
            and bound.index is None
            and isinstance(bound.value, ast.Call)
            and id(bound.value) in self._accelerators
        ):
            return bound.value, bound.where
        return None

    def _plugin_of(self, expr: ast.expr, where: Where) -> ast.Call | None:
        call = self.bindings.call_value(expr, where)
        return call if call is not None and callsites.is_dynamo_plugin(self.ctx, call.func) else None

    def _whole_model_plugin(self, plugin: ast.Call) -> bool:
        """The plugin certainly compiles, and certainly not regionally."""
        disable = keyword(plugin, "disable")
        if has_star_kwargs(plugin) or plugin.args or (disable is not None and is_true(disable.value)):
            return False
        regional = keyword(plugin, REGIONAL_FIELD)
        if regional is not None and not (is_none(regional.value) or _is_false(regional.value)):
            return False
        backend = keyword(plugin, "backend")
        if backend is None or not self._compiles(backend.value):
            return False
        return not self._regional_set_later(plugin)

    def _regional_set_later(self, plugin: ast.Call) -> bool:
        """``plugin.use_regional_compilation = ...`` (or on any ``...dynamo_plugin``)."""
        for owner, where in self._regional_set:
            if isinstance(owner, ast.Attribute) and owner.attr == "dynamo_plugin":
                return True
            bound = self.bindings.lookup(owner, where)
            if bound is None or bound.value is plugin:
                return True
        return False

    def _compiles(self, value: ast.expr) -> bool:
        """A backend value that certainly compiles (a literal other than ``"no"``)."""
        text = string_literal(value)
        if text is not None:
            return text.lower() != "no"
        qualname = self.ctx.qualname(value)
        if qualname and "." in qualname and self.ctx.imports.root_is_import(value):
            enum, member = qualname.rsplit(".", 1)
            return enum in DYNAMO_BACKEND_ENUM and member != "NO"
        return False

    def _report_plugin(self, plugin: ast.Call, model: RepeatedBlocks) -> None:
        message = (
            f"`TorchDynamoPlugin` compiles the whole model, which has repeated blocks "
            f"({model.describe()}): set `use_regional_compilation=True`"
        )
        regional = keyword(plugin, REGIONAL_FIELD)
        if regional is not None:
            edits = [self.ctx.source.replace(regional.value, "True")]
        else:
            edits = append_keyword(self.ctx, plugin, f"{REGIONAL_FIELD}=True")
        self.report(plugin, message, fix=self.make_fix("Set `use_regional_compilation=True`", edits))

    def _report_backend(self, kw: ast.keyword, model: RepeatedBlocks) -> None:
        message = (
            f"`dynamo_backend=` compiles the whole model, which has repeated blocks "
            f"({model.describe()}): use `TorchDynamoPlugin(..., use_regional_compilation=True)`"
        )
        edits = backend_keyword_to_plugin(self.ctx, kw, extra=f", {REGIONAL_FIELD}=True")
        fix = self.make_fix("Use a `TorchDynamoPlugin` with regional compilation", edits) if edits else None
        self.report(kw, message, fix=fix)


def _is_false(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value is False
