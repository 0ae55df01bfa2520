"""Default scope: graph-break and recompile findings only where a compile reaches the code.

Rules that judge a model's own code (``Rule.needs_compiled_module``: RC201-RC209, RC301) keep
their findings, by default, only in files :mod:`regcomp_lint.analysis.compiled_scope` says a
compile reaches. Selecting such a rule explicitly (a code, prefix or name in ``select`` /
``extend-select`` or on the command line; ``ALL`` does not count) reports it everywhere.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping

from regcomp_lint.analysis.compiled_scope import FileScope, ScopeFacts, compiled_files
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
    whole_project: Callable[[], list[str]] | None = None,
    learned: Mapping[str, FileScope] | None = None,
) -> list[Diagnostic]:
    """``diagnostics`` without the scoped rules' findings in files no compile of ``project`` reaches.

    ``whole_project()`` (the files under the config's root) is asked only when some finding's
    file is not reached by the linted files alone: pre-commit lints the changed ``model.py``
    without the ``train.py`` that compiles it. ``learned`` (absolute path -> facts) holds what
    the lint of each file already found out, so those files are not read or parsed again.
    """
    scoped = scoped_codes(settings)
    unsure = {os.path.abspath(d.filename) for d in diagnostics if d.code in scoped}
    if not unsure:
        return diagnostics
    return keep_compiled(diagnostics, scoped, reached(unsure, project, read, whole_project, learned))


def reached(
    unsure: set[str],
    project: Iterable[str],
    read: Callable[[str], str | None],
    whole_project: Callable[[], list[str]] | None = None,
    learned: Mapping[str, FileScope] | None = None,
    facts: ScopeFacts | None = None,
) -> set[str]:
    """Absolute paths of the files a compile reaches: of ``project``, and also of the whole
    project when some file of ``unsure`` (absolute paths: those with scoped findings, or whose
    scoped rules are still to run) is not reached by ``project`` alone. ``facts``: what an
    earlier question of the run kept (the import look-ups of the runner's guess)."""
    project = list(project)
    facts = facts or ScopeFacts()
    if learned:
        facts.learn(learned)
    compiled = compiled_files(project, read, facts)
    if unsure - compiled and whole_project is not None:
        known = set(project)
        more = set(whole_project())
        if more - known:  # (the same files would give the same answer)
            compiled |= compiled_files(sorted(known | more), read, facts)
    return compiled


def keep_compiled(diagnostics: list[Diagnostic], scoped: frozenset[str], compiled: set[str]) -> list[Diagnostic]:
    """``diagnostics`` without the ``scoped`` codes' findings in files outside ``compiled``."""
    return [d for d in diagnostics if d.code not in scoped or os.path.abspath(d.filename) in compiled]
