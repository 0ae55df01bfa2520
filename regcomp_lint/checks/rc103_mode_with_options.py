"""RC103 mode-with-options."""

from __future__ import annotations

import ast

from regcomp_lint.analysis.callsites import COMPILE_SITE_WORDS, Site, compile_config_site, plugin_argument
from regcomp_lint.analysis.file_context import FileContext, keyword, keyword_value, string_literal
from regcomp_lint.checks.base import Invalid, Rule
from regcomp_lint.checks.text_edits import keyword_span_with_comma
from regcomp_lint.diagnostics import Applicability, Edit, Location, Severity
from regcomp_lint.knowledge.modes import MODE_OPTIONS, PLUGIN_DEFAULT_MODE

TORCH_SITES = (Site.TORCH_COMPILE, Site.MODULE_COMPILE, Site.COMPILE_REGIONS)


def is_dict_literal(ctx: FileContext, node: ast.expr) -> bool:
    """``{...}``, a dict comprehension or ``dict(...)``: a value that is surely not None."""
    if isinstance(node, (ast.Dict, ast.DictComp)):
        return True
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "dict"
        and not ctx.imports.imported("dict")
    )


def merge_mode_into_options(
    ctx: FileContext, call: ast.Call, mode_kw: ast.keyword, options: ast.expr
) -> list[Edit] | None:
    """Edits that drop ``mode=`` and add the settings it stands for to an ``options={...}`` literal.

    ``torch.compile(mode=m)`` means ``options=torch._inductor.list_mode_options(m)``, so this
    keeps the intent; keys already in the dict win. None when the rewrite is not mechanical.
    """
    mode = string_literal(mode_kw.value)
    if mode not in MODE_OPTIONS or not isinstance(options, ast.Dict):
        return None
    present = {string_literal(k) for k in options.keys if k is not None}
    missing = {k: v for k, v in MODE_OPTIONS[mode].items() if k not in present}
    start, end = keyword_span_with_comma(ctx, call, mode_kw)
    edits = [Edit("", start, end)]
    if missing:
        entries = ", ".join(f"{k!r}: {v!r}" for k, v in missing.items())
        if options.values:
            edits.append(ctx.source.insert_at(ctx.source.end(options.values[-1]), f", {entries}"))
        else:
            opening = ctx.source.start(options)
            edits.append(ctx.source.insert_at(Location(opening.row, opening.column + 1), entries))
    return edits


