"""SARIF 2.1.0 output validated against the official OASIS schema (errata 01)."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from regcomp_lint.checks import ALL_RULES
from regcomp_lint.diagnostics import Applicability
from regcomp_lint.output import RenderContext, render
from tests.output.helpers import diag, fix

SCHEMA_PATH = Path(__file__).parent.parent / "data" / "sarif-schema-2.1.0.json"


@pytest.fixture(scope="module")
def validator():
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    assert schema["id"].endswith("/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json")
    jsonschema.Draft4Validator.check_schema(schema)
    return jsonschema.Draft4Validator(schema, format_checker=jsonschema.FormatChecker())


def sarif(diagnostics, tmp_path) -> dict:
    return json.loads(render("sarif", diagnostics, RenderContext(cwd=str(tmp_path))))


def test_empty_run_is_valid_and_describes_every_rule(validator, tmp_path):
    log = sarif([], tmp_path)
    validator.validate(log)
    assert log["version"] == "2.1.0"
    run = log["runs"][0]
    assert run["results"] == []
    assert run["columnKind"] == "unicodeCodePoints"
    rules = run["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == list(ALL_RULES)
    for descriptor in rules:
        rule = ALL_RULES[descriptor["id"]]
        assert descriptor["name"] == rule.name
        assert descriptor["shortDescription"]["text"] == rule.summary()
        assert "## What it does" in descriptor["fullDescription"]["markdown"]
        assert descriptor["helpUri"].endswith(f"/rules/{rule.code}.md")
        assert descriptor["properties"]["fixApplicability"] in ("safe", "unsafe", "display", "none")


def test_results_with_fixes_odd_paths_and_empty_regions_are_valid(validator, tmp_path):
    found = [
        diag(
            filename=str(tmp_path / "dir with space" / "é.py"),
            start=(1, 1),
            end=(2, 3),
            fix=fix(Applicability.SAFE, "x", (1, 1), (1, 1)),
        ),
        diag(filename="/elsewhere/abs.py", fix=fix(Applicability.UNSAFE)),
        diag(filename="<stdin>", start=(4, 2), end=(4, 2)),
        diag(code="RC999", name="not-a-rule"),
    ]
    log = sarif(found, tmp_path)
    validator.validate(log)
    results = log["runs"][0]["results"]
    first = results[0]["locations"][0]["physicalLocation"]
    assert first["artifactLocation"] == {"uri": "dir%20with%20space/%C3%A9.py", "uriBaseId": "%SRCROOT%"}
    assert first["region"] == {"startLine": 1, "startColumn": 1, "endLine": 2, "endColumn": 3}
    assert results[0]["fixes"][0]["properties"] == {"applicability": "safe"}
    assert results[1]["locations"][0]["physicalLocation"]["artifactLocation"] == {"uri": "file:///elsewhere/abs.py"}
    assert "ruleIndex" not in results[3]
    assert log["runs"][0]["originalUriBaseIds"]["%SRCROOT%"]["uri"] == tmp_path.as_uri() + "/"


def test_schema_rejects_a_broken_log(validator):
    """The stored schema really constrains: a result without a message is refused."""
    with pytest.raises(jsonschema.ValidationError):
        validator.validate(
            {"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "x"}}, "results": [{"ruleId": "RC1"}]}]}
        )
