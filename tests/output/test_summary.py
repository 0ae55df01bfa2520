"""The closing line of human output."""

from __future__ import annotations

from regcomp_lint.diagnostics import Applicability, Severity
from regcomp_lint.output import RenderContext
from regcomp_lint.output.summary import INCOMPLETE, NO_RULES, NOTHING_READ, summary_line
from tests.output.helpers import diag, fix


def test_no_findings():
    assert summary_line([], RenderContext()) == "All checks passed!"


def test_counts_and_plural():
    assert summary_line([diag()], RenderContext()) == "Found 1 error."
    assert summary_line([diag(), diag()], RenderContext()) == "Found 2 errors."


def test_fixable_and_hidden_unsafe_fixes():
    found = [
        diag(fix=fix(Applicability.SAFE)),
        diag(fix=fix(Applicability.UNSAFE)),
        diag(fix=fix(Applicability.DISPLAY)),
    ]
    assert (
        summary_line(found, RenderContext())
        == "Found 3 errors (1 fixable with --fix; 1 more with --fix --unsafe-fixes)."
    )
    assert (
        summary_line(found, RenderContext(unsafe_fixes=True)) == "Found 3 errors (2 fixable with --fix --unsafe-fixes)."
    )
    only_unsafe = [diag(fix=fix(Applicability.UNSAFE))]
    assert summary_line(only_unsafe, RenderContext()) == "Found 1 error (1 fixable with --fix --unsafe-fixes)."
    assert (
        summary_line(only_unsafe, RenderContext(fix_mode=True))
        == "Found 1 finding (0 fixed, 1 remaining; 1 fixable with --unsafe-fixes)."
    )


def test_after_fix():
    assert summary_line([], RenderContext(fix_mode=True, fixed=2)) == "Found 2 findings (2 fixed, 0 remaining)."
    assert summary_line([diag()], RenderContext(fix_mode=True, fixed=1)) == "Found 2 findings (1 fixed, 1 remaining)."
    assert summary_line([], RenderContext(fix_mode=True)) == "All checks passed!"


def test_incomplete_run_never_claims_success():
    assert summary_line([], RenderContext(incomplete=True)) == INCOMPLETE
    assert summary_line([diag()], RenderContext(incomplete=True)) == "Found 1 error."


def test_counts_go_by_severity_most_severe_first():
    found = [diag(severity=Severity.INFO), diag(), diag(severity=Severity.WARNING), diag(severity=Severity.WARNING)]
    assert summary_line(found, RenderContext()) == "Found 1 error, 2 warnings, 1 info."
    assert summary_line([diag(severity=Severity.INFO)] * 2, RenderContext()) == "Found 2 info."


def test_nothing_read_and_no_rules_are_said_as_such():
    assert summary_line([], RenderContext(incomplete=True, files_linted=0)) == NOTHING_READ
    assert summary_line([], RenderContext(rules_enabled=False)) == NO_RULES
