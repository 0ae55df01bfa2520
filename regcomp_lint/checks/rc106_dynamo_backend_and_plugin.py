"""RC106 dynamo-backend-and-plugin."""

import ast

from regcomp_lint.analysis.callsites import is_accelerator
from regcomp_lint.analysis.file_context import is_none, keyword
from regcomp_lint.checks.base import Invalid, Rule
from regcomp_lint.checks.text_edits import keyword_span_with_comma
from regcomp_lint.diagnostics import Applicability, Edit, Severity


class DynamoBackendAndPlugin(Rule):
    """## What it does
    Reports an `Accelerator(...)` call given both `dynamo_backend=` and `dynamo_plugin=`.

    ## Why is this bad
    Accelerate refuses the combination when the `Accelerator` is built (checked with
    accelerate 1.15):
    `ValueError: You cannot pass in both `dynamo_plugin` and `dynamo_backend`, please only pass
    in one.` The script dies at start-up, typically after a launcher has already allocated the
    machines. Accelerate treats a literal `None` as absent, so that is not reported.

    ## Example
    ```python
    accelerator = Accelerator(
        dynamo_backend="inductor",
        dynamo_plugin=TorchDynamoPlugin(mode="max-autotune"),
    )
    ```

    ## Use instead
    ```python
    accelerator = Accelerator(
        dynamo_plugin=TorchDynamoPlugin(backend="inductor", mode="max-autotune"),
    )
    ```

    ## Fix safety
    Display only: the suggestion removes `dynamo_backend=`, but its backend may need to move
    into the plugin (`backend=`), which only the author can decide.

    ## References
    - [Accelerate: compilation](https://huggingface.co/docs/accelerate/usage_guides/compilation)
    - [`Accelerator`](https://huggingface.co/docs/accelerate/package_reference/accelerator)
    """

    code = "RC106"
    name = "dynamo-backend-and-plugin"
    severity = Severity.ERROR
    message = "`dynamo_backend=` and `dynamo_plugin=` together raise ValueError in `Accelerator`: set the backend on the plugin"
    triggers = ("dynamo_backend",)
    fix_applicability = Applicability.DISPLAY

    valid = [
        "from accelerate import Accelerator\nAccelerator(dynamo_backend='inductor')\n",
        "from accelerate import Accelerator\nfrom accelerate.utils import TorchDynamoPlugin\n"
        "Accelerator(dynamo_plugin=TorchDynamoPlugin(backend='inductor'))\n",
        "from accelerate import Accelerator\nAccelerator(dynamo_backend=None, dynamo_plugin=plugin)\n",
        "from accelerate import Accelerator\nAccelerator(dynamo_backend='eager', dynamo_plugin=None)\n",
        "from mylib import Accelerator\nAccelerator(dynamo_backend='eager', dynamo_plugin=plugin)\n",
    ]
    invalid = [
        Invalid(
            "from accelerate import Accelerator\nfrom accelerate.utils import TorchDynamoPlugin\n"
            "acc = Accelerator(dynamo_backend='inductor', dynamo_plugin=TorchDynamoPlugin(mode='max-autotune'))\n",
            message="raise ValueError",
        ),
        Invalid(
            "import accelerate\nacc = accelerate.Accelerator(\n    dynamo_plugin=plugin,\n    dynamo_backend=args.backend,\n)\n"
        ),
        Invalid(
            "from accelerate.accelerator import Accelerator as Acc\nAcc(dynamo_plugin=p, mixed_precision='fp16', dynamo_backend='no')\n"
        ),
    ]

    def visit_Call(self, node: ast.Call) -> None:
        backend = keyword(node, "dynamo_backend")
        plugin = keyword(node, "dynamo_plugin")
        if backend is None or plugin is None or is_none(backend.value) or is_none(plugin.value):
            return
        if not is_accelerator(self.ctx, node.func):
            return
        second = max(backend, plugin, key=lambda kw: (kw.lineno, kw.col_offset))
        start, end = keyword_span_with_comma(self.ctx, node, backend)
        fix = self.make_fix("Remove `dynamo_backend=` and set `backend=` on the plugin", [Edit("", start, end)])
        self.report(second, fix=fix)
