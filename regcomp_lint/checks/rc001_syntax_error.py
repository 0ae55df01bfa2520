"""RC001 syntax-error."""

from regcomp_lint.checks.base import Invalid, Rule
from regcomp_lint.diagnostics import Severity


class SyntaxErrorRule(Rule):
    """## What it does
    Reports a file that cannot be decoded or parsed, with the line and column where parsing
    stopped: a Python file, read with the grammar of the Python that runs the linter (so under
    3.11 a 3.12 `type Alias = int` is reported), or a settings file it reads (an `accelerate
    config` YAML file, a shell script). The run goes on with the other files.

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
