"""regcomp-lint: find torch.compile / Accelerate problems in training scripts before they cost GPU time.

Static lint (this package minus ``trace``) never imports torch and never runs the code it reads.
``recommend``, ``apply_plan`` and ``trace_model`` need torch and run the model they are given;
they are imported on first use, so ``import regcomp_lint`` stays torch-free.
"""

__version__ = "0.1.0"  # the one version source: pyproject reads it (dynamic = ["version"])

from regcomp_lint.api import apply_plan, lint_paths, lint_source, recommend, trace_model  # noqa: E402
from regcomp_lint.plan import Plan  # noqa: E402

__all__ = ["__version__", "lint_source", "lint_paths", "recommend", "apply_plan", "trace_model", "Plan"]
