"""Diagnostics built by hand, so format tests do not depend on which rules exist."""

from __future__ import annotations

from regcomp_lint.diagnostics import Applicability, Diagnostic, Edit, Fix, Location, Severity


def diag(
    code="RC107",
    message="msg",
    filename="a.py",
    start=(1, 1),
    end=(1, 2),
    fix=None,
    name="suppress-errors",
    severity=Severity.ERROR,
) -> Diagnostic:
    return Diagnostic(code, name, message, filename, Location(*start), Location(*end), fix, severity=severity)


def fix(applicability=Applicability.SAFE, content="", start=(1, 1), end=(1, 2), message="Do it") -> Fix:
    return Fix(applicability, message, (Edit(content, Location(*start), Location(*end)),))
