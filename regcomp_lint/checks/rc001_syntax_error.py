"""RC001 syntax-error."""

from regcomp_lint.checks.base import Invalid, Rule
from regcomp_lint.diagnostics import Severity


class SyntaxErrorRule(Rule):
    """## What it does
    Reports a file that cannot be decoded or parsed as Python (3.8+ grammar), with the line and
    column where parsing stopped. The run goes on with the other files.

    ## Why is this bad
    Nothing else can be checked in a file that does not parse, and the training job would fail at
    import time anyway, usually after the expensive part of start-up.

    ## Example
    ```python
    def forward(self, x)
        return x
    ```

    ## Use instead
    ```python
    def forward(self, x):
        return x
    ```

    ## Fix safety
    No fix.

    ## References
    - [Python grammar](https://docs.python.org/3/reference/grammar.html)
    """

    code = "RC001"
    name = "syntax-error"
    severity = Severity.ERROR
    message = "file is not valid Python"
    engine_rule = True
    valid = ["x = 1\n", "", "# only a comment\n"]
    invalid = [
        Invalid("def forward(self, x)\n    return x\n", message="SyntaxError"),
        Invalid("print 'hello'\n", message="SyntaxError"),
        Invalid("x = (1,\n", message="SyntaxError"),
    ]
