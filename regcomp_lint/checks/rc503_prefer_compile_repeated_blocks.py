"""RC503 prefer-compile-repeated-blocks."""

from __future__ import annotations

import ast

from regcomp_lint.analysis.callsites import is_torch_compile
from regcomp_lint.checks.base import Invalid, Rule
from regcomp_lint.diagnostics import Applicability, Edit, Severity
from regcomp_lint.knowledge.diffusers_blocks import (
    COMPILE_REPEATED_BLOCKS,
    COMPILE_REPEATED_BLOCKS_SINCE,
    DIFFUSERS_DENOISERS,
    DIFFUSERS_PIPELINE_SUFFIX,
    repeated_blocks_of,
)
from regcomp_lint.knowledge.model_classes import DIFFUSERS, FACTORY_METHODS


class PreferCompileRepeatedBlocks(Rule):
    """## What it does
    Reports a whole-model compile of a diffusers denoiser: `torch.compile(pipe.transformer)`,
    `pipe.unet.compile()`, or `torch.compile(model)` where `model` came from
    `FluxTransformer2DModel.from_pretrained(...)` (any of the 48 model classes that set
    `_repeated_blocks` in diffusers 0.42.1: Flux 1-3, Wan and its variants, QwenImage,
    HunyuanVideo, LTX, Chroma, `UNet2DConditionModel` and more), where `pipe` came from a
    diffusers `*Pipeline.from_pretrained(...)`.

    diffusers compiles regions itself (since diffusers 0.35.0):
    `ModelMixin.compile_repeated_blocks(**kwargs)` calls `.compile(**kwargs)` on every
    submodule whose class the model lists in `_repeated_blocks`, wherever it sits (a UNet's
    transformer blocks are spread over its down, mid and up blocks).

    ## Why is this bad
    A whole-model compile of a DiT or UNet traces every block into one graph: diffusers
    reports regional compilation giving the same runtime speed-up with a compile time 8-10×
    shorter, which is most of the cold start of an inference server or a short fine-tune.

    ## Example
    ```python
    pipe = FluxPipeline.from_pretrained("black-forest-labs/FLUX.1-dev")
    pipe.transformer = torch.compile(pipe.transformer, fullgraph=True)
    ```

    ## Use instead
    ```python
    pipe.transformer.compile_repeated_blocks(fullgraph=True)
    ```

    ## Fix safety
    Unsafe: the call is rewritten to `compile_repeated_blocks` with the same keywords.
    `compile_repeated_blocks` raises `ValueError` for a model class whose `_repeated_blocks`
    is empty (a pipeline whose denoiser lacks it) and does not exist before diffusers 0.35.0,
    and what is compiled changes; review it.

    ## References
    - [diffusers: regional compilation](https://huggingface.co/docs/diffusers/optimization/fp16#regional-compilation)
    """

    code = "RC503"
    name = "prefer-compile-repeated-blocks"
    message = "whole-model compile of a diffusers model: use `compile_repeated_blocks()`"
    triggers = ("diffusers",)
    required = ("compile",)
    fix_applicability = Applicability.UNSAFE
    #: advice, like RC501: the whole compile works, the repeated-blocks one starts faster
    severity = Severity.INFO

    valid = [
        "import torch\nfrom diffusers import FluxPipeline\npipe = FluxPipeline.from_pretrained('x')\n"
        "pipe.transformer.compile_repeated_blocks(fullgraph=True)\n",
        "import torch\nfrom diffusers import FluxPipeline\npipe = FluxPipeline.from_pretrained('x')\n"
        "pipe.vae.decode = torch.compile(pipe.vae.decode)\n",
        "import torch\nfrom diffusers import AutoencoderKL\nvae = AutoencoderKL.from_pretrained('x')\nvae = torch.compile(vae)\n",
        "import torch\nfrom diffusers import FluxPipeline\npipe = load()\npipe.transformer = torch.compile(pipe.transformer)\n",
    ]
    invalid = [
        Invalid(
            "import torch\nfrom diffusers import FluxPipeline\npipe = FluxPipeline.from_pretrained('x')\n"
            "pipe.transformer = torch.compile(pipe.transformer, fullgraph=True)\n",
            fixed="import torch\nfrom diffusers import FluxPipeline\npipe = FluxPipeline.from_pretrained('x')\n"
            "pipe.transformer.compile_repeated_blocks(fullgraph=True)\n",
        ),
        Invalid(
            "import diffusers\npipe = diffusers.StableDiffusionXLPipeline.from_pretrained('x').to('cuda')\n"
            "pipe.unet.compile(mode='max-autotune')\n",
            fixed="import diffusers\npipe = diffusers.StableDiffusionXLPipeline.from_pretrained('x').to('cuda')\n"
            "pipe.unet.compile_repeated_blocks(mode='max-autotune')\n",
        ),
        Invalid(
            "import torch\nfrom diffusers import WanTransformer3DModel\n"
            "dit = WanTransformer3DModel.from_pretrained('x', subfolder='transformer')\ndit = torch.compile(dit)\n",
            fixed="import torch\nfrom diffusers import WanTransformer3DModel\n"
            "dit = WanTransformer3DModel.from_pretrained('x', subfolder='transformer')\ndit.compile_repeated_blocks()\n",
            message="WanTransformerBlock",
        ),
    ]

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._values: dict[str, ast.expr] = {}  # last value assigned to a plain name

    def visit_Assign(self, node: ast.Assign) -> None:
        if isinstance(node.value, ast.Call) and is_torch_compile(self.ctx, node.value.func):
            self._torch_compile(node.value, node)
        elif len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            self._values[node.targets[0].id] = node.value

    def visit_Expr(self, node: ast.Expr) -> None:
        call = node.value
        if not isinstance(call, ast.Call) or call.args:
            return
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr == "compile":
            what = self._diffusers_model(func.value)
            if what is not None:
                start = self.ctx.source.end(func.value)
                edit = Edit(f".{COMPILE_REPEATED_BLOCKS}", start, self.ctx.source.end(func))
                self.report(call, self._message(what), fix=self.make_fix("Compile the repeated blocks", [edit]))

    def _torch_compile(self, call: ast.Call, stmt: ast.Assign) -> None:
        if len(call.args) != 1:
            return
        what = self._diffusers_model(call.args[0])
        if what is None:
            return
        fix = None
        target = stmt.targets[0] if len(stmt.targets) == 1 else None
        if target is not None and ast.unparse(target) == ast.unparse(call.args[0]):
            source = self.ctx.source.text
            model = ast.get_source_segment(source, call.args[0])
            keywords = [ast.get_source_segment(source, kw) for kw in call.keywords]
            if model is not None and all(keywords):
                text = f"{model}.{COMPILE_REPEATED_BLOCKS}({', '.join(k for k in keywords if k)})"
                edit = Edit(text, self.ctx.source.start(stmt), self.ctx.source.end(stmt))
                fix = self.make_fix("Compile the repeated blocks", [edit])
        self.report(call, self._message(what), fix=fix)

    def _message(self, what: str) -> str:
        return (
            f"whole-model compile of {what}: `.{COMPILE_REPEATED_BLOCKS}()` (diffusers >= "
            f"{COMPILE_REPEATED_BLOCKS_SINCE}) compiles each repeated block once "
            "and reuses it (same speed, a fraction of the compile time)"
        )

    def _diffusers_model(self, expr: ast.expr) -> str | None:
        """What the expression holds when it is a diffusers model with repeated blocks."""
        if isinstance(expr, ast.Attribute) and expr.attr in DIFFUSERS_DENOISERS:
            pipeline = self._built_by(expr.value)
            if pipeline is not None and pipeline.endswith(DIFFUSERS_PIPELINE_SUFFIX):
                return f"the `{pipeline}` {expr.attr}"
            return None
        name = self._built_by(expr)
        blocks = repeated_blocks_of(name) if name else ()
        if blocks:
            return f"`{name}` (repeated {', '.join(f'`{b}`' for b in blocks)})"
        return None

    def _built_by(self, expr: ast.expr) -> str | None:
        """The diffusers class whose ``from_pretrained`` built the value of ``expr`` (a name)."""
        value = self._values.get(expr.id) if isinstance(expr, ast.Name) else None
        while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute):
            if value.func.attr in FACTORY_METHODS:
                qualname = self.ctx.qualname(value.func.value) or ""
                if qualname.startswith(DIFFUSERS + ".") and self.ctx.imports.root_is_import(value.func.value):
                    return qualname.rsplit(".", 1)[-1]
                return None
            value = value.func.value  # .to("cuda"), .eval() ...
        return None
