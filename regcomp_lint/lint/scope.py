"""Default scope: graph-break and recompile findings only where a compile reaches the code.

Rules that judge a model's own code (``Rule.needs_compiled_module``: RC201-RC209, RC301) keep
their findings, by default, only in files :mod:`regcomp_lint.analysis.compiled_scope` says a
compile reaches. Selecting such a rule explicitly (a code, prefix or name in ``select`` /
``extend-select`` or on the command line; ``ALL`` does not count) reports it everywhere.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable

from regcomp_lint.analysis.compiled_scope import compiled_files
from regcomp_lint.checks import ALL_RULES
from regcomp_lint.diagnostics import Diagnostic
from regcomp_lint.lint.config import Settings


def scoped_codes(settings: Settings) -> frozenset[str]:
    """Enabled codes whose findings are limited to compiled code in this run."""
    return frozenset(
        code
        for code in settings.enabled
        if getattr(ALL_RULES[code], "needs_compiled_module", False) and not settings.explicitly_selected(code)
    )


def limit_to_compiled(
    diagnostics: list[Diagnostic],
    settings: Settings,
    project: Iterable[str],
    read: Callable[[str], str | None],
) -> list[Diagnostic]:
    """``diagnostics`` without the scoped rules' findings in files no compile of ``project`` reaches."""
    scoped = scoped_codes(settings)
    if not any(d.code in scoped for d in diagnostics):
        return diagnostics
    compiled = compiled_files(project, read)
    return [d for d in diagnostics if d.code not in scoped or os.path.abspath(d.filename) in compiled]
