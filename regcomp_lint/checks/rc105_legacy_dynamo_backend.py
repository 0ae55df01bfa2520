"""RC105 legacy-dynamo-backend."""

import ast

from regcomp_lint.analysis.callsites import is_accelerator
from regcomp_lint.analysis.file_context import has_star_kwargs, is_none, keyword
from regcomp_lint.checks.accelerate_fixes import backend_keyword_to_plugin
from regcomp_lint.checks.base import Invalid, Rule
from regcomp_lint.diagnostics import Applicability, Severity


class LegacyDynamoBackend(Rule):
    """## What it does
    Reports `Accelerator(dynamo_backend=...)`, the shortcut that configures `torch.compile` by
    backend name only, and rewrites it as `dynamo_plugin=TorchDynamoPlugin(backend=...)`.

    ## Why is this bad
    `dynamo_backend` can only choose the backend. Everything else that decides how the model is
    compiled (`mode`, `fullgraph`, `dynamic`, `options`, `use_regional_compilation`) lives on
    `TorchDynamoPlugin`, so with the shortcut those settings silently come from
    `ACCELERATE_DYNAMO_*` environment variables or `accelerate config`, not from the script.
    Spelling the plugin out puts the whole compile configuration in one reviewable place and
    is the first step to regional compilation. Accelerate 1.15 itself turns
    `dynamo_backend=X` into `TorchDynamoPlugin(backend=X)` in `Accelerator.__init__`.

    ## Example
    ```python
    from accelerate import Accelerator

    accelerator = Accelerator(dynamo_backend="inductor")
    ```

    ## Use instead
    ```python
    from accelerate import Accelerator
    from accelerate.utils import TorchDynamoPlugin

    accelerator = Accelerator(dynamo_plugin=TorchDynamoPlugin(backend="inductor"))
    ```

    ## Fix safety
    Safe: the rewrite builds exactly the plugin Accelerate builds from `dynamo_backend`, so the
    behaviour is unchanged. The value's source text is kept verbatim, and
    `from accelerate.utils import TorchDynamoPlugin` is added unless the file already imports
    it (under any alias). No fix when the call also passes `dynamo_plugin=` (that is RC106) or
    `**kwargs`, or when the name `TorchDynamoPlugin` is already taken by something else.
    `dynamo_backend=None` (the default) is not reported.

    ## References
    - [Accelerate: compilation](https://huggingface.co/docs/accelerate/usage_guides/compilation)
    - [`TorchDynamoPlugin`](https://huggingface.co/docs/accelerate/package_reference/utilities#accelerate.utils.TorchDynamoPlugin)
    """

    code = "RC105"
    name = "legacy-dynamo-backend"
    severity = Severity.INFO
    message = "`dynamo_backend=` only sets the backend: pass `dynamo_plugin=TorchDynamoPlugin(backend=...)` instead"
    triggers = ("dynamo_backend",)
    fix_applicability = Applicability.SAFE

    valid = [
        "from accelerate import Accelerator\nfrom accelerate.utils import TorchDynamoPlugin\n"
        "accelerator = Accelerator(dynamo_plugin=TorchDynamoPlugin(backend='inductor'))\n",
        "from accelerate import Accelerator\naccelerator = Accelerator(dynamo_backend=None)\n",
        "from accelerate import Accelerator\naccelerator = Accelerator(mixed_precision='bf16')\n",
        # not accelerate's Accelerator
        "from mylib import Accelerator\naccelerator = Accelerator(dynamo_backend='inductor')\n",
        "def configure(dynamo_backend='inductor'):\n    return dynamo_backend\nconfigure(dynamo_backend='eager')\n",
    ]
    invalid = [
        Invalid(
            "from accelerate import Accelerator\naccelerator = Accelerator(dynamo_backend='inductor')\n",
            fixed="from accelerate import Accelerator\nfrom accelerate.utils import TorchDynamoPlugin\n"
            "accelerator = Accelerator(dynamo_plugin=TorchDynamoPlugin(backend='inductor'))\n",
            message="TorchDynamoPlugin(backend=...)",
        ),
        # a non-literal value is kept verbatim, and an existing import is reused
        Invalid(
            "from accelerate import Accelerator\nfrom accelerate.utils import TorchDynamoPlugin\n"
            "accelerator = Accelerator(mixed_precision='bf16', dynamo_backend=args.dynamo_backend)\n",
            fixed="from accelerate import Accelerator\nfrom accelerate.utils import TorchDynamoPlugin\n"
            "accelerator = Accelerator(mixed_precision='bf16', dynamo_plugin=TorchDynamoPlugin(backend=args.dynamo_backend))\n",
        ),
        # an aliased import is reused under its alias
        Invalid(
            "import accelerate\nfrom accelerate.utils import TorchDynamoPlugin as TDP\n"
            "acc = accelerate.Accelerator(dynamo_backend = (\n    'eager'  # debug\n))\n",
            fixed="import accelerate\nfrom accelerate.utils import TorchDynamoPlugin as TDP\n"
            "acc = accelerate.Accelerator(dynamo_plugin=TDP(backend=(\n    'eager'  # debug\n)))\n",
        ),
        Invalid(
            "from accelerate import Accelerator as A\nfrom accelerate.utils import DynamoBackend\n"
            "acc = A(dynamo_backend=DynamoBackend.INDUCTOR)\n",
            fixed="from accelerate import Accelerator as A\nfrom accelerate.utils import DynamoBackend\n"
            "from accelerate.utils import TorchDynamoPlugin\n"
            "acc = A(dynamo_plugin=TorchDynamoPlugin(backend=DynamoBackend.INDUCTOR))\n",
        ),
        Invalid(
            "from accelerate.utils import *\nfrom accelerate import Accelerator\n"
            "acc = Accelerator(dynamo_backend='no')\n",
            fixed="from accelerate.utils import *\nfrom accelerate import Accelerator\n"
            "acc = Accelerator(dynamo_plugin=TorchDynamoPlugin(backend='no'))\n",
        ),
        # both keywords: reported, fixed by hand (RC106 says why)
        Invalid(
            "from accelerate import Accelerator\nfrom accelerate.utils import TorchDynamoPlugin\n"
            "acc = Accelerator(dynamo_backend='inductor', dynamo_plugin=TorchDynamoPlugin())\n",
        ),
        Invalid("from accelerate import Accelerator\nacc = Accelerator(dynamo_backend='inductor', **options)\n"),
        # the name TorchDynamoPlugin means something else here: no fix
        Invalid(
            "from accelerate import Accelerator\nfrom mylib import TorchDynamoPlugin\n"
            "acc = Accelerator(dynamo_backend='inductor')\n",
        ),
    ]

    def visit_Call(self, node: ast.Call) -> None:
        kw = keyword(node, "dynamo_backend")
        if kw is None or is_none(kw.value) or not is_accelerator(self.ctx, node.func):
            return
        fix = None
        if keyword(node, "dynamo_plugin") is None and not has_star_kwargs(node):
            edits = backend_keyword_to_plugin(self.ctx, kw)
            if edits:
                fix = self.make_fix("Pass `dynamo_plugin=TorchDynamoPlugin(backend=...)`", edits)
        self.report(kw, fix=fix)