class ModeWithOptions(Rule):
    """## What it does
    Reports a call that passes both `mode=` and `options=` to `torch.compile` (call or
    decorator), `model.compile` or `accelerate.utils.compile_regions`, and a
    `TorchDynamoPlugin` whose `mode` (other than its default `"default"`, which Accelerate drops)
    meets `options`. Only literal values count: a `mode` that is a non-None constant and
    `options` written as a dict (`{...}`, a dict comprehension, `dict(...)`). A variable may
    be None at run time, so `mode=args.mode` is not reported.

    ## Why is this bad
    torch refuses the combination: `RuntimeError: Either mode or options can be specified, but
    both can't be specified at the same time.` It is raised when `torch.compile` is called,
    when a `@torch.compile(...)` decorator is applied, or inside `accelerator.prepare()` for the
    plugin. An empty `options={}` raises too.

    ## Example
    ```python
    model = torch.compile(model, mode="max-autotune", options={"epilogue_fusion": True})
    ```

    ## Use instead
    ```python
    model = torch.compile(
        model,
        options={"epilogue_fusion": True, "max_autotune": True, "triton.cudagraphs": True, "coordinate_descent_tuning": True},
    )
    ```
    A mode is a named set of inductor options (`torch._inductor.list_mode_options(mode)`): put
    those you want in `options`.

    ## Fix safety
    Display only: the suggested edit removes `mode=` and adds the options that mode stands for
    in torch 2.13 to a literal `options` dict (keys you already set are kept). The expansion
    depends on the torch version, so it is shown, never applied.

    ## References
    - [torch.compile](https://docs.pytorch.org/docs/stable/generated/torch.compile.html)
    - [`torch._inductor.list_mode_options`](https://github.com/pytorch/pytorch/blob/main/torch/_inductor/__init__.py)
    """

    code = "RC103"
    name = "mode-with-options"
    severity = Severity.ERROR
    message = "`mode` and `options` cannot be combined: torch.compile raises RuntimeError"
    triggers = ("options", "TorchDynamoPlugin")
    required = (COMPILE_SITE_WORDS,)
    fix_applicability = Applicability.DISPLAY

    valid = [
        "import torch\nmodel = torch.compile(model, options={'max_autotune': True})\n",
        "import torch\nmodel = torch.compile(model, mode='max-autotune')\n",
        "import torch\nmodel = torch.compile(model, mode=None, options={'max_autotune': True})\n",
        "import torch\nmodel = torch.compile(model, mode='max-autotune', options=None)\n",
        "import torch\nmodel = torch.compile(model, mode=args.mode, options=args.options)\n",
        "import torch\nmodel = torch.compile(model, mode='default', options=extra)\n",
        "from accelerate.utils import TorchDynamoPlugin\nplugin = TorchDynamoPlugin(backend='inductor', mode='default', options={'max_autotune': True})\n",
        "from accelerate.utils import TorchDynamoPlugin\nplugin = TorchDynamoPlugin(backend='inductor', options={'max_autotune': True})\n",
        "from accelerate import Accelerator\nacc = Accelerator(mode='x', options={})\n",
        "import torch\nparser.add_argument('--mode', options={'a': 1}, mode='x')\n",
    ]
    invalid = [
        Invalid(
            "import torch\nmodel = torch.compile(model, mode='max-autotune', options={'epilogue_fusion': True})\n",
            message="RuntimeError",
        ),
        Invalid("import torch as T\nmodel = T.compile(model, mode='default', options={})\n"),
        Invalid(
            "from torch import compile as tc\n@tc(options=dict(max_autotune=True), mode='reduce-overhead')\ndef step(x):\n    return x\n"
        ),
        Invalid("import torch\nmodel.compile(mode='max-autotune', options={k: True for k in keys})\n"),
        Invalid(
            "from accelerate.utils import compile_regions\nmodel = compile_regions(model, mode='max-autotune', options={})\n"
        ),
        Invalid(
            "from accelerate.utils import TorchDynamoPlugin\nplugin = TorchDynamoPlugin(backend='inductor', mode='max-autotune', options={'a': 1})\n",
            message="prepare()",
        ),
        Invalid(
            "from accelerate.utils import TorchDynamoPlugin\nplugin = TorchDynamoPlugin('inductor', 'reduce-overhead', False, None, {})\n"
        ),
    ]

    def visit_Call(self, node: ast.Call) -> None:
        site = compile_config_site(self.ctx, node)
        if site is None or (site not in TORCH_SITES and site is not Site.DYNAMO_PLUGIN):
            return
        if site is Site.DYNAMO_PLUGIN:
            mode, options = plugin_argument(node, "mode"), plugin_argument(node, "options")
        else:
            mode, options = keyword_value(node, "mode"), keyword_value(node, "options")
        if (
            not isinstance(mode, ast.Constant)
            or mode.value is None
            or options is None
            or not is_dict_literal(self.ctx, options)
        ):
            return
        message = self.message
        if site is Site.DYNAMO_PLUGIN:
            if mode.value == PLUGIN_DEFAULT_MODE:
                return  # Accelerate drops its default mode before calling torch.compile
            message = (
                "`mode` and `options` cannot be combined: torch.compile raises RuntimeError in `accelerator.prepare()`"
            )
        mode_kw, options_kw = keyword(node, "mode"), keyword(node, "options")
        spans = [mode_kw or mode, options_kw or options]
        first, second = sorted(spans, key=lambda n: (n.lineno, n.col_offset))
        fix = None
        edits = merge_mode_into_options(self.ctx, node, mode_kw, options) if mode_kw is not None else None
        if edits:
            fix = self.make_fix("Remove `mode` and put the options it stands for into `options`", edits)
        self.report(first, message, fix=fix, end_node=second)
