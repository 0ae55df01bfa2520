"""Library entry points shared by the CLI, pre-commit, editors and tests.

Static lint never imports torch and never imports or executes the files it reads.
"""

from __future__ import annotations

from regcomp_lint.config import Settings
from regcomp_lint.diagnostics import Diagnostic
from regcomp_lint.engine import lint_bytes, lint_text
from regcomp_lint.fixes import apply_fixes


def lint_source(text: str | bytes, filename: str = "<stdin>", config: Settings | None = None) -> list[Diagnostic]:
    """Lint one file's content; ``bytes`` are decoded like the interpreter would (BOM, coding line)."""
    settings = config or Settings()
    enabled = settings.enabled_for(filename)
    if isinstance(text, bytes):
        return lint_bytes(text, filename, enabled)
    return lint_text(text, filename, enabled)


def fix_source(text: str, filename: str = "<stdin>", config: Settings | None = None, unsafe: bool = False, max_rounds: int = 10) -> tuple[str, list[Diagnostic]]:
    """Apply fixes until none applies; return the new text and the remaining diagnostics."""
    for _ in range(max_rounds):
        diagnostics = lint_source(text, filename, config)
        text_after, applied = apply_fixes(text, diagnostics, unsafe=unsafe)
        if not applied or text_after == text:
            return text, diagnostics
        text = text_after
    return text, lint_source(text, filename, config)


def lint_paths(paths, config: Settings | None = None, **options) -> list[Diagnostic]:
    """Lint files and directories (recursively, ``*.py``), honouring excludes and the cache."""
    from regcomp_lint.runner import run

    return run(list(paths), config or Settings(), **options).diagnostics
