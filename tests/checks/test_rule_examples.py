"""Every rule's VALID/INVALID examples are tests (Fixit-style): the rule file is the spec."""

from __future__ import annotations

import ast

import pytest

from regcomp_lint.api import lint_source
from regcomp_lint.checks import ALL_RULES
from regcomp_lint.checks.base import DOC_SECTIONS
from regcomp_lint.diagnostics import Applicability
from regcomp_lint.lint.fixes import apply_fixes

VALID = [
    pytest.param(rule, src, id=f"{code}-valid-{i}")
    for code, rule in ALL_RULES.items()
    for i, src in enumerate(rule.valid)
]
INVALID = [
    pytest.param(rule, ex, id=f"{code}-invalid-{i}")
    for code, rule in ALL_RULES.items()
    for i, ex in enumerate(rule.invalid)
]


SETTINGS_VALID = [
    pytest.param(rule, ex, id=f"{code}-settings-valid-{i}")
    for code, rule in ALL_RULES.items()
    for i, ex in enumerate(rule.settings_valid)
]
SETTINGS_INVALID = [
    pytest.param(rule, ex, id=f"{code}-settings-invalid-{i}")
    for code, rule in ALL_RULES.items()
    for i, ex in enumerate(rule.settings_invalid)
]


def findings(rule, src, filename="example.py"):
    return [d for d in lint_source(src, filename) if d.code == rule.code]


def settings_findings(rule, example, folder):
    """Lint the example as a file in ``folder``, beside the other files it names."""
    for name, text in example.files:
        (folder / name).write_text(text, encoding="utf-8")
    filename = str(folder / example.filename) if example.files else example.filename
    return [d for d in lint_source(example.code, filename) if d.code == rule.code]


@pytest.mark.parametrize("rule,example", SETTINGS_VALID)
def test_settings_valid_example_has_no_finding(rule, example, tmp_path):
    assert settings_findings(rule, example, tmp_path) == []


@pytest.mark.parametrize("rule,example", SETTINGS_INVALID)
def test_settings_invalid_example_is_found(rule, example, tmp_path):
    found = settings_findings(rule, example, tmp_path)
    assert len(found) == example.count, found
    if example.message:
        assert example.message in found[0].message
    if example.fixed is None:
        assert not [d for d in found if d.fix and d.fix.applicability is not Applicability.DISPLAY]
        return
    text, applied = apply_fixes(example.code, found, unsafe=True, filename=example.filename)
    assert applied and text == example.fixed


def test_rules_with_settings_examples_read_settings():
    for rule in ALL_RULES.values():
        assert bool(rule.settings_invalid) == rule.reads_settings(), rule.code


@pytest.mark.parametrize("rule,src", VALID)
def test_valid_example_has_no_finding(rule, src):
    assert findings(rule, src) == []


@pytest.mark.parametrize("rule,example", INVALID)
def test_invalid_example_is_found(rule, example):
    found = findings(rule, example.code)
    assert len(found) == example.count, found
    if example.message:
        assert example.message in found[0].message
    fixable = [d for d in found if d.fix and d.fix.applicability is not Applicability.DISPLAY]
    if example.fixed is None:
        assert not fixable, "example declares no fix but the rule offered one"
        return
    assert fixable, "example declares a fixed text but the rule offered no fix"
    text = example.code
    for _ in range(5):  # loop like `fix_source` for fixes that overlapped
        found = [d for d in findings(rule, text)]
        text, applied = apply_fixes(text, found, unsafe=True)
        if not applied:
            break
    assert text == example.fixed
    ast.parse(text)


@pytest.mark.parametrize("code", list(ALL_RULES))
def test_rule_metadata(code):
    rule = ALL_RULES[code]
    assert rule.code == code and code.startswith("RC") and len(code) == 5
    assert rule.name == rule.name.lower() and " " not in rule.name
    docs = rule.docs()
    for section in DOC_SECTIONS:
        assert f"## {section}" in docs, f"{code} docs miss section {section!r}"
    assert rule.invalid or rule.settings_invalid, f"{code} has no invalid example"
    assert rule.valid or rule.settings_valid, f"{code} has no valid example"
    if rule.fix_applicability is None:
        assert all(ex.fixed is None for ex in rule.invalid)
