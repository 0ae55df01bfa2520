"""Lint a file that is not Python: YAML, JSON, shell, Makefile, Dockerfile, ``.env``.

The prefilter comes first: a file without any compile-setting marker (``dynamo_``,
``DYNAMO_``, ``torch_compile``) is answered without being parsed. Otherwise its settings are
read once (``analysis.compile_settings``) and handed to every enabled rule that reads settings;
``# noqa: RC101`` / ``# regcomp: ignore[RC101]`` comments work as in Python (not in JSON).
"""

from __future__ import annotations

from regcomp_lint.analysis.compile_settings import hash_comments, mentions_settings, read_settings
from regcomp_lint.checks import ALL_RULES
from regcomp_lint.diagnostics import Diagnostic
from regcomp_lint.files.kinds import Kind
from regcomp_lint.files.source import SourceFile
from regcomp_lint.lint import suppressions as sup_mod

SYNTAX_ERROR = "RC001"


def settings_rules(enabled: frozenset[str]) -> list[str]:
    return [code for code in sorted(enabled) if code in ALL_RULES and ALL_RULES[code].reads_settings()]


def lint_settings_text(
    text: str, filename: str, kind: Kind, enabled: frozenset[str], apply_suppressions
) -> list[Diagnostic]:
    """Findings for one settings file; ``apply_suppressions`` is the engine's (shared with Python)."""
    codes = settings_rules(enabled)
    if not codes or not mentions_settings(text):
        return []
    found = read_settings(text, kind)
    if found.error is not None:
        if SYNTAX_ERROR not in enabled:
            return []
        message, where = found.error
        return [Diagnostic(SYNTAX_ERROR, ALL_RULES[SYNTAX_ERROR].name, message, filename, where, where)]
    diagnostics: list[tuple[Diagnostic, int]] = []
    for code in codes:
        rule = ALL_RULES[code]
        for report in rule.check_settings(found, filename):
            diag = Diagnostic(code, rule.name, report.message, filename, report.start, report.end, report.fix)
            diagnostics.append((diag, report.start.row))
    if kind is Kind.JSON or not sup_mod.might_have_suppressions(text):
        result = [diag for diag, _ in diagnostics]
    else:
        source = SourceFile(filename, text)
        comments = list(hash_comments(source.lines))
        result = apply_suppressions(diagnostics, source, enabled, comments)
    result.sort(key=Diagnostic.sort_key)
    return result
