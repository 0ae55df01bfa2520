"""RC302 padding-recompiles."""

from __future__ import annotations

import ast
from dataclasses import dataclass

from regcomp_lint.analysis import callsites
from regcomp_lint.analysis.callsites import Site
from regcomp_lint.analysis.file_context import is_none, keyword_value, string_literal
from regcomp_lint.checks.base import Invalid, Rule
from regcomp_lint.diagnostics import Severity
from regcomp_lint.knowledge.modes import MODE_OPTIONS

#: transformers collators that pad each batch to its longest sample unless told otherwise.
PADDING_COLLATORS = frozenset(
    {
        "DataCollatorWithPadding",
        "DataCollatorForSeq2Seq",
        "DataCollatorForTokenClassification",
        "DataCollatorForMultipleChoice",
    }
)
PAD_SEQUENCE = ("torch.nn.utils.rnn.pad_sequence",)
#: Tokenizer methods that take ``padding=``.
TOKENIZER_METHODS = frozenset({"pad", "batch_encode_plus", "encode_plus", "__call__"})
#: Modes whose inductor options record CUDA graphs: one graph per distinct input shape.
CUDAGRAPH_MODES = frozenset(m for m, options in MODE_OPTIONS.items() if options.get("triton.cudagraphs"))
STATIC_SITES = (Site.TORCH_COMPILE, Site.MODULE_COMPILE, Site.DYNAMO_PLUGIN, Site.COMPILE_REGIONS, Site.DYNAMO_OPTIMIZE)

_IMPORTS = "import torch\nfrom transformers import AutoTokenizer, DataCollatorWithPadding\n"


@dataclass(frozen=True)
class _Static:
    node: ast.expr  # the `dynamic=False` / `mode=...` value
    why: str


