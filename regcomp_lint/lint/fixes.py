"""Apply fixes to source text, ruff-style: non-overlapping, safe by default, re-parsed after.

A fix whose result does not parse is dropped (never written), so a buggy fix cannot break code.
"""

from __future__ import annotations

import ast
import warnings

from regcomp_lint.analysis.compile_settings import parses_as
from regcomp_lint.diagnostics import Applicability, Diagnostic, Edit
from regcomp_lint.files.kinds import Kind, kind_of
from regcomp_lint.files.source import SourceFile, apply_edits
from regcomp_lint.lint.config import Settings
from regcomp_lint.lint.engine import lint_source


def applicable(diag: Diagnostic, unsafe: bool, unsafe_codes: frozenset[str] = frozenset()) -> bool:
    """A fix applied now: a safe one, or an unsafe one with ``unsafe`` or of a rule in
    ``unsafe_codes`` (a finding the caller knows it caused itself)."""
    if diag.fix is None:
        return False
    if diag.fix.applicability is Applicability.SAFE:
        return True
    return (unsafe or diag.code in unsafe_codes) and diag.fix.applicability is Applicability.UNSAFE


def parses(text: str, filename: str = "<fix>") -> bool:
    """The text is valid in its format: Python (warnings about it are not ours to show), or the
    YAML/JSON/shell... a settings file is written in."""
    kind = kind_of(filename, text)
    if kind is not Kind.PYTHON:
        return parses_as(text, kind)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(text)
        return True
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False


def apply_fixes(
    text: str,
    diagnostics: list[Diagnostic],
    unsafe: bool = False,
    filename: str = "<fix>",
    unsafe_codes: frozenset[str] = frozenset(),
) -> tuple[str, list[Diagnostic]]:
    """Apply every applicable fix that does not overlap an earlier one; return (text, applied).

    Callers loop (lint → fix → lint) until nothing changes, as ruff does, for fixes that were
    skipped because they overlapped.
    """
    src = SourceFile("<fix>", text)
    chosen: list[Diagnostic] = []
    chosen_edits: list[Edit] = []
    taken: list[tuple[int, int]] = []
    for diag in sorted(diagnostics, key=Diagnostic.sort_key):
        fix = diag.fix
        if fix is None or not applicable(diag, unsafe, unsafe_codes):
            continue
        spans = [(src.offset(e.location), src.offset(e.end_location)) for e in fix.edits]
        if any(s < te and ts < e or (s == e == ts == te) for s, e in spans for ts, te in taken):
            continue
        # import insertions at the same point by two fixes: keep only one copy
        candidate = apply_edits(text, chosen_edits + list(fix.edits))
        if not parses(candidate, filename):
            continue
        chosen.append(diag)
        chosen_edits.extend(fix.edits)
        taken.extend(spans)
    if not chosen:
        return text, []
    return apply_edits(text, chosen_edits), chosen


def fix_source(
    text: str,
    filename: str = "<stdin>",
    config: Settings | None = None,
    unsafe: bool = False,
    max_rounds: int = 10,
    unsafe_codes: frozenset[str] = frozenset(),
) -> tuple[str, list[Diagnostic]]:
    """Apply fixes until none applies; return the new text and the remaining diagnostics."""
    for _ in range(max_rounds):
        diagnostics = lint_source(text, filename, config)
        text_after, applied = apply_fixes(
            text, diagnostics, unsafe=unsafe, filename=filename, unsafe_codes=unsafe_codes
        )
        if not applied or text_after == text:
            return text, diagnostics
        text = text_after
    return text, lint_source(text, filename, config)
