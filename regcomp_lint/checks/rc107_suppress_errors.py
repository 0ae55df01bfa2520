"""RC107 suppress-errors."""

import ast

from regcomp_lint.analysis.compile_settings import SettingsFile
from regcomp_lint.analysis.file_context import is_true
from regcomp_lint.checks.base import Invalid, Rule, SettingsExample, SettingsReport
from regcomp_lint.diagnostics import Applicability, Severity
from regcomp_lint.knowledge.launch_settings import SUPPRESS_ERRORS_VARIABLE

SUPPRESS_ERRORS = ("torch._dynamo.config.suppress_errors",)


class SuppressErrors(Rule):
    """## What it does
    Reports `torch._dynamo.config.suppress_errors = True`, however `torch._dynamo` was imported,
    and `TORCHDYNAMO_SUPPRESS_ERRORS=...` set in a shell script, Makefile, Dockerfile, `.env`
    file or CI `env:` map. torch reads that variable with `bool(os.environ.get(...))`, so any
    non-empty value turns the setting on: `TORCHDYNAMO_SUPPRESS_ERRORS=0` too.

    ## Why is this bad
    With errors suppressed, any failure inside the compiler makes dynamo fall back to eager for
    that frame. Nothing raises: the job keeps running, slower, and the only sign is a warning
    logged by `torch._dynamo` (measured with torch 2.13: one `WARNING` with the compiler's
    traceback per failing frame), easy to lose among the start-up output of every process.
    Problems that `fullgraph=True` or a failing compile would have surfaced in the first minute
    are discovered weeks later in a throughput chart.

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
    settings_invalid = [
        SettingsExample(".env", "TORCHDYNAMO_SUPPRESS_ERRORS=1\n"),
        SettingsExample("train.sh", "export TORCHDYNAMO_SUPPRESS_ERRORS=0  # meant as off\n", message="any non-empty"),
        SettingsExample("ci.yml", "jobs:\n  t:\n    env:\n      TORCHDYNAMO_SUPPRESS_ERRORS: 'true'\n"),
    ]
    settings_valid = [
        SettingsExample("train.sh", "TORCHDYNAMO_SUPPRESS_ERRORS= python train.py\n"),
        SettingsExample(".env", "TORCHDYNAMO_SUPPRESS_ERRORS=1  # noqa: RC107\n"),
    ]
    message = "`suppress_errors = True` hides compiler failures: dynamo falls back to eager with only a log warning"
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

    @classmethod
    def check_settings(cls, found: SettingsFile, path: str) -> list[SettingsReport]:
        message = (
            f"`{SUPPRESS_ERRORS_VARIABLE}` turns `suppress_errors` on (torch reads any non-empty value, "
            "`0` included, as true): dynamo falls back to eager with only a log warning; remove the variable"
        )
        return [
            SettingsReport(s.start, s.end, message) for s in found.settings if s.field == "suppress_errors" and s.value
        ]

    def visit_Assign(self, node: ast.Assign) -> None:
        if not is_true(node.value):
            return
        for target in node.targets:
            if self.ctx.resolves_to(target, *SUPPRESS_ERRORS):
                self.report(target, end_node=node)
