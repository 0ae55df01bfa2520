"""Severity end to end: every rule declares one, the config overrides it, and the outputs, the
footer and the exit status follow it (advice never reads or fails as an error)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from regcomp_lint.checks import ALL_RULES
from regcomp_lint.cli.commands import main
from regcomp_lint.diagnostics import Severity
from regcomp_lint.lint import rule_docs as docs
from regcomp_lint.lint.config import ConfigError, Settings, load
from regcomp_lint.lint.engine import lint_source

SUPPRESS = "import torch\ntorch._dynamo.config.suppress_errors = True\n"  # RC107: a warning
BAD_BACKEND = "import torch\nm = torch.compile(torch.nn.Linear(2, 2), backend='aot_nvfuser')\n"  # RC101: an error
LEGACY = "from accelerate import Accelerator\nacc = Accelerator(dynamo_backend='inductor')\n"  # RC105: info


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    return tmp_path


def invoke(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False, prog_name="regcomp-lint")


@pytest.mark.parametrize("code", sorted(ALL_RULES))
def test_every_rule_declares_its_own_severity(code):
    rule = ALL_RULES[code]
    assert "severity" in vars(rule), f"{code} must declare `severity = Severity.<LEVEL>` in its own class"
    assert isinstance(rule.severity, Severity)


@pytest.mark.parametrize("code", sorted(ALL_RULES))
def test_rule_page_and_json_show_the_severity(code):
    rule = ALL_RULES[code]
    assert f"| Severity | {rule.severity.value} (" in docs.render_page(rule)
    assert docs.rule_json(rule)["severity"] == rule.severity.value


def test_chosen_defaults_advice_is_info_runtime_failures_are_errors():
    assert ALL_RULES["RC501"].severity is Severity.INFO
    assert ALL_RULES["RC101"].severity is Severity.ERROR
    assert ALL_RULES["RC404"].severity is Severity.ERROR
    assert all(ALL_RULES[f"RC20{i}"].severity is Severity.WARNING for i in range(1, 10))
    assert ALL_RULES["RC301"].severity is Severity.WARNING


def test_findings_carry_their_rule_severity():
    found = {d.code: d.severity for d in lint_source(BAD_BACKEND + SUPPRESS + LEGACY, "t.py")}
    assert found == {"RC101": Severity.ERROR, "RC107": Severity.WARNING, "RC105": Severity.INFO}


def test_config_overrides_by_prefix_then_code(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[tool.regcomp-lint]\nfail-on = "error"\n[tool.regcomp-lint.severity]\nRC1 = "info"\nsuppress-errors = "error"\n'
    )
    settings = load(start=str(tmp_path))
    assert settings.fail_on == "error"
    found = {d.code: d.severity for d in lint_source(BAD_BACKEND + SUPPRESS, "t.py", settings)}
    assert found == {"RC101": Severity.INFO, "RC107": Severity.ERROR}


@pytest.mark.parametrize(
    "table, wrong",
    [
        ("[tool.regcomp-lint.severity]\nRC107 = 'fatal'\n", "fatal"),
        ("[tool.regcomp-lint.severity]\nRC9 = 'info'\n", "RC9"),
    ],
)
def test_bad_severity_config_names_what_is_wrong(tmp_path, table, wrong):
    (tmp_path / "pyproject.toml").write_text("[tool.regcomp-lint]\n" + table)
    with pytest.raises(ConfigError, match=wrong):
        load(start=str(tmp_path))


def test_bad_fail_on_in_config_is_a_config_error(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.regcomp-lint]\nfail-on = "never"\n')
    with pytest.raises(ConfigError, match="fail-on"):
        load(start=str(tmp_path))


def test_footer_counts_by_severity_and_info_alone_exits_0(project):
    (project / "legacy.py").write_text(LEGACY)
    result = invoke("legacy.py")
    assert result.exit_code == 0, result.stdout
    assert "RC105 [info]" in result.stdout
    assert result.stdout.splitlines()[-1].startswith("Found 1 info")
    assert invoke("--fail-on", "info", "legacy.py").exit_code == 1


def test_fail_on_error_ignores_warnings(project):
    (project / "w.py").write_text(SUPPRESS)
    (project / "e.py").write_text(BAD_BACKEND)
    assert invoke("w.py").exit_code == 1
    assert invoke("--fail-on", "error", "w.py").exit_code == 0
    both = invoke("--fail-on", "error", "w.py", "e.py")
    assert both.exit_code == 1
    assert both.stdout.splitlines()[-1].startswith("Found 1 error, 1 warning")
    assert invoke("--exit-zero", "e.py").exit_code == 0


def test_sarif_and_github_levels_follow_severity(project):
    (project / "a.py").write_text(BAD_BACKEND + SUPPRESS + LEGACY)
    sarif = json.loads(invoke("--format", "sarif", "a.py").stdout)
    levels = {r["ruleId"]: r["level"] for r in sarif["runs"][0]["results"]}
    assert levels == {"RC101": "error", "RC107": "warning", "RC105": "note"}
    defaults = {r["id"]: r["defaultConfiguration"]["level"] for r in sarif["runs"][0]["tool"]["driver"]["rules"]}
    assert defaults["RC501"] == "note" and defaults["RC101"] == "error"
    kinds = {
        line.split("title=")[1].split("::")[0]: line.split(" ")[0]
        for line in invoke("--format", "github", "a.py").stdout.splitlines()
    }
    assert kinds == {"RC101": "::error", "RC107": "::warning", "RC105": "::notice"}


def test_json_output_carries_the_configured_severity(project):
    (project / "pyproject.toml").write_text('[tool.regcomp-lint.severity]\nRC107 = "info"\n')
    (project / "a.py").write_text(SUPPRESS)
    data = json.loads(invoke("--format", "json", "a.py").stdout)
    assert [(d["code"], d["severity"]) for d in data] == [("RC107", "info")]


def test_settings_default_fails_on_warnings():
    assert Settings().fail_on == "warning"
