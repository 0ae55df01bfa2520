"""The closing line of human output: ``Found N errors (M fixable with --fix).`` or ``All checks passed!``."""

from __future__ import annotations

from typing import Sequence

from regcomp_lint.diagnostics import Diagnostic
from regcomp_lint.output.context import RenderContext, plural


INCOMPLETE = "No findings in the files that were read, but not everything could be linted (see the errors below)."


def summary_line(diagnostics: Sequence[Diagnostic], ctx: RenderContext) -> str:
    remaining = len(diagnostics)
    if ctx.incomplete and remaining == 0 and not ctx.fixed:
        return INCOMPLETE
    hidden = 0 if ctx.unsafe_fixes else sum(ctx.hidden_unsafe(d) for d in diagnostics)
    hidden_note = f"{hidden} more with --fix --unsafe-fixes" if hidden else ""
    if ctx.fix_mode:
        total = ctx.fixed + remaining
        if total == 0:
            return "All checks passed!"
        notes = [f"{ctx.fixed} fixed", f"{remaining} remaining"]
        if hidden_note:
            notes.append(hidden_note)
        return f"Found {plural(total, 'error')} ({', '.join(notes)})."
    if remaining == 0:
        return "All checks passed!"
    fixable = sum(ctx.fix_applies(d) for d in diagnostics)
    notes = []
    if fixable:
        notes.append(f"{fixable} fixable with --fix" + (" --unsafe-fixes" if ctx.unsafe_fixes and any(ctx.hidden_unsafe(d) for d in diagnostics) else ""))
    if hidden_note:
        notes.append(hidden_note)
    suffix = f" ({'; '.join(notes)})" if notes else ""
    return f"Found {plural(remaining, 'error')}{suffix}."
