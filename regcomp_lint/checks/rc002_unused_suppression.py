"""RC002 unused-suppression."""

from regcomp_lint.checks.base import Invalid, Rule
from regcomp_lint.diagnostics import Applicability, Severity


class UnusedSuppression(Rule):
    """## What it does
    Reports a `# noqa: RCxxx` or `# regcomp: ignore[RCxxx]` comment that silences nothing: the
    listed rule did not fire on that line or statement. A bare `# noqa` is left alone (other
    tools share it).

    ## Why is this bad
    Stale suppressions hide the next real problem on that line, and readers trust them as
    documentation of a known issue that no longer exists.

    ## Example
    ```python
    model = torch.compile(model, backend="inductor")  # noqa: RC101
    ```

    ## Use instead
    ```python
    model = torch.compile(model, backend="inductor")
    ```

    ## Fix safety
    Safe: only the unused codes (or the whole directive) are removed from the comment.

    ## References
    - [ruff RUF100](https://docs.astral.sh/ruff/rules/unused-noqa/)
    """

    code = "RC002"
    name = "unused-suppression"
    severity = Severity.WARNING
    message = "unused suppression"
    engine_rule = True
    fix_applicability = Applicability.SAFE
    valid = [
        "import torch\nm = torch.compile(m, backend='inductr')  # noqa: RC101\n",
        "x = 1  # noqa\n",
        "x = 1  # noqa: E501\n",
        "import torch\n# regcomp: ignore[RC101]\nm = torch.compile(m, backend='inductr')\n",
    ]
    invalid = [
        Invalid("x = 1  # noqa: RC101\n", fixed="x = 1\n", message="RC101"),
        Invalid(
            "import torch\nm = torch.compile(m, backend='inductr')  # noqa: RC101, RC102\n",
            fixed="import torch\nm = torch.compile(m, backend='inductr')  # noqa: RC101\n",
            message="RC102",
        ),
        Invalid("# regcomp: ignore\nx = 1\n", fixed="x = 1\n"),
        Invalid("x = 1  # noqa: RC101 -- kept for later\n", fixed="x = 1  # -- kept for later\n"),
    ]
