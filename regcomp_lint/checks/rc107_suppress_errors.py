"""RC107 suppress-errors."""

import ast

from regcomp_lint.analysis.file_context import is_true
from regcomp_lint.checks.base import Invalid, Rule
from regcomp_lint.diagnostics import Applicability, Severity

SUPPRESS_ERRORS = ("torch._dynamo.config.suppress_errors",)


class SuppressErrors(Rule):
    """## What it does
    Reports `torch._dynamo.config.suppress_errors = True`, however `torch._dynamo` was imported.

    ## Why is this bad
    With errors suppressed, any failure inside the compiler makes dynamo silently fall back to
    eager for that frame. The job keeps running, slower, and the reason is gone: no traceback, no
    graph-break report. Problems that `fullgraph=True` or a failing compile would have surfaced
    in the first minute are discovered weeks later in a throughput chart.

    ## Example
    ```python
    import torch._dynamo
    torch._dynamo.config.suppress_errors = True
    model = torch.compile(model)
    ```

    ## Use instead
    ```python
    model = torch.compile(model)  # let compiler errors surface; fix or isolate them
    ```
    Find what breaks with `regcomp-lint trace` or `torch._dynamo.explain`, and wrap a truly
    untraceable helper in `torch.compiler.disable` so the fallback is explicit and local.

    ## Fix safety
    Display only: removing the line makes hidden compiler errors raise, which is the point but
    changes behaviour.

    ## References
    - [torch.compile troubleshooting](https://docs.pytorch.org/docs/stable/torch.compiler_troubleshooting.html)
    """

    code = "RC107"
    name = "suppress-errors"
    severity = Severity.WARNING
    message = "`suppress_errors = True` hides compiler failures: dynamo silently falls back to eager"
    triggers = ("suppress_errors",)
    fix_applicability = Applicability.DISPLAY

    valid = [
        "import torch\ntorch._dynamo.config.suppress_errors = False\n",
        "suppress_errors = True\n",
        "import torch\nconfig = {}\nconfig.suppress_errors = True\n",
        "from torch import _dynamo\n_dynamo.config.suppress_errors = flag\n",
    ]
    invalid = [
        Invalid("import torch\ntorch._dynamo.config.suppress_errors = True\n"),
        Invalid("import torch._dynamo as dynamo\ndynamo.config.suppress_errors = True\n"),
        Invalid("from torch._dynamo import config\nconfig.suppress_errors = True\n"),
        Invalid("import torch._dynamo.config as dc\ndc.suppress_errors = True\n"),
    ]

    def visit_Assign(self, node: ast.Assign) -> None:
        if not is_true(node.value):
            return
        for target in node.targets:
            if self.ctx.resolves_to(target, *SUPPRESS_ERRORS):
                self.report(target, end_node=node)
