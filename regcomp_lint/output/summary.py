"""The closing line of human output: ``Found 2 errors, 1 warning (M fixable with --fix).`` or ``All checks passed!``.

Counts go by severity, so advice (info) is never announced as an error.
"""

from __future__ import annotations

from collections.abc import Sequence

from regcomp_lint.diagnostics import Diagnostic, Severity
from regcomp_lint.output.render_context import RenderContext, plural

INCOMPLETE = "No findings in the files that were read, but not everything could be linted (see the errors below)."
NOTHING_READ = "No files were linted (see the errors below)."
NO_RULES = "No rules are enabled (the selection ignores them all), so nothing was checked."


def summary_line(diagnostics: Sequence[Diagnostic], ctx: RenderContext) -> str:
    remaining = len(diagnostics)
    if ctx.incomplete and remaining == 0 and not ctx.fixed:
        return NOTHING_READ if ctx.files_linted == 0 else INCOMPLETE
    if not ctx.rules_enabled and remaining == 0:
        return NO_RULES
    hidden = 0 if ctx.unsafe_fixes else sum(ctx.hidden_unsafe(d) for d in diagnostics)
    if ctx.fix_mode:
        total = ctx.fixed + remaining
        if total == 0:
            return "All checks passed!"
        note = f"{ctx.fixed} fixed, {remaining} remaining"
        if hidden:
            note += f"; {hidden} fixable with --unsafe-fixes"
        return f"Found {plural(total, 'finding')} ({note})."
    if remaining == 0:
        return "All checks passed!"
    fixable = sum(ctx.fix_applies(d) for d in diagnostics)
    notes = []
    if fixable:
        uses_unsafe = ctx.unsafe_fixes and any(ctx.hidden_unsafe(d) for d in diagnostics)
        notes.append(f"{fixable} fixable with --fix" + (" --unsafe-fixes" if uses_unsafe else ""))
    if hidden:
        notes.append(f"{hidden} {'more' if fixable else 'fixable'} with --fix --unsafe-fixes")
    suffix = f" ({'; '.join(notes)})" if notes else ""
    return f"Found {severity_counts(diagnostics)}{suffix}."


def severity_counts(diagnostics: Sequence[Diagnostic]) -> str:
    """``3 errors, 5 warnings, 1 info``: most severe first, levels without findings left out."""
    parts = []
    for level in (Severity.ERROR, Severity.WARNING, Severity.INFO):
        count = sum(d.severity is level for d in diagnostics)
        if count:
            parts.append(f"{count} info" if level is Severity.INFO else plural(count, level.value))
    return ", ".join(parts)
