"""RC404 orig-mod-state-dict."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, replace

from regcomp_lint.analysis import callsites
from regcomp_lint.analysis.accelerate_script import (
    MAX_DEPTH,
    SCOPES,
    AccelerateScript,
)
from regcomp_lint.analysis.bindings import Bindings, Where, binding_key
from regcomp_lint.analysis.file_context import has_star_kwargs, keyword, keyword_value, method_receiver
from regcomp_lint.analysis.prefix_strips import prefix_names, strips_into, strips_read
from regcomp_lint.analysis.training_objects import Kind, constructor_kind
from regcomp_lint.checks.base import Invalid, Rule
from regcomp_lint.checks.text_edits import append_keyword
from regcomp_lint.diagnostics import Applicability, Severity
from regcomp_lint.files.parsing import walk
from regcomp_lint.knowledge.accelerate_api import PREPARE_METHODS
from regcomp_lint.knowledge.torch_api import DATA_PARALLEL, SAME_MODULE_METHODS

KEEP = "keep_torch_compile"
#: Statements under which a compile may not have happened (``if args.compile:``).
CONDITIONAL = (ast.If, ast.IfExp, ast.Try, ast.For, ast.AsyncFor, ast.While, ast.Match, ast.BoolOp)
ACCELERATOR_SAVES = ("save_model", "get_state_dict")
#: Name parts of prepared objects that are not models (``optimizer``, ``lr_scheduler``, ``train_dl``).
NOT_MODEL_NAMES = ("opt", "sched", "load", "data", "dl")


@dataclass(frozen=True)
class _Held:
    """What a saved expression holds. ``kind``: "compiled" (``torch.compile``/``compile_regions``
    by hand), "unwrap" (an ``unwrap_model`` call), "prepared" (a ``prepare`` result).
    ``wrappers``: DDP layers around it. ``certain``: no branch or condition on the way."""

    kind: str
    call: ast.Call
    where: Where
    wrappers: int = 0
    certain: bool = True
    prepared: ast.expr | None = None  # for "prepared": the argument that went into prepare


class OrigModStateDict(Rule):
    """## What it does
    Reports the places where a compiled model's state dict, with `_orig_mod` in every key, is
    taken or saved:

    - `model.state_dict()` of a model bound from `torch.compile(...)` (keys start with
      `_orig_mod.`) or `accelerate.utils.compile_regions(...)` (`_orig_mod.` at every region:
      `blocks.0._orig_mod.fc.weight`), also through DDP's `.module` and `raw = m.module if
      ddp else m`, whatever the state dict is then given to (`torch.save`, `accelerator.save`,
      `save_file`, `load_state_dict`);
    - `state_dict()` of a model prepared by an `Accelerator` whose `TorchDynamoPlugin` (or
      `dynamo_backend=`) compiles (a prepared object built as an optimizer, scheduler or data
      loader, or built out of sight and named like one, `opt`/`sched`/`loader`/`dl`, is not a
      model);
    - with such an accelerator, `accelerator.save_model(model, ...)` and
      `accelerator.get_state_dict(model)`, and an `accelerator.unwrap_model(model)` without
      `keep_torch_compile=False` whose result is saved (`.state_dict()`, passed to `save_model`,
      or `.save_pretrained(...)` when the plugin may compile regionally).

    - parameter names of a compiled model looked up by the plain model's names: `params =
      {n: p for n, p in model.named_parameters()}` (or `dict(model.named_buffers())`) followed by
      `params["transformer.wte.weight"]`, where `model` is compiled in the same scope or passed
      compiled to the function that builds the table (`write_model(model, ...)`): the names
      start with `_orig_mod.`, so the lookup raises `KeyError`.

    Not reported: a state dict of a compiled model kept in memory and loaded back into that
    same model (`best = copy.deepcopy(model.state_dict())` ... `model.load_state_dict(best)`),
    when the copy is never given to a save: its keys match the model they go back into. Nor a
    whole-model compile's state dict in a file whose own load of that model strips the prefix
    (nanoGPT's resume: `unwanted_prefix = '_orig_mod.'` ... `state_dict[k[len(unwanted_prefix):]]
    = state_dict.pop(k)`, or `k.replace("_orig_mod.", "")` / `k.removeprefix(...)` / `re.sub`,
    then `model.load_state_dict(state_dict)`): the prefix is that script's checkpoint format, read
    back by the script itself. The strip must feed the load (inside its argument, or assigned to
    the name it loads, in the same function) and the load must be into the saved model (as
    saved or as handed to `torch.compile`): a strip elsewhere, or one into another model's
    load, does not silence the save.

    A plugin whose backend is not a literal counts as compiling; one without a backend does not
    (accelerate reads `ACCELERATE_DYNAMO_BACKEND`, default `"no"`). `accelerator.save_state()`
    is not reported: it saves the models as they were before compiling.

    ## Why is this bad
    `torch.compile(model)` returns an `OptimizedModule` that holds the model as `_orig_mod`, so
    its state dict names every weight `_orig_mod.<name>`. A checkpoint written from it does not
    load into the plain model (`Missing key(s): "fc.weight"... Unexpected key(s):
    "_orig_mod.fc.weight"`), nor into transformers' `from_pretrained`, and every consumer needs a
    prefix-stripping hack. Accelerate 1.15 keeps the wrapper by default (`unwrap_model(...,
    keep_torch_compile=True)`), and `save_model` / `get_state_dict` call it that way.

    Verified with torch 2.13, accelerate 1.15 and transformers 5.24 on CPU (`backend="eager"`,
    a 4-block model and a 4-layer GPT-2): with a whole-model plugin, `unwrap_model(m)`,
    `get_state_dict(m)` and `save_model(m, dir)` give `_orig_mod.`-prefixed keys; with
    `use_regional_compilation=True` they give `blocks.0._orig_mod.fc.weight` (and
    `transformer.wte._orig_mod.weight`: `compile_regions` compiles every leaf too);
    `unwrap_model(m, keep_torch_compile=False)` and `save_state` give clean keys.
    `unwrap_model(m).save_pretrained(dir)` is clean for a whole-model compile (the wrapper
    forwards `save_pretrained` to the model) but raises for a regional one ("shared tensors
    ... not properly defined"). `save_model` and `get_state_dict` take no `keep_torch_compile`
    (TypeError). `DDP(torch.compile(m)).state_dict()` keys start with `module._orig_mod.`.

    ## Example
    ```python
    model = torch.compile(model)
    torch.save(model.state_dict(), "model.pt")

    accelerator = Accelerator(dynamo_plugin=TorchDynamoPlugin(backend="inductor"))
    model = accelerator.prepare(model)
    accelerator.save_model(model, "out")
    ```

    ## Use instead
    ```python
    torch.save(model._orig_mod.state_dict(), "model.pt")  # or compile in place: model.compile()

    accelerator.save_model(accelerator.unwrap_model(model, keep_torch_compile=False), "out")
    ```

    ## Fix safety
    Naming the parameters through `getattr(model, "_orig_mod", model)` is safe: the same
    tensors, with the names the literal lookups expect, compiled or not.
    Adding `keep_torch_compile=False` to an `unwrap_model` whose result is saved is safe: the
    prepared model stays compiled and trains on (measured), and what is saved holds the same
    tensors, named the way the model's own class and `accelerator.load_state` expect. The other
    fixes are unsafe, as code elsewhere may load the checkpoint into a compiled model and
    expect the prefix: `model._orig_mod.state_dict()` (or `getattr(model, "_orig_mod",
    model).state_dict()` when the compile is conditional, so it still works without it), and
    wrapping the model given to `save_model` / `get_state_dict` or the prepared model in
    `accelerator.unwrap_model(model, keep_torch_compile=False)`, which under FSDP or DeepSpeed
    hands those paths an unwrapped module. No fix where the file also loads a state dict back
    into the compiled model (`model.load_state_dict(...)`): unprefixed keys would fail there. No fix through a DDP wrapper that is not unwrapped
    with `.module`.

    ## References
    - [torch.compile: saving and loading](https://docs.pytorch.org/docs/stable/torch.compiler_faq.html)
    - [`Accelerator.unwrap_model`](https://huggingface.co/docs/accelerate/package_reference/accelerator#accelerate.Accelerator.unwrap_model)
    - [Accelerate: compilation](https://huggingface.co/docs/accelerate/usage_guides/compilation)
    """

    code = "RC404"
    name = "orig-mod-state-dict"
    severity = Severity.ERROR
    message = "the state dict of a compiled model has `_orig_mod.` in every key"
    #: ``save_pretrained`` is judged only after ``unwrap_model``, ``compile_regions`` or a regional plugin.
    triggers = (
        "state_dict",
        "save_model",
        "unwrap_model",
        "use_regional_compilation",
        "compile_regions",
        "named_parameters",
    )
    #: what ``_may_compile`` asks: a file without either is never judged (prefiltered instead of walked)
    required = (("compile", re.compile("dynamo", re.IGNORECASE)),)
    fix_applicability = Applicability.SAFE

    valid = [
        "import torch\nmodel = Net()\ntorch.save(model.state_dict(), 'm.pt')\n",
        "import torch\nmodel = torch.compile(Net())\ntorch.save(model._orig_mod.state_dict(), 'm.pt')\n",
        # compiled in place: the keys stay clean
        "import torch\nmodel = Net()\nmodel.compile()\ntorch.save(model.state_dict(), 'm.pt')\n",
        # a compiled function has no state dict; the name was rebound
        "import torch\nstep = torch.compile(step)\nmodel = torch.compile(Net())\nmodel = Net()\nsd = model.state_dict()\n",
        # Accelerate without a compiling plugin
        "from accelerate import Accelerator\naccelerator = Accelerator()\nmodel = accelerator.prepare(model)\n"
        "accelerator.save_model(model, 'out')\nsd = accelerator.unwrap_model(model).state_dict()\n",
        "from accelerate import Accelerator\nfrom accelerate.utils import TorchDynamoPlugin\n"
        "accelerator = Accelerator(dynamo_plugin=TorchDynamoPlugin(backend='no'))\naccelerator.save_model(model, 'out')\n",
        # compiling, done right
        "from accelerate import Accelerator\nfrom accelerate.utils import TorchDynamoPlugin\n"
        "accelerator = Accelerator(dynamo_plugin=TorchDynamoPlugin(backend='inductor'))\nmodel = accelerator.prepare(model)\n"
        "accelerator.save_state('ckpt')\nunwrapped = accelerator.unwrap_model(model, keep_torch_compile=False)\n"
        "accelerator.save(unwrapped.state_dict(), 'm.pt')\n"
        "accelerator.save_model(accelerator.unwrap_model(model, keep_torch_compile=False), 'out')\n",
        # parameter names of a model that is not compiled, or only iterated (no lookup by name)
        "import torch\ndef write_model(model, filename):\n"
        "    params = {name: p.cpu() for name, p in model.named_parameters()}\n"
        "    torch.save(params['lm_head.weight'], filename)\n"
        "write_model(GPT(), 'gpt2.bin')\n",
        "import torch\nmodel = torch.compile(GPT())\ndecay = [p for n, p in model.named_parameters() if p.dim() >= 2]\n",
        # an in-memory copy loaded back into the same compiled model: the keys match (issue 13)
        "import copy\nimport torch\nmodel = torch.compile(Net())\nbest = copy.deepcopy(model.state_dict())\n"
        "train(model)\nmodel.load_state_dict(best)\n",
        # nanoGPT: the file's own resume strips the prefix, so its checkpoints carry it on purpose
        "import torch\nmodel = GPT(cfg)\nsd = torch.load(path)['model']\nunwanted_prefix = '_orig_mod.'\n"
        "for k, v in list(sd.items()):\n    if k.startswith(unwanted_prefix):\n"
        "        sd[k[len(unwanted_prefix):]] = sd.pop(k)\nmodel.load_state_dict(sd)\n"
        "model = torch.compile(model)\ntorch.save({'model': model.state_dict()}, path)\n",
        # the strip inside the load of that model
        "import torch\nmodel = GPT(cfg)\nsd = torch.load(path)\n"
        "model.load_state_dict({k.removeprefix('_orig_mod.'): v for k, v in sd.items()})\n"
        "model = torch.compile(model)\ntorch.save(model.state_dict(), path)\n",
        # unwrap for generation, not for saving; a whole-model compile saves cleanly through save_pretrained
        "from accelerate import Accelerator\naccelerator = Accelerator(dynamo_backend='inductor')\nmodel = accelerator.prepare(model)\n"
        "text = accelerator.unwrap_model(model).generate(ids)\naccelerator.unwrap_model(model).save_pretrained('out')\n",
    ]
    invalid = [
        Invalid(
            "import torch\nmodel = torch.compile(Net(), mode='max-autotune')\ntorch.save(model.state_dict(), 'model.pt')\n",
            fixed="import torch\nmodel = torch.compile(Net(), mode='max-autotune')\ntorch.save(model._orig_mod.state_dict(), 'model.pt')\n",
            message="`_orig_mod.`",
        ),
        # a strip that feeds no load of the saved model (an export of clean keys beside an optimizer's load)
        Invalid(
            "import torch\nmodel = torch.compile(GPT(cfg))\nopt.load_state_dict(torch.load(opt_path))\n"
            "clean = {k.replace('_orig_mod.', ''): v for k, v in torch.load(old).items()}\n"
            "torch.save(model.state_dict(), path)\n",
            fixed="import torch\nmodel = torch.compile(GPT(cfg))\nopt.load_state_dict(torch.load(opt_path))\n"
            "clean = {k.replace('_orig_mod.', ''): v for k, v in torch.load(old).items()}\n"
            "torch.save(model._orig_mod.state_dict(), path)\n",
        ),
        # nanoGPT: compiled under a flag, then DDP, then `.module`: works whether or not it compiled
        Invalid(
            "import torch\nfrom torch.nn.parallel import DistributedDataParallel as DDP\nmodel = GPT(cfg)\n"
            "if compile:\n    model = torch.compile(model)\nif ddp:\n    model = DDP(model)\n"
            "raw_model = model.module if ddp else model\ncheckpoint = {'model': raw_model.state_dict()}\n",
            fixed="import torch\nfrom torch.nn.parallel import DistributedDataParallel as DDP\nmodel = GPT(cfg)\n"
            "if compile:\n    model = torch.compile(model)\nif ddp:\n    model = DDP(model)\n"
            "raw_model = model.module if ddp else model\n"
            "checkpoint = {'model': getattr(raw_model, \"_orig_mod\", raw_model).state_dict()}\n",
        ),
        # regional compilation by hand: an infix at every block
        Invalid(
            "from accelerate.utils import compile_regions\nfrom safetensors.torch import save_file\n"
            "model = compile_regions(model)\nsave_file(model.state_dict(), 'm.safetensors')\n",
            fixed="from accelerate.utils import compile_regions\nfrom safetensors.torch import save_file\n"
            "model = compile_regions(model)\nsave_file(model._orig_mod.state_dict(), 'm.safetensors')\n",
            message="`._orig_mod.` at every region",
        ),
        # Accelerate with a compiling plugin: save_model, get_state_dict, unwrap_model
        Invalid(
            "from accelerate import Accelerator\nfrom accelerate.utils import TorchDynamoPlugin\n"
            "plugin = TorchDynamoPlugin(backend='inductor')\naccelerator = Accelerator(dynamo_plugin=plugin)\n"
            "model, opt = accelerator.prepare(model, opt)\naccelerator.save_model(model, 'out')\n"
            "sd = accelerator.get_state_dict(model)\nunwrapped = accelerator.unwrap_model(model)\n"
            "accelerator.save(unwrapped.state_dict(), 'm.pt')\n",
            fixed="from accelerate import Accelerator\nfrom accelerate.utils import TorchDynamoPlugin\n"
            "plugin = TorchDynamoPlugin(backend='inductor')\naccelerator = Accelerator(dynamo_plugin=plugin)\n"
            "model, opt = accelerator.prepare(model, opt)\n"
            "accelerator.save_model(accelerator.unwrap_model(model, keep_torch_compile=False), 'out')\n"
            "sd = accelerator.get_state_dict(accelerator.unwrap_model(model, keep_torch_compile=False))\n"
            "unwrapped = accelerator.unwrap_model(model, keep_torch_compile=False)\n"
            "accelerator.save(unwrapped.state_dict(), 'm.pt')\n",
            count=3,
            message="`save_model`",
        ),
        # regional plugin: save_pretrained of the unwrapped model; keep_torch_compile=True spelled out
        Invalid(
            "from accelerate import Accelerator\nfrom accelerate.utils import TorchDynamoPlugin\n"
            "class Trainer:\n    def __init__(self):\n"
            "        self.accelerator = Accelerator(dynamo_plugin=TorchDynamoPlugin(backend=args.backend, use_regional_compilation=True))\n"
            "    def save(self):\n        self.accelerator.unwrap_model(self.model, keep_torch_compile=True).save_pretrained('out')\n",
            fixed="from accelerate import Accelerator\nfrom accelerate.utils import TorchDynamoPlugin\n"
            "class Trainer:\n    def __init__(self):\n"
            "        self.accelerator = Accelerator(dynamo_plugin=TorchDynamoPlugin(backend=args.backend, use_regional_compilation=True))\n"
            "    def save(self):\n        self.accelerator.unwrap_model(self.model, keep_torch_compile=False).save_pretrained('out')\n",
            message="keep_torch_compile=False",
        ),
        # the prepared model's own state dict, with the legacy keyword
        Invalid(
            "import torch\nfrom accelerate import Accelerator\nacc = Accelerator(dynamo_backend='inductor')\nmodel = acc.prepare(model)\n"
            "torch.save(model.state_dict(), 'm.pt')\n",
            fixed="import torch\nfrom accelerate import Accelerator\nacc = Accelerator(dynamo_backend='inductor')\nmodel = acc.prepare(model)\n"
            "torch.save(acc.unwrap_model(model, keep_torch_compile=False).state_dict(), 'm.pt')\n",
        ),
        # saved, and also loaded back into the compiled model: reported, but `_orig_mod.state_dict()`
        # would break that load, so no fix is offered
        Invalid(
            "import copy\nimport torch\nmodel = torch.compile(Net())\nbest = copy.deepcopy(model.state_dict())\n"
            "model.load_state_dict(best)\ntorch.save({'model': best}, 'ckpt.pt')\n",
        ),
        # the named_parameters leak: a helper indexes a compiled model's parameters by plain names
        Invalid(
            "import torch\ndef write_model(model, filename):\n"
            "    params = {name: p.cpu() for name, p in model.named_parameters()}\n"
            "    torch.save(params['lm_head.weight'], filename)\n"
            "model = torch.compile(GPT())\nwrite_model(model, 'gpt2.bin')\n",
            fixed="import torch\ndef write_model(model, filename):\n"
            '    params = {name: p.cpu() for name, p in getattr(model, "_orig_mod", model).named_parameters()}\n'
            "    torch.save(params['lm_head.weight'], filename)\n"
            "model = torch.compile(GPT())\nwrite_model(model, 'gpt2.bin')\n",
            message="KeyError",
        ),
        # through DDP without `.module`: reported, fixed by hand
        Invalid(
            "import torch\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"
            "model = DDP(torch.compile(Net()))\ntorch.save(model.state_dict(), 'm.pt')\n",
            message="`module._orig_mod.`",
        ),
    ]

    script: AccelerateScript
    bindings: Bindings

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        text = ctx.source.text
        self._may_compile = "compile" in text or "dynamo" in text.lower()
        if self._may_compile:  # else the file cannot concern the rule: the script is not even fed for it
            self.script = ctx.semantic.accelerate_script
            self.bindings = self.script.bindings
            self.checkpoints = ctx.semantic.checkpoints
        self._compiles: dict[int, tuple[bool, bool]] = {}  # id(call) -> (regional, conditional)
        self._unwraps: set[int] = set()
        self._sinks: list[tuple[str, ast.Call, Where]] = []
        self._reported: set[int] = set()  # unwrap_model calls already reported
        #: ``X.named_parameters()`` calls: (call, where, statement, enclosing function or None)
        self._named: list[tuple[ast.Call, Where, ast.stmt | None, ast.AST | None]] = []
        #: calls of plain names (``write_model(model, ...)``) by name, to follow a model into a helper
        self._calls_by_name: dict[str, list[tuple[ast.Call, Where]]] = {}
        self._loaded_into: set[str] = set()  # receivers of `X.load_state_dict(...)`, as written (in finish)
        self._prefix_names: set[str] | None = None  # names bound to `'_orig_mod.'` (asked once)

    def visit_Call(self, node: ast.Call) -> None:
        if not self._may_compile:
            return
        func = node.func
        if isinstance(func, ast.Attribute):
            attr = func.attr
            if attr in ("state_dict", "save_pretrained", *ACCELERATOR_SAVES) and not self.ctx.imports.root_is_import(
                func.value
            ):
                self._sinks.append((attr, node, self.bindings.here(node)))
            elif attr == "unwrap_model":
                self._unwraps.add(id(node))
            elif attr in NAMED_METHODS and not node.args:
                statement = next((a for a in reversed(self.ctx.ancestors) if isinstance(a, ast.stmt)), None)
                function = next((a for a in reversed(self.ctx.ancestors) if isinstance(a, FUNCTION_DEFS)), None)
                self._named.append((node, self.bindings.here(node), statement, function))
            if attr in ("compile", "compile_regions") and node.args:
                self._compile_call(node)
        if isinstance(func, ast.Name):
            self._calls_by_name.setdefault(func.id, []).append((node, self.bindings.here(node)))
        if isinstance(func, ast.Name) and node.args and self.ctx.imports.imported(func.id):
            self._compile_call(node)

    def _compile_call(self, node: ast.Call) -> None:
        if isinstance(node.args[0], ast.Starred):
            return
        if callsites.is_torch_compile(self.ctx, node.func):
            regional = False
        elif callsites.is_compile_regions(self.ctx, node.func):
            regional = True
        else:
            return
        conditional = False
        for anc in reversed(self.ctx.ancestors):
            if isinstance(anc, SCOPES):
                break
            conditional = conditional or isinstance(anc, CONDITIONAL)
        self._compiles[id(node)] = (regional, conditional)

    # -- judging ---------------------------------------------------------------------------
    def finish(self) -> None:
        if self._may_compile:
            self._loaded_into = self.checkpoints.loaded_into()
        for kind, call, where in self._sinks:
            if kind in ACCELERATOR_SAVES:
                self._accelerator_save(kind, call, where)
            else:
                self._module_save(kind, call, where)
        if self._may_compile:
            for call, where, statement, function in self._named:
                self._named_parameters(call, where, statement, function)

    # -- parameter names ---------------------------------------------------------------------
    def _named_parameters(
        self, call: ast.Call, where: Where, statement: ast.stmt | None, function: ast.AST | None
    ) -> None:
        """``params = {n: p for n, p in model.named_parameters()}`` then ``params["wte.weight"]``:
        a compiled model names every parameter ``_orig_mod.<name>``, so the lookup raises KeyError."""
        table = _name_table(statement, call)
        if table is None or not _looked_up_by_literal(function or self.ctx.tree, table):
            return
        receiver = method_receiver(call)
        held = self._held(receiver, where)
        via = ""
        if held is None or held.kind != "compiled" or held.wrappers:
            held, via = self._compiled_argument(receiver, function)
        if held is None:
            return
        text = self.ctx.source.segment(receiver)
        message = (
            f"`{text}` is a compiled model{via}: `{_method(call)}()` names start with `_orig_mod.`, so looking "
            f'`{table}` up by the plain model\'s names raises KeyError; use `getattr({text}, "_orig_mod", {text}).{_method(call)}()`'
        )
        edit = self.ctx.source.replace(receiver, f'getattr({text}, "_orig_mod", {text})')
        self.report(
            call, message, fix=self.make_fix("Name the original module's parameters", [edit], Applicability.SAFE)
        )

    def _compiled_argument(self, receiver: ast.expr, function: ast.AST | None) -> tuple[_Held | None, str]:
        """A parameter of ``function`` that a call in this file passes a compiled model."""
        if not isinstance(receiver, ast.Name) or not isinstance(function, FUNCTION_DEFS):
            return None, ""
        params = [a.arg for a in (*function.args.posonlyargs, *function.args.args)]
        if receiver.id not in params:
            return None, ""
        index = params.index(receiver.id)
        for call, where in self._calls_by_name.get(function.name, []):
            given = next((k.value for k in call.keywords if k.arg == receiver.id), None)
            if given is None and index < len(call.args) and not isinstance(call.args[index], ast.Starred):
                given = call.args[index]
            held = self._held(given, where) if given is not None else None
            if held is not None and held.kind == "compiled" and not held.wrappers:
                return held, f" (passed to `{function.name}` on line {call.lineno})"
        return None, ""

    def _module_save(self, kind: str, call: ast.Call, where: Where) -> None:
        receiver = method_receiver(call)
        held = self._held(receiver, where)
        if held is None:
            return
        if held.kind == "unwrap":
            self._judge_unwrap(held.call, held.where, regional_only=kind == "save_pretrained")
        elif held.kind == "compiled":
            regional = self._compiles[id(held.call)][0]
            if kind == "state_dict" and (
                self._round_trip(call, receiver)
                or self._stripped_on_load(held, regional, receiver)
                or self._stripped_at_read(call, held, regional)
            ):
                return
            if kind == "state_dict" or regional:
                self._report_compiled(call, receiver, held, regional)
        elif held.kind == "prepared" and held.wrappers == 0 and self._may_be_model(held):
            state = self.script.compile_state(self.script.accelerator_of(method_receiver(held.call), held.where))
            if state.compiles and (kind == "state_dict" or state.regional is not False):
                self._report_prepared(call, receiver, where, kind)

    def _stripped_on_load(self, held: _Held, regional: bool, receiver: ast.expr) -> bool:
        """The file's own load strips a leading ``_orig_mod.`` from the keys it puts back into
        this model (nanoGPT's resume, :mod:`~regcomp_lint.analysis.prefix_strips`): its
        checkpoints carry the prefix on purpose. The load must be into the saved model (as saved,
        or as handed to ``torch.compile``) and the strip must feed that load (not an export of
        clean keys beside it). Not for a regional compile or through DDP, whose keys keep
        ``._orig_mod.`` inside or behind ``module.``."""
        if regional or held.wrappers or not self._loaded_into:
            return False
        segment = self.ctx.source.segment
        models = {segment(receiver)} | ({segment(held.call.args[0])} if held.call.args else set())
        for load in self.checkpoints.loads:
            if _plain(segment(load.receiver)) not in {_plain(m) for m in models}:
                continue
            argument = load.call.args[0] if load.call.args else keyword_value(load.call, "state_dict")
            scope = next((f for f in reversed(load.where.functions) if isinstance(f, FUNCTION_DEFS)), self.ctx.tree)
            if argument is not None and strips_into(scope, argument, self._names_of_prefix()):
                return True
        return False

    def _stripped_at_read(self, call: ast.Call, held: _Held, regional: bool) -> bool:
        """The keys of ``call`` lose ``_orig_mod.`` as they are read (``{k.removeprefix(p): v for
        k, v in model.state_dict().items()}``): nothing prefixed goes on. Not for a regional
        compile or through DDP (see :meth:`_stripped_on_load`)."""
        if regional or held.wrappers:
            return False
        return strips_read(self.ctx.tree, call, self._names_of_prefix())

    def _names_of_prefix(self) -> set[str]:
        if self._prefix_names is None:
            self._prefix_names = prefix_names(self.ctx.tree)
        return self._prefix_names

    def _round_trip(self, call: ast.Call, receiver: ast.expr) -> bool:
        """An in-memory copy of the compiled model's weights that goes back into that same
        model (``best = copy.deepcopy(model.state_dict())`` ... ``model.load_state_dict(best)``):
        the keys match, nothing saves it (:mod:`~regcomp_lint.analysis.checkpoints`), and
        ``_orig_mod.state_dict()`` would break the load."""
        if self.ctx.source.segment(receiver) not in self._loaded_into:
            return False
        read = self.checkpoints.read_at(call)
        if read is None or not isinstance(read.statement, ast.Assign) or self.checkpoints.saves_of(read):
            return False
        return any(isinstance(n, ast.Name) for t in read.statement.targets for n in walk(t))

    def _accelerator_save(self, kind: str, call: ast.Call, where: Where) -> None:
        model = call.args[0] if call.args else keyword_value(call, "model")
        if model is None or isinstance(model, ast.Starred):
            return
        held = self._held(model, where)
        if held is not None and held.kind == "unwrap":
            self._judge_unwrap(held.call, held.where, regional_only=False)
            return
        ref = self.script.accelerator_of(method_receiver(call), where)
        if not (self.script.compile_state(ref).compiles or (held is not None and held.kind == "compiled")):
            return
        accelerator = self.ctx.source.segment(method_receiver(call))
        message = (
            f"`{kind}` keeps the compile wrapper, so the keys get `_orig_mod`: pass "
            f"`{accelerator}.unwrap_model(model, keep_torch_compile=False)`"
        )
        text = self.ctx.source.segment(model)
        edit = self.ctx.source.replace(model, f"{accelerator}.unwrap_model({text}, {KEEP}=False)")
        self.report(
            call, message, fix=self.make_fix("Save the unwrapped, uncompiled model", [edit], Applicability.UNSAFE)
        )

    def _judge_unwrap(self, call: ast.Call, where: Where, regional_only: bool) -> None:
        if id(call) in self._reported:
            return
        keep = keyword(call, KEEP)
        if keep is not None and not (isinstance(keep.value, ast.Constant) and keep.value.value is True):
            return  # False, or decided at run time
        if keep is None and (has_star_kwargs(call) or len(call.args) > 2):
            return
        state = self.script.compile_state(self.script.accelerator_of(method_receiver(call), where))
        model = self._held(call.args[0], where) if call.args else None
        hand_compiled = model is not None and model.kind == "compiled"
        if not (state.compiles or hand_compiled):
            return
        if (
            regional_only
            and state.regional is False
            and not (hand_compiled and model is not None and self._compiles[id(model.call)][0])
        ):
            return
        self._reported.add(id(call))
        if keep is not None:
            edits = [self.ctx.source.replace(keep.value, "False")]
        else:
            edits = append_keyword(self.ctx, call, f"{KEEP}=False")
        message = "`unwrap_model` keeps the compile wrapper by default, so the saved keys get `_orig_mod`: pass `keep_torch_compile=False`"
        self.report(call, message, fix=self.make_fix("Pass `keep_torch_compile=False`", edits, Applicability.SAFE))

    def _report_compiled(self, call: ast.Call, receiver: ast.expr, held: _Held, regional: bool) -> None:
        text = self.ctx.source.segment(receiver)
        how = (
            "was compiled with `compile_regions`: its keys carry `._orig_mod.` at every region"
            if regional
            else "is a `torch.compile` wrapper: its keys start with `_orig_mod.`"
        )
        if held.wrappers:
            message = f"`{text}` wraps a compiled model: its keys start with `module._orig_mod.`; save the inner model's `_orig_mod`"
            self.report(call, message)
            return
        certain = held.certain and not self._compiles[id(held.call)][1]
        if certain:
            fixed = f"{text}._orig_mod"
        elif binding_key(receiver) is not None or _is_name_chain(receiver):
            fixed = f'getattr({text}, "_orig_mod", {text})'
        else:
            fixed = None
        message = f"`{text}` {how}; use `{fixed or text + '._orig_mod'}.{_method(call)}(...)`"
        fix = None
        if text in self._loaded_into:
            fixed = None  # the file loads a state dict back into the compiled model: unprefixed keys would fail there
        if fixed is not None:
            edit = self.ctx.source.replace(receiver, fixed)
            fix = self.make_fix("Take the state dict of the original module", [edit], Applicability.UNSAFE)
        self.report(call, message, fix=fix)

    def _report_prepared(self, call: ast.Call, receiver: ast.expr, where: Where, kind: str) -> None:
        name = self.script.accelerator_name(where)
        spelled = name.text if name else "accelerator"
        text = self.ctx.source.segment(receiver)
        fixed = f"{spelled}.unwrap_model({text}, {KEEP}=False)"
        message = f"`{text}` is compiled by the accelerator's dynamo plugin, so its keys get `_orig_mod`: use `{fixed}.{kind}(...)`"
        fix = None
        if name is not None:
            fix = self.make_fix(
                "Save the unwrapped, uncompiled model", [self.ctx.source.replace(receiver, fixed)], Applicability.UNSAFE
            )
        self.report(call, message, fix=fix)

    def _may_be_model(self, held: _Held) -> bool:
        """A prepared object is judged as a model unless it is built as an optimizer, loader or
        scheduler, or (built out of sight) named like one: ``opt.state_dict()`` is no model's."""
        if _method(held.call) == "prepare_model":
            return True
        kind = self._object_kind(held.prepared, held.where)
        if kind is not None:
            return kind is Kind.MODEL
        name = (binding_key(held.prepared) or "") if held.prepared is not None else ""
        return not any(part in name.lower() for part in NOT_MODEL_NAMES)

    def _object_kind(self, expr: ast.AST | None, where: Where, depth: int = 0) -> Kind | None:
        if expr is None or depth > MAX_DEPTH:
            return None
        if isinstance(expr, ast.Call):
            func = expr.func
            if isinstance(func, ast.Attribute) and func.attr in SAME_MODULE_METHODS:
                return self._object_kind(func.value, where, depth + 1)
            return constructor_kind(self.ctx, expr, self.bindings.classes)
        bound = self.bindings.lookup(expr, where)
        if bound is None or bound.index is not None or bound.value is None:
            return None
        return self._object_kind(bound.value, bound.where, depth + 1)

    # -- what an expression holds ------------------------------------------------------------
    def _held(self, expr: ast.AST | None, where: Where, depth: int = 0) -> _Held | None:
        if expr is None or depth > MAX_DEPTH:
            return None
        if isinstance(expr, ast.Call):
            return self._held_call(expr, where, depth)
        if isinstance(expr, ast.IfExp):
            found = self._held(expr.body, where, depth + 1) or self._held(expr.orelse, where, depth + 1)
            return replace(found, certain=False) if found else None
        if isinstance(expr, ast.Attribute) and expr.attr == "module" and binding_key(expr) is None:
            inner = self._held(expr.value, where, depth + 1)
            return replace(inner, wrappers=inner.wrappers - 1) if inner is not None and inner.wrappers > 0 else None
        for bound in self.bindings.candidates(expr, where):
            value = bound.value
            if value is None or isinstance(value, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                continue
            if bound.index is not None:
                if self.script.is_prepare_result(value) and not any(isinstance(a, ast.Starred) for a in value.args):
                    argument = value.args[bound.index] if bound.index < len(value.args) else None
                    return _Held("prepared", value, bound.where, prepared=argument)
                continue
            found = self._held(value, bound.where, depth + 1)
            if found is not None:
                return found
        return None

    def _held_call(self, call: ast.Call, where: Where, depth: int) -> _Held | None:
        if id(call) in self._compiles:
            return _Held("compiled", call, where)
        func = call.func
        if isinstance(func, ast.Attribute):
            if id(call) in self._unwraps:
                return _Held("unwrap", call, where)
            if func.attr in PREPARE_METHODS:
                return _Held("prepared", call, where, prepared=call.args[0]) if len(call.args) == 1 else None
            if func.attr in SAME_MODULE_METHODS:
                return self._held(func.value, where, depth + 1)
        if call.args and self.ctx.resolves_to(func, *DATA_PARALLEL):
            inner = self._held(call.args[0], where, depth + 1)
            return replace(inner, wrappers=inner.wrappers + 1) if inner is not None else None
        return None


FUNCTION_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)
#: Methods whose names carry the ``_orig_mod.`` prefix on a compiled model.
NAMED_METHODS = ("named_parameters", "named_buffers")


def _name_table(statement: ast.stmt | None, call: ast.Call) -> str | None:
    """The name bound to a dict keyed by the call's names: ``t = dict(m.named_parameters())`` or
    ``t = {n: p for n, p in m.named_parameters()}``."""
    if not isinstance(statement, ast.Assign) or len(statement.targets) != 1:
        return None
    target, value = statement.targets[0], statement.value
    if not isinstance(target, ast.Name):
        return None
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "dict":
        return target.id if value.args and value.args[0] is call else None
    if isinstance(value, ast.DictComp) and len(value.generators) == 1 and value.generators[0].iter is call:
        key, loop = value.key, value.generators[0].target
        if isinstance(key, ast.Name) and isinstance(loop, ast.Tuple) and loop.elts:
            first = loop.elts[0]
            return target.id if isinstance(first, ast.Name) and first.id == key.id else None
    return None


def _looked_up_by_literal(scope: ast.AST, table: str) -> bool:
    """``table["transformer.wte.weight"]`` somewhere in ``scope``: a name without the prefix."""
    return any(
        isinstance(node, ast.Subscript)
        and isinstance(node.value, ast.Name)
        and node.value.id == table
        and isinstance(node.slice, ast.Constant)
        and isinstance(node.slice.value, str)
        and not node.slice.value.startswith("_orig_mod")
        for node in walk(scope)
    )


def _plain(text: str) -> str:
    """``model`` of ``model._orig_mod`` / ``model.module``: the model a load or save reaches."""
    for suffix in ("._orig_mod", ".module"):
        text = text.removesuffix(suffix)
    return text


def _is_name_chain(node: ast.AST) -> bool:
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name)


def _method(call: ast.Call) -> str:
    """``method`` of ``obj.method(...)``: the saves, unwraps and prepares kept here are method calls."""
    func = call.func
    assert isinstance(func, ast.Attribute)
    return func.attr
