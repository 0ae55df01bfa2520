"""RC407 attribute-through-wrapper."""

from __future__ import annotations

import ast

from regcomp_lint.analysis.bindings import Where
from regcomp_lint.checks.base import Invalid, Rule
from regcomp_lint.diagnostics import Applicability, Severity
from regcomp_lint.knowledge.torch_api import DATA_PARALLEL_INSTANCE_API, MODULE_API

#: The builtins that probe an attribute by name: through DDP they answer False / the default.
_PROBES = ("hasattr", "getattr")
#: What the other objects ``prepare`` returns have (optimizer, scheduler, data loader): a read of
#: one of these is not a model's, and needs no question about what was prepared.
_OTHER_PREPARED_API = frozenset(
    {"step", "param_groups", "add_param_group", "get_last_lr", "get_lr", "last_epoch", "set_epoch", "dataset",
     "sampler", "batch_size", "batch_sampler"}
)  # fmt: skip


class AttributeThroughWrapper(Rule):
    """## What it does
    Reports an attribute of the model itself -- a method such as `generate` or a custom
    `configure_optimizers`, a field such as `config`, a submodule such as `transformer` --
    read through the object `accelerator.prepare(...)` returned for a model (one the file
    builds as a model: a `torch.nn.Module` subclass, a `torch.nn` layer, a transformers or
    diffusers `from_pretrained`). `nn.Module`'s own API (`eval()`, `parameters()`,
    `state_dict()`, ...), what `DistributedDataParallel` has itself (`module`, `no_sync`,
    `device`), what a prepared optimizer, scheduler or data loader has (`step`, `param_groups`,
    `set_epoch`, `dataset`...) and private names are not reported. A probe of such an attribute
    by name, `hasattr(model, "config")` or `getattr(model, "config", None)`, is reported too:
    through DDP it answers False (the default), so the script silently takes its other branch
    (measured on 2 gloo processes: False on both, True on one process).

    ## Why is this bad
    On several processes `prepare` wraps the model in `DistributedDataParallel`, and with a
    dynamo plugin also in `torch.compile`'s `OptimizedModule`. The compile wrapper forwards
    unknown attributes to what it wraps, but DDP does not (FSDP's and DeepSpeed's wrappers do):
    `model.generate(...)` works on one process and fails on a multi-GPU launch with
    `AttributeError: 'DistributedDataParallel' object has no attribute 'generate'`, and an
    attribute set on the wrapper never reaches the model. Checked with torch 2.13 and
    accelerate 1.15 on 2 CPU processes (gloo): `prepare(model)` of a model with a `generate`
    method and a `config` field, then `model.generate` and `model.config`, raised that error;
    `model.device` is DDP's own and works.

    When the accelerator compiles, the fix passes `keep_torch_compile=False`: accelerate's
    default `unwrap_model(model)` of a compiled model puts the bare module back into the
    compiled wrapper it returns -- the prepared model itself -- so the prepared model loses its
    DDP layer from then on (measured: `model._orig_mod` is the `DistributedDataParallel` before,
    the model's own class after; `no_sync` is gone with it).

    ## Example
    ```python
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    ...
    tokens = model.generate(prompt, max_new_tokens=50)
    vocab = model.config.vocab_size
    ```

    ## Use instead
    ```python
    tokens = accelerator.unwrap_model(model).generate(prompt, max_new_tokens=50)
    vocab = accelerator.unwrap_model(model).config.vocab_size
    # with a dynamo plugin that compiles: accelerator.unwrap_model(model, keep_torch_compile=False)
    ```

    ## Fix safety
    Reading a field through `accelerator.unwrap_model(model)` is safe: the same object, found
    on every process. Calling a method through it is unsafe: the call then bypasses the
    wrapper, which is right for generation and inspection, but a method whose result is
    trained on (a custom `compute_loss`) would then skip DDP's gradient synchronisation; call
    such a method inside the model's `forward` instead. Offered only where exactly one
    accelerator name is visible.

    ## References
    - [Accelerate: `unwrap_model`](https://huggingface.co/docs/accelerate/package_reference/accelerator#accelerate.Accelerator.unwrap_model)
    - [DistributedDataParallel](https://docs.pytorch.org/docs/stable/generated/torch.nn.parallel.DistributedDataParallel.html)
    """

    code = "RC407"
    name = "attribute-through-wrapper"
    #: error: the script stops with an AttributeError as soon as it runs on several processes
    severity = Severity.ERROR
    message = "an attribute of the model read through the object `prepare` returned: unwrap it first"
    triggers = ("prepare",)
    # ``finish`` judges nothing unless the file builds an ``Accelerator``, which it names
    # (``Accelerator(...)``, ``accelerate.Accelerator(...)`` or its import): a file without the
    # word is not walked for this rule (most files that say ``prepare`` are not scripts).
    required = ("Accelerator",)
    fix_applicability = Applicability.UNSAFE

    valid = [
        # nn.Module's API and DDP's own attributes work through the wrapper
        "from accelerate import Accelerator\nimport torch\nacc = Accelerator()\nmodel = torch.nn.Linear(2, 2)\n"
        "model = acc.prepare(model)\nmodel.eval()\nn = sum(p.numel() for p in model.parameters())\n"
        "d = model.device\nwith model.no_sync():\n    pass\n",
        # unwrapped first
        "from accelerate import Accelerator\nfrom transformers import AutoModelForCausalLM\nacc = Accelerator()\n"
        "model = AutoModelForCausalLM.from_pretrained('gpt2')\nmodel = acc.prepare(model)\n"
        "out = acc.unwrap_model(model).generate(x)\n",
        # not prepared, or not a model
        "from accelerate import Accelerator\nimport torch\nacc = Accelerator()\nmodel = torch.nn.Linear(2, 2)\n"
        "opt = torch.optim.SGD(model.parameters())\nmodel.reset_parameters()\nopt = acc.prepare(opt)\n"
        "lr = opt.param_groups[0]['lr']\n",
        # something built out of sight: its kind is not known
        "from accelerate import Accelerator\nacc = Accelerator()\nthing = acc.prepare(make_thing())\nthing.generate()\n",
        # probing what DDP has itself
        "from accelerate import Accelerator\nimport torch\nacc = Accelerator()\nmodel = acc.prepare(torch.nn.Linear(2, 2))\n"
        "inner = model.module if hasattr(model, 'module') else model\n",
    ]
    invalid = [
        Invalid(
            "from accelerate import Accelerator\nfrom transformers import AutoModelForCausalLM\nacc = Accelerator()\n"
            "model = AutoModelForCausalLM.from_pretrained('gpt2')\nmodel, opt = acc.prepare(model, opt)\n"
            "out = model.generate(x, max_new_tokens=5)\nvocab = model.config.vocab_size\n",
            fixed="from accelerate import Accelerator\nfrom transformers import AutoModelForCausalLM\nacc = Accelerator()\n"
            "model = AutoModelForCausalLM.from_pretrained('gpt2')\nmodel, opt = acc.prepare(model, opt)\n"
            "out = acc.unwrap_model(model).generate(x, max_new_tokens=5)\n"
            "vocab = acc.unwrap_model(model).config.vocab_size\n",
            count=2,
            message="`model.generate`",
        ),
        # a model class of the file's own, kept on a trainer
        Invalid(
            "import torch\nfrom accelerate import Accelerator\nclass Net(torch.nn.Module):\n"
            "    def sample(self, n):\n        return torch.zeros(n)\n"
            "class Trainer:\n    def __init__(self):\n        self.accelerator = Accelerator()\n"
            "        self.model = self.accelerator.prepare(Net())\n"
            "    def evaluate(self):\n        return self.model.sample(4)\n",
            fixed="import torch\nfrom accelerate import Accelerator\nclass Net(torch.nn.Module):\n"
            "    def sample(self, n):\n        return torch.zeros(n)\n"
            "class Trainer:\n    def __init__(self):\n        self.accelerator = Accelerator()\n"
            "        self.model = self.accelerator.prepare(Net())\n"
            "    def evaluate(self):\n        return self.accelerator.unwrap_model(self.model).sample(4)\n",
        ),
        # a compiling plugin: the unwrap must not rewire the prepared model; a class of another
        # package, known as a model by what the script does with it
        Invalid(
            "from accelerate import Accelerator\nfrom accelerate.utils import TorchDynamoPlugin\n"
            "from palm_rlhf_pytorch import PaLM\n"
            "accelerator = Accelerator(dynamo_plugin=TorchDynamoPlugin(backend='inductor'))\n"
            "model, optim = accelerator.prepare(PaLM(num_tokens=256), optim)\nmodel.eval()\n"
            "sample = model.generate(512, prime)\n",
            fixed="from accelerate import Accelerator\nfrom accelerate.utils import TorchDynamoPlugin\n"
            "from palm_rlhf_pytorch import PaLM\n"
            "accelerator = Accelerator(dynamo_plugin=TorchDynamoPlugin(backend='inductor'))\n"
            "model, optim = accelerator.prepare(PaLM(num_tokens=256), optim)\nmodel.eval()\n"
            "sample = accelerator.unwrap_model(model, keep_torch_compile=False).generate(512, prime)\n",
        ),
        # a probe by name: through DDP it answers False, and the script takes its other branch
        Invalid(
            "from accelerate import Accelerator\nfrom transformers import AutoModelForCausalLM\nacc = Accelerator()\n"
            "model = acc.prepare(AutoModelForCausalLM.from_pretrained('gpt2'))\n"
            "if hasattr(model, 'config'):\n    print(getattr(model, 'config', None))\n",
            fixed="from accelerate import Accelerator\nfrom transformers import AutoModelForCausalLM\nacc = Accelerator()\n"
            "model = acc.prepare(AutoModelForCausalLM.from_pretrained('gpt2'))\n"
            "if hasattr(acc.unwrap_model(model), 'config'):\n    print(getattr(acc.unwrap_model(model), 'config', None))\n",
            count=2,
            message="`hasattr(model, 'config')` probes the wrapper",
        ),
    ]

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.script = ctx.semantic.accelerate_script
        self.bindings = self.script.bindings
        self._reads: list[tuple[ast.Attribute, Where, bool]] = []  # (read, where, called)
        self._probes: list[tuple[ast.Call, str, Where]] = []  # hasattr(model, "config"), the name, where

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if not (isinstance(func, ast.Name) and func.id in _PROBES and len(node.args) >= 2):
            return
        name = node.args[1]
        if not (isinstance(name, ast.Constant) and isinstance(name.value, str)) or not self._own(name.value):
            return
        if isinstance(node.args[0], (ast.Name, ast.Attribute)):
            self._probes.append((node, name.value, self.bindings.here(node)))

    @staticmethod
    def _own(attr: str) -> bool:
        """An attribute of the model itself, not one the wrapper or the other prepared objects have."""
        return (
            not attr.startswith("_")
            and attr not in MODULE_API
            and attr not in DATA_PARALLEL_INSTANCE_API
            and attr not in _OTHER_PREPARED_API
        )

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if self._own(node.attr) and isinstance(node.value, (ast.Name, ast.Attribute)):
            parent = self.ctx.parent()
            called = isinstance(parent, ast.Call) and parent.func is node
            self._reads.append((node, self.bindings.here(node), called))

    def finish(self) -> None:
        if not self.script.builds_accelerator:
            return
        for node, where, called in self._reads:
            if self._prepared_model(node.value, where):
                self._report(node, where, called)
        for call, attr, where in self._probes:
            if self._prepared_model(call.args[0], where):
                self._report_probe(call, attr, where)

    def _unwrapped(self, receiver: str, where: Where) -> tuple[str, bool]:
        """``acc.unwrap_model(model)`` as this file spells it (``keep_torch_compile=False`` when
        the accelerator compiles), and whether the accelerator's name is known (a fix is offered)."""
        name = self.script.accelerator_name(where)
        spelled = name.text if name else "accelerator"
        keep = ", keep_torch_compile=False" if self.script.compile_state(None).compiles else ""
        return f"{spelled}.unwrap_model({receiver}{keep})", name is not None

    def _report_probe(self, call: ast.Call, attr: str, where: Where) -> None:
        src = self.ctx.source
        receiver = src.segment(call.args[0])
        unwrapped, known = self._unwrapped(receiver, where)
        probe = call.func.id  # type: ignore[attr-defined]
        answer = "False" if probe == "hasattr" else "its default"
        message = (
            f"`{probe}({receiver}, {attr!r})` probes the wrapper `prepare` returns: on several processes it is a "
            f"DistributedDataParallel, which has no `{attr}`, so the probe answers {answer}; probe `{unwrapped}`"
        )
        fix = None
        if known:
            fix = self.make_fix(f"Probe `{unwrapped}`", [src.replace(call.args[0], unwrapped)], Applicability.SAFE)
        self.report(call, message, fix=fix)

    def _report(self, node: ast.Attribute, where: Where, called: bool) -> None:
        src = self.ctx.source
        receiver = src.segment(node.value)
        unwrapped, known = self._unwrapped(receiver, where)
        message = (
            f"`{receiver}.{node.attr}` is read through the wrapper `prepare` returns: on several processes it is a "
            f"DistributedDataParallel, which has no `{node.attr}`; use `{unwrapped}.{node.attr}`"
        )
        fix = None
        if known:
            fix = self.make_fix(
                f"Read `{node.attr}` from `{unwrapped}`",
                [src.replace(node.value, unwrapped)],
                Applicability.UNSAFE if called else Applicability.SAFE,
            )
        self.report(node, message, fix=fix)

    def _prepared_model(self, expr: ast.expr, where: Where) -> bool:
        """``expr`` holds what a ``prepare`` call returned for a model: one the file builds as a
        model, or one it uses as a module (``model.train()``, called in the training loop) when
        its class comes from another package (lucidrains' ``PaLM``)."""
        for bound in self.bindings.candidates(expr, where)[:1]:
            value = bound.value
            if not self.script.is_prepare_result(value) or any(isinstance(a, ast.Starred) for a in value.args):
                return False
            if bound.index is None and len(value.args) != 1:
                return False
            return self.ctx.semantic.training_roles.is_model(expr, where)
        return False
