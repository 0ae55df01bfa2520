"""regcomp-lint: find torch.compile / Accelerate problems in training scripts before they cost GPU time.

Static lint (this package minus ``trace``) never imports torch and never runs the code it reads.
"""

__version__ = "0.1.0"

from regcomp_lint.api import lint_paths, lint_source  # noqa: E402

__all__ = ["__version__", "lint_source", "lint_paths"]
