"""RC003 unknown-suppression-code."""

from regcomp_lint.checks.base import Invalid, Rule
from regcomp_lint.diagnostics import Severity


class UnknownSuppressionCode(Rule):
    """## What it does
    Reports a suppression comment that names an `RC` code that is not a rule, such as
    `# noqa: RC999` or `# regcomp: ignore[RC1O1]`.

    ## Why is this bad
    A typo in a suppression silences nothing, so the finding it was meant for still fires, or the
    comment is simply wrong. Either way the reader is misled.

    ## Example
    ```python
    import torch
    model = torch.compile(model, backend="inductr")  # noqa: RC1O1
    ```

    ## Use instead
    ```python
    import torch
    model = torch.compile(model, backend="inductr")  # noqa: RC101
    ```

    ## Fix safety
    No fix: the intended code cannot be known.

    ## References
    - `regcomp-lint rule --all` lists every code.
    """

    code = "RC003"
    name = "unknown-suppression-code"
    severity = Severity.WARNING
    message = "unknown rule code in suppression"
    engine_rule = True
    valid = ["x = 1  # noqa: E501\n", "x = 1  # noqa\n"]
    invalid = [
        Invalid("x = 1  # noqa: RC999\n", message="RC999"),
        Invalid("x = 1  # regcomp: ignore[XYZ1]\n", message="XYZ1"),
    ]