class PaddingRecompiles(Rule):
    """## What it does
    Reports a compile that specializes on input shapes — `dynamic=False`, or a CUDA-graph mode
    (`mode="reduce-overhead"` or `"max-autotune"`) — on `torch.compile`, `.compile()`,
    `compile_regions` or a `TorchDynamoPlugin`, in a file whose batches are padded to the longest
    sample of each batch: a `DataCollatorWithPadding` (or the Seq2Seq, token-classification and
    multiple-choice collators) without `pad_to_multiple_of` or `padding="max_length"`, a
    tokenizer call with `padding=True` / `"longest"` and no `pad_to_multiple_of`, or
    `torch.nn.utils.rnn.pad_sequence`.

    ## Why is this bad
    Every batch then has a new sequence length. With `dynamic=False` each new length is a guard
    failure and a full recompilation; measured with torch 2.13 on 12 batches of 10 distinct
    lengths: 8 compilations, then `torch._dynamo hit config.recompile_limit (8)` and the rest of
    training runs **uncompiled**, silently (with the default `dynamic=None` the same run compiles
    twice: the second compilation marks the length dynamic). The CUDA-graph modes keep one
    recorded graph per distinct input size (`torch._inductor.config.triton.cudagraph_skip_dynamic_graphs`
    is off by default), each with its own warm-up and memory pool; torch warns past
    `cudagraph_dynamic_shape_warn_limit` (8) distinct sizes.

    ## Example
    ```python
    collator = DataCollatorWithPadding(tokenizer)
    model = torch.compile(model, dynamic=False)
    ```

    ## Use instead
    Pad to a few fixed lengths, or let dynamo mark the length dynamic:
    ```python
    collator = DataCollatorWithPadding(tokenizer, pad_to_multiple_of=64)   # few buckets
    tokenizer(texts, padding="max_length", max_length=512, truncation=True)  # one shape
    model = torch.compile(model)  # dynamic=None: recompiles once, then dynamic
    ```
    Keep the number of buckets under `recompile_limit` (`max_length / pad_to_multiple_of`).

    ## Fix safety
    No fix: padding to a fixed length changes memory use and speed, dropping `dynamic=False`
    changes the kernels; the choice is the user's.

    ## References
    - [torch.compile `dynamic`](https://docs.pytorch.org/docs/stable/generated/torch.compile.html)
    - [CUDA graph trees and dynamic shapes](https://docs.pytorch.org/docs/stable/torch.compiler_cudagraph_trees.html)
    - [DataCollatorWithPadding](https://huggingface.co/docs/transformers/main_classes/data_collator)
    """

    code = "RC302"
    name = "padding-recompiles"
    severity = Severity.WARNING
    message = (
        "compiled for static shapes while batches are padded to their longest sample: one recompile per new length"
    )
    triggers = ("dynamic", "reduce-overhead", "max-autotune", "DynamoPlugin(")
    required = (callsites.COMPILE_SITE_WORDS,)

    valid = [
        # dynamic shapes allowed (the default)
        _IMPORTS + "collator = DataCollatorWithPadding(tok)\nmodel = torch.compile(model)\n",
        # fixed-size buckets
        _IMPORTS
        + "collator = DataCollatorWithPadding(tok, pad_to_multiple_of=64)\nmodel = torch.compile(model, dynamic=False)\n",
        _IMPORTS + "batch = tok(texts, padding='max_length', max_length=128, truncation=True)\n"
        "model = torch.compile(model, mode='reduce-overhead')\n",
        _IMPORTS + "collator = DataCollatorWithPadding(tok, padding='max_length', max_length=128)\n"
        "model = torch.compile(model, dynamic=False)\n",
        # no padding in this file
        "import torch\nmodel = torch.compile(model, dynamic=False)\n",
        # a mode without CUDA graphs
        _IMPORTS
        + "batch = tok(texts, padding=True)\nmodel = torch.compile(model, mode='max-autotune-no-cudagraphs')\n",
        # `padding=True` of something that is not a tokenizer
        (
            "import torch\nfrom torchvision import transforms\nt = transforms.Pad(padding=True)\n"
            "model = torch.compile(model, dynamic=False)\n"
        ),
    ]
    invalid = [
        Invalid(
            _IMPORTS
            + "collator = DataCollatorWithPadding(tokenizer=tok)\nmodel = torch.compile(model, dynamic=False)\n",
            message="DataCollatorWithPadding",
        ),
        Invalid(
            _IMPORTS
            + "def collate(batch):\n    return tok([b['text'] for b in batch], padding=True, return_tensors='pt')\n"
            "model.compile(mode='reduce-overhead')\n",
            message="CUDA graph",
        ),
        Invalid(
            "from accelerate import Accelerator\nfrom accelerate.utils import TorchDynamoPlugin\n"
            "from torch.nn.utils.rnn import pad_sequence\n"
            "def collate(batch):\n    return pad_sequence(batch, batch_first=True)\n"
            "plugin = TorchDynamoPlugin(backend='inductor', dynamic=False)\n",
            message="pad_sequence",
        ),
        Invalid(
            _IMPORTS + "enc = tokenizer(texts, padding='longest', pad_to_multiple_of=None)\n"
            "@torch.compile(dynamic=False)\ndef step(batch):\n    return model(**batch)\n"
        ),
    ]

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._static: list[_Static] = []
        #: Every other call, in walk order: looked at for padding only when a static compile
        #: was found (most files have none, and resolving each call's name is not free).
        self._calls: list[ast.Call] = []

    def visit_Call(self, node: ast.Call) -> None:
        site = callsites.compile_config_site(self.ctx, node)
        if site in STATIC_SITES:
            self._compile_site(node, site)
            return
        self._calls.append(node)

    def _compile_site(self, call: ast.Call, site: Site) -> None:
        plugin = site is Site.DYNAMO_PLUGIN
        dynamic = callsites.plugin_argument(call, "dynamic") if plugin else keyword_value(call, "dynamic")
        mode = callsites.plugin_argument(call, "mode") if plugin else keyword_value(call, "mode")
        if isinstance(dynamic, ast.Constant) and dynamic.value is False:
            self._static.append(_Static(dynamic, "`dynamic=False` recompiles for every new shape"))
        elif (
            mode is not None
            and string_literal(mode) in CUDAGRAPH_MODES
            and not (isinstance(dynamic, ast.Constant) and dynamic.value is True)
        ):
            self._static.append(
                _Static(mode, f"`mode={string_literal(mode)!r}` records one CUDA graph per input shape")
            )

    def _pads_to_longest(self, call: ast.Call) -> str | None:
        """What pads this batch to its longest sample, or None."""
        func = call.func
        last = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
        if last in PADDING_COLLATORS and self._is_transformers(func):
            if _fixed(call, "padding", default_pads=True):
                return None
            return f"`{last}` pads each batch to its longest sample"
        if self.ctx.resolves_to(func, *PAD_SEQUENCE):
            return "`pad_sequence` pads each batch to its longest sequence"
        padding = keyword_value(call, "padding")
        if (
            padding is not None
            and _longest(padding)
            and _tokenizer_call(call)
            and _fixed(call, "padding", default_pads=False) is False
        ):
            return f"`padding={ast.unparse(padding)}` pads each batch to its longest sample"
        return None

    def _is_transformers(self, func: ast.AST) -> bool:
        qualname = self.ctx.qualname(func) or ""
        if qualname.startswith("transformers.") and self.ctx.imports.root_is_import(func):
            return True
        return (
            isinstance(func, ast.Name)
            and not self.ctx.imports.imported(func.id)
            and any(m == "transformers" or m.startswith("transformers.") for m in self.ctx.imports.star_modules)
        )

    def finish(self) -> None:
        if not self._static:
            return
        padding = next(((call, why) for call in self._calls if (why := self._pads_to_longest(call)) is not None), None)
        if padding is None:
            return
        pad_call, why = padding
        for static in self._static:
            self.report(
                static.node,
                f"{static.why}, and batches vary in length: {why} (line {pad_call.lineno}); "
                'pad to fixed lengths (`pad_to_multiple_of`, `padding="max_length"`) or let dynamo mark the '
                "length dynamic",
            )


def _longest(value: ast.AST) -> bool:
    return (isinstance(value, ast.Constant) and value.value is True) or string_literal(value) == "longest"


def _fixed(call: ast.Call, padding_field: str, default_pads: bool) -> bool:
    """Pads to a fixed size or bucket (``pad_to_multiple_of``, ``padding="max_length"``), or
    does not pad at all."""
    multiple = keyword_value(call, "pad_to_multiple_of")
    if multiple is not None and not is_none(multiple):
        return True
    padding = keyword_value(call, padding_field)
    if padding is None:
        return not default_pads
    text = string_literal(padding)
    if text is not None:
        return text in ("max_length", "do_not_pad")
    if isinstance(padding, ast.Constant):
        return padding.value is not True
    qualname = ast.unparse(padding)
    return qualname.endswith(("MAX_LENGTH", "DO_NOT_PAD"))


def _tokenizer_call(call: ast.Call) -> bool:
    """``tokenizer(...)``, ``tok.pad(...)``, ``self.tokenizer.batch_encode_plus(...)``, or any
    call that also asks for tensors or truncation (what only tokenizers take)."""
    if any(kw.arg in ("return_tensors", "truncation") for kw in call.keywords):
        return True
    func = call.func
    receiver = func.value if isinstance(func, ast.Attribute) and func.attr in TOKENIZER_METHODS else func
    name = (
        receiver.attr if isinstance(receiver, ast.Attribute) else receiver.id if isinstance(receiver, ast.Name) else ""
    )
    return "tok" in name.lower() or "processor" in name.lower()
