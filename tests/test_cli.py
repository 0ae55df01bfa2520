"""The command line end to end: every flag, format and exit status, stdin, config errors, fixes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner

from regcomp_lint import __version__
from regcomp_lint.checks import ALL_RULES
from regcomp_lint.cli.commands import main
from regcomp_lint.lint import rule_docs as docs
from regcomp_lint.lint import runner

SUPPRESS = "import torch\ntorch._dynamo.config.suppress_errors = True\n"  # RC107 on line 2, no fix
UNUSED_NOQA = "x = 1  # noqa: RC107\n"  # RC002 with a safe fix → "x = 1\n"
UNUSED_IGNORE = "y = 2  # regcomp: ignore\n"  # RC002 whatever is selected, safe fix → "y = 2\n"
CLEAN = "import torch\nmodel = torch.nn.Linear(2, 2)\n"
SCHEMA = Path(__file__).parent / "data" / "sarif-schema-2.1.0.json"
VENV_BIN = Path(sys.executable).parent


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A folder to run in, with no pyproject.toml above it that could leak settings in."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    return tmp_path


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def invoke(*args: str, input: str | bytes | None = None):
    return CliRunner().invoke(main, list(args), input=input, catch_exceptions=False, prog_name="regcomp-lint")


# -- exit codes and the text format ----------------------------------------------------------
def test_clean_file_exits_0(project):
    write(project, "ok.py", CLEAN)
    result = invoke("ok.py")
    assert result.exit_code == 0
    assert result.stdout == "All checks passed!\n"


def test_finding_exits_1_with_location_snippet_and_caret(project):
    write(project, "bad.py", SUPPRESS)
    result = invoke("bad.py")
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert lines[0].startswith("bad.py:2:1: RC107 [warning] `suppress_errors = True` hides compiler failures")
    assert lines[2] == "2 | torch._dynamo.config.suppress_errors = True"
    assert lines[3] == "  | " + "^" * len("torch._dynamo.config.suppress_errors = True")
    assert lines[-1] == "Found 1 warning."
    assert "\x1b[" not in result.stdout, "no colour when stdout is not a terminal"


def test_no_arguments_lints_the_current_folder_recursively(project):
    write(project, "pkg/deep/bad.py", SUPPRESS)
    write(project, "ok.py", CLEAN)
    result = invoke()
    assert result.exit_code == 1
    assert os.path.join("pkg", "deep", "bad.py") + ":2:1: RC107" in result.stdout


def test_fixable_marker_and_summary(project):
    write(project, "noqa.py", UNUSED_NOQA)
    result = invoke("noqa.py")
    assert result.exit_code == 1
    assert "noqa.py:1:8: RC002 [warning] unused suppression of RC107" in result.stdout
    assert "(fixable)" in result.stdout
    assert "= help: Remove the unused suppression" in result.stdout
    assert result.stdout.splitlines()[-1] == "Found 1 warning (1 fixable with --fix)."


def test_syntax_error_is_a_finding_and_the_run_goes_on(project):
    write(project, "broken.py", "def f(:\n")
    write(project, "bad.py", SUPPRESS)
    result = invoke("--format", "concise", "broken.py", "bad.py")
    assert result.exit_code == 1
    assert "broken.py:1:" in result.stdout and "RC001" in result.stdout
    assert "bad.py:2:1: RC107" in result.stdout


def test_exit_zero_with_findings(project):
    write(project, "bad.py", SUPPRESS)
    result = invoke("--exit-zero", "bad.py")
    assert result.exit_code == 0
    assert "RC107" in result.stdout


def test_nonexistent_path_exits_2_after_printing_results(project):
    write(project, "bad.py", SUPPRESS)
    result = invoke("--format", "concise", "bad.py", "missing.py")
    assert result.exit_code == 2
    assert "bad.py:2:1: RC107" in result.stdout
    assert "regcomp-lint: error: missing.py: no such file or directory" in result.stderr
    assert "Traceback" not in result.output


def test_nonexistent_path_alone_does_not_claim_success(project):
    result = invoke("missing.py")
    assert result.exit_code == 2
    assert "All checks passed" not in result.stdout
    assert "missing.py" in result.stderr


def test_exit_zero_does_not_hide_errors(project):
    result = invoke("--exit-zero", "missing.py")
    assert result.exit_code == 2


# -- other formats -----------------------------------------------------------------------------
def test_concise_format_one_line_per_finding(project):
    write(project, "bad.py", SUPPRESS + UNUSED_NOQA)
    result = invoke("--format", "concise", "bad.py")
    assert result.exit_code == 1
    assert result.stdout.splitlines() == [
        "bad.py:2:1: RC107 [warning] `suppress_errors = True` hides compiler failures: dynamo falls back to eager with only a log warning",
        "bad.py:3:8: RC002 [warning] [*] unused suppression of RC107 (the rule did not fire here)",
        "Found 2 warnings (1 fixable with --fix).",
    ]


def test_json_format_is_ruff_shaped(project):
    write(project, "bad.py", SUPPRESS + UNUSED_NOQA)
    result = invoke("--format", "json", "bad.py")
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    assert [d["code"] for d in data] == ["RC107", "RC002"]
    first = data[0]
    assert {"code", "message", "filename", "location", "end_location", "fix", "url"} <= set(first)
    assert first["location"] == {"row": 2, "column": 1}
    assert first["end_location"] == {"row": 2, "column": 44}
    assert first["fix"] is None
    fix = data[1]["fix"]
    assert fix["applicability"] == "safe"
    assert fix["edits"] == [
        {"content": "", "location": {"row": 3, "column": 6}, "end_location": {"row": 3, "column": 21}}
    ]


def test_json_format_with_no_findings_is_an_empty_array(project):
    write(project, "ok.py", CLEAN)
    result = invoke("--format", "json", "ok.py")
    assert result.exit_code == 0
    assert json.loads(result.stdout) == []


def test_sarif_format_is_valid_against_the_official_schema(project):
    write(project, "sub/bad.py", SUPPRESS + UNUSED_NOQA)
    result = invoke("--format", "sarif", "sub/bad.py")
    assert result.exit_code == 1
    log = json.loads(result.stdout)
    jsonschema.Draft4Validator(json.loads(SCHEMA.read_text(encoding="utf-8"))).validate(log)
    run = log["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == list(ALL_RULES)
    results = run["results"]
    assert [r["ruleId"] for r in results] == ["RC107", "RC002"]
    assert rules[results[0]["ruleIndex"]]["id"] == "RC107"
    location = results[0]["locations"][0]["physicalLocation"]
    assert location["artifactLocation"] == {"uri": "sub/bad.py", "uriBaseId": "%SRCROOT%"}
    assert location["region"] == {"startLine": 2, "startColumn": 1, "endLine": 2, "endColumn": 44}
    assert "fixes" not in results[0]
    replacement = results[1]["fixes"][0]["artifactChanges"][0]["replacements"][0]
    assert replacement["deletedRegion"] == {"startLine": 3, "startColumn": 6, "endLine": 3, "endColumn": 21}
    assert replacement["insertedContent"] == {"text": ""}


def test_github_format(project):
    write(project, "bad.py", SUPPRESS)
    result = invoke("--format", "github", "bad.py")
    assert result.exit_code == 1
    assert result.stdout == (
        "::warning file=bad.py,line=2,col=1,endLine=2,endColumn=44,title=RC107::"
        "`suppress_errors = True` hides compiler failures: dynamo falls back to eager with only a log warning\n"
    )


def test_output_format_alias_and_case(project):
    write(project, "bad.py", SUPPRESS)
    result = invoke("--output-format", "JSON", "bad.py")
    assert json.loads(result.stdout)[0]["code"] == "RC107"


def test_unknown_format_is_a_usage_error(project):
    result = invoke("--format", "xml", ".")
    assert result.exit_code == 2
    assert "xml" in result.stderr


def test_statistics_table(project):
    write(project, "a.py", SUPPRESS + UNUSED_NOQA)
    write(project, "b.py", SUPPRESS)
    result = invoke("--statistics", "a.py", "b.py")
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["count", "code", "name", "severity", "fixable"]
    assert lines[1].split() == ["2", "RC107", "suppress-errors", "warning", "0"]
    assert lines[2].split() == ["1", "RC002", "unused-suppression", "warning", "1"]
    assert lines[3].split() == ["3", "total", "1"]
    assert lines[4] == "(3 warnings)"


def test_statistics_as_json(project):
    write(project, "a.py", SUPPRESS + UNUSED_NOQA)
    result = invoke("--statistics", "--format", "json", "a.py")
    assert json.loads(result.stdout) == [
        {
            "code": "RC002",
            "name": "unused-suppression",
            "severity": "warning",
            "count": 1,
            "fixable": 1,
            "unsafe_fixable": 0,
        },
        {
            "code": "RC107",
            "name": "suppress-errors",
            "severity": "warning",
            "count": 1,
            "fixable": 0,
            "unsafe_fixable": 0,
        },
    ]


def test_colour_only_when_forced_and_never_with_no_color(project, monkeypatch):
    write(project, "bad.py", SUPPRESS)
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert "\x1b[" in invoke("bad.py").stdout
    monkeypatch.setenv("NO_COLOR", "1")
    assert "\x1b[" not in invoke("bad.py").stdout


# -- selection -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "args, codes",
    [
        (["--select", "RC002"], ["RC002"]),
        (["--select", "unused-suppression"], ["RC002"]),
        (["--select", "rc0"], ["RC002"]),
        (["--ignore", "RC107"], ["RC002"]),
        (["--ignore", "RC0"], ["RC107"]),
        (["--select", "RC002,RC107"], ["RC107", "RC002"]),
        (["--select", "RC002", "--select", "RC107"], ["RC107", "RC002"]),
        (["--select", "ALL", "--ignore", "suppress-errors"], ["RC002"]),
        (["--select", "RC002", "--extend-select", "RC107"], ["RC107", "RC002"]),
    ],
)
def test_select_ignore_extend_select(project, args, codes):
    write(project, "bad.py", SUPPRESS + UNUSED_IGNORE)
    result = invoke("--format", "json", *args, "bad.py")
    assert [d["code"] for d in json.loads(result.stdout)] == codes


def test_unknown_selector_exits_2_with_one_line(project):
    write(project, "bad.py", SUPPRESS)
    result = invoke("--select", "RC999", "bad.py")
    assert result.exit_code == 2
    assert result.stderr.startswith("regcomp-lint: error: unknown rule selector 'RC999'")
    assert len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.output


def test_cli_extend_select_and_ignore_add_to_the_config(project):
    write(project, "pyproject.toml", '[tool.regcomp-lint]\nselect = ["RC107"]\n')
    write(project, "bad.py", SUPPRESS + UNUSED_IGNORE)
    assert [d["code"] for d in json.loads(invoke("--format", "json", "bad.py").stdout)] == ["RC107"]
    extended = invoke("--format", "json", "--extend-select", "RC002", "bad.py")
    assert [d["code"] for d in json.loads(extended.stdout)] == ["RC107", "RC002"]
    ignored = invoke("--format", "json", "--ignore", "RC107", "bad.py")
    assert json.loads(ignored.stdout) == [] and ignored.exit_code == 0


def test_cli_select_replaces_the_config_selection(project):
    write(project, "pyproject.toml", '[tool.regcomp-lint]\nignore = ["RC002"]\n')
    write(project, "bad.py", SUPPRESS + UNUSED_IGNORE)
    assert [d["code"] for d in json.loads(invoke("--format", "json", "bad.py").stdout)] == ["RC107"]
    result = invoke("--format", "json", "--select", "RC002", "bad.py")
    assert [d["code"] for d in json.loads(result.stdout)] == ["RC002"]


# -- configuration ---------------------------------------------------------------------------
def test_pyproject_settings_apply(project):
    write(project, "pyproject.toml", '[tool.regcomp-lint]\nignore = ["RC107"]\n')
    write(project, "bad.py", SUPPRESS)
    result = invoke("bad.py")
    assert result.exit_code == 0


def test_config_option_reads_that_file(project):
    write(project, "settings/lint.toml", '[tool.regcomp-lint]\nselect = ["RC002"]\n')
    write(project, "bad.py", SUPPRESS)
    result = invoke("--config", "settings/lint.toml", "bad.py")
    assert result.exit_code == 0


@pytest.mark.parametrize(
    "toml, message",
    [
        ('[tool.regcomp-lint]\nselekt = ["RC1"]\n', "unknown key(s) in [tool.regcomp-lint]: selekt"),
        ('[tool.regcomp-lint]\nignore = ["RC998"]\n', "unknown rule selector 'RC998'"),
        ("[tool.regcomp-lint\nselect = [\n", "invalid TOML"),
        ('[tool.regcomp-lint]\nselect = "RC1" = 2\n', "invalid TOML"),
        ("[tool.regcomp-lint]\nignore = [1, 2]\n", "`ignore` must be a list of strings"),
    ],
)
def test_config_errors_exit_2_with_a_clear_line(project, toml, message):
    write(project, "pyproject.toml", toml)
    write(project, "ok.py", CLEAN)
    result = invoke("--config", "pyproject.toml", "ok.py")
    assert result.exit_code == 2
    assert result.stderr.startswith("regcomp-lint: error: ")
    assert message in result.stderr
    assert "Traceback" not in result.output
    assert result.stdout == ""


def test_config_file_that_does_not_exist(project):
    result = invoke("--config", "nope.toml", ".")
    assert result.exit_code == 2
    assert "config file not found: nope.toml" in result.stderr


def test_show_settings_prints_resolved_settings(project):
    write(project, "pyproject.toml", '[tool.regcomp-lint]\nper-file-ignores = {"tests/*" = ["RC107"]}\n')
    result = invoke("--show-settings", "--ignore", "RC002")
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    assert data["config_file"] == str(project / "pyproject.toml")
    assert data["ignore"] == ["RC002"]
    assert "RC002" not in data["enabled"] and "RC107" in data["enabled"]
    assert data["per-file-ignores"] == {"tests/*": ["RC107"]}


def test_show_settings_reports_config_errors(project):
    result = invoke("--show-settings", "--select", "nonsense")
    assert result.exit_code == 2
    assert "unknown rule selector 'nonsense'" in result.stderr


def test_version(project):
    result = invoke("--version")
    assert result.exit_code == 0
    assert result.stdout == f"regcomp-lint {__version__}\n"


# -- stdin -------------------------------------------------------------------------------------
def test_stdin_with_filename(project):
    result = invoke("-", "--stdin-filename", "train.py", input=SUPPRESS)
    assert result.exit_code == 1
    assert result.stdout.startswith("train.py:2:1: RC107")
    assert "2 | torch._dynamo.config.suppress_errors = True" in result.stdout


def test_stdin_filename_alone_reads_stdin(project):
    result = invoke("--stdin-filename", "train.py", "--format", "concise", input=SUPPRESS)
    assert result.exit_code == 1
    assert result.stdout.startswith("train.py:2:1: RC107")


def test_stdin_without_filename_is_shown_as_dash(project):
    result = invoke("--format", "concise", "-", input=SUPPRESS)
    assert result.stdout.startswith("-:2:1: RC107")


def test_stdin_filename_drives_per_file_ignores(project):
    write(project, "pyproject.toml", '[tool.regcomp-lint]\nper-file-ignores = {"scripts/*" = ["RC107"]}\n')
    ignored = invoke("-", "--stdin-filename", "scripts/train.py", input=SUPPRESS)
    assert ignored.exit_code == 0
    reported = invoke("-", "--stdin-filename", "train.py", input=SUPPRESS)
    assert reported.exit_code == 1


def test_stdin_bytes_are_decoded_like_a_file(project):
    data = "# -*- coding: latin-1 -*-\nname = 'é'\n".encode("latin-1") + SUPPRESS.encode()
    result = invoke("--format", "json", "-", input=data)
    assert json.loads(result.stdout)[0]["location"] == {"row": 4, "column": 1}


def test_stdin_fix_prints_the_fixed_code_and_reports_on_stderr(project):
    result = invoke("-", "--fix", input=SUPPRESS + UNUSED_NOQA)
    assert result.exit_code == 1
    assert result.stdout == SUPPRESS + "x = 1\n"
    assert "RC107" in result.stderr and "Found 2 findings (1 fixed, 1 remaining)." in result.stderr


def test_stdin_fix_with_nothing_to_fix_echoes_the_code(project):
    result = invoke("-", "--fix", input=CLEAN)
    assert result.exit_code == 0
    assert result.stdout == CLEAN


def test_stdin_diff(project):
    result = invoke("-", "--diff", "--stdin-filename", "t.py", input=UNUSED_NOQA)
    assert result.exit_code == 1
    assert "-x = 1  # noqa: RC107\n+x = 1\n" in result.stdout
    assert "--- a/t.py" in result.stdout


# -- fixes -----------------------------------------------------------------------------------
def test_fix_writes_the_file_and_exits_0_when_nothing_remains(project):
    path = write(project, "noqa.py", "import os\n" + UNUSED_NOQA)
    result = invoke("--fix", "noqa.py")
    assert path.read_text() == "import os\nx = 1\n"
    assert result.exit_code == 0
    assert result.stdout.splitlines()[-1] == "Found 1 finding (1 fixed, 0 remaining)."


def test_fix_reports_what_remains_and_exits_1(project):
    path = write(project, "bad.py", SUPPRESS + UNUSED_NOQA)
    result = invoke("--fix", "--format", "concise", "bad.py")
    assert result.exit_code == 1
    assert path.read_text() == SUPPRESS + "x = 1\n"
    assert result.stdout.splitlines() == [
        "bad.py:2:1: RC107 [warning] `suppress_errors = True` hides compiler failures: dynamo falls back to eager with only a log warning",
        "Found 2 findings (1 fixed, 1 remaining).",
    ]


def test_fix_keeps_crlf_bom_and_mode(project):
    path = project / "win.py"
    path.write_bytes(b"\xef\xbb\xbfimport os\r\nx = 1  # noqa: RC107\r\n")
    os.chmod(path, 0o640)
    result = invoke("--fix", "win.py")
    assert result.exit_code == 0
    assert path.read_bytes() == b"\xef\xbb\xbfimport os\r\nx = 1\r\n"
    assert (os.stat(path).st_mode & 0o777) == 0o640


def test_fix_refuses_to_overwrite_a_file_changed_meanwhile(project, monkeypatch):
    from regcomp_lint.lint import fix_files

    path = write(project, "noqa.py", UNUSED_NOQA)
    real_fix_source = fix_files.fix_source

    def edit_then_fix(text, filename, *args, **kwargs):
        Path(filename).write_text("x = 2  # saved by an editor meanwhile\n")
        return real_fix_source(text, filename, *args, **kwargs)

    monkeypatch.setattr(fix_files, "fix_source", edit_then_fix)
    result = invoke("--fix", "noqa.py")
    assert result.exit_code == 2
    assert "changed on disk since it was read" in result.stderr
    assert path.read_text() == "x = 2  # saved by an editor meanwhile\n"


def test_diff_prints_a_diff_and_does_not_write(project):
    path = write(project, "noqa.py", UNUSED_NOQA)
    result = invoke("--diff", "noqa.py")
    assert result.exit_code == 1
    assert path.read_text() == UNUSED_NOQA
    assert result.stdout == "--- a/noqa.py\n+++ b/noqa.py\n@@ -1 +1 @@\n-x = 1  # noqa: RC107\n+x = 1\n"
    assert "Would fix 1 finding in 1 file" in result.stderr


def test_diff_wins_over_fix(project):
    path = write(project, "noqa.py", UNUSED_NOQA)
    result = invoke("--fix", "--diff", "noqa.py")
    assert result.exit_code == 1
    assert path.read_text() == UNUSED_NOQA


def test_diff_with_nothing_to_fix_exits_0(project):
    write(project, "bad.py", SUPPRESS)
    result = invoke("--diff", "bad.py")
    assert result.exit_code == 0
    assert result.stdout == ""


def test_unsafe_fixes_need_the_flag(project):
    """RC101's "did you mean" backend fix is unsafe: shown, but applied only with --unsafe-fixes."""
    typo = 'import torch\nm = torch.compile(m, backend="inductr")\n'
    path = write(project, "typo.py", typo)
    shown = invoke("--format", "concise", "typo.py")
    assert shown.exit_code == 1 and "[*]" not in shown.stdout
    assert "fixable with --fix --unsafe-fixes" in shown.stdout
    assert "[*]" in invoke("--format", "concise", "--unsafe-fixes", "typo.py").stdout
    assert invoke("--fix", "typo.py").exit_code == 1
    assert path.read_text() == typo
    result = invoke("--fix", "--unsafe-fixes", "typo.py")
    assert result.exit_code == 0
    assert path.read_text() == typo.replace("inductr", "inductor")


def test_display_only_fixes_are_never_applied(project):
    path = write(project, "bad.py", SUPPRESS)
    invoke("--fix", "--unsafe-fixes", "bad.py")
    assert path.read_text() == SUPPRESS


# -- runner options --------------------------------------------------------------------------
def test_jobs_and_no_cache_reach_the_runner(project, monkeypatch):
    seen = {}
    real_run = runner.run

    def spy(paths, settings, **options):
        seen.update(options)
        return real_run(paths, settings, **options)

    monkeypatch.setattr(runner, "run", spy)
    write(project, "ok.py", CLEAN)
    assert invoke("--jobs", "2", "--no-cache", "ok.py").exit_code == 0
    assert seen["jobs"] == 2 and seen["use_cache"] is False
    assert invoke("ok.py").exit_code == 0
    assert seen["jobs"] is None and seen["use_cache"] is True


def test_jobs_must_be_positive(project):
    result = invoke("--jobs", "0", ".")
    assert result.exit_code == 2
    assert "--jobs" in result.stderr


def test_unreadable_file_is_an_error(project, monkeypatch):
    def failing_run(paths, settings, **options):
        return runner.RunResult(errors=["locked.py: Permission denied"], files=1)

    monkeypatch.setattr(runner, "run", failing_run)
    write(project, "locked.py", CLEAN)
    result = invoke("locked.py")
    assert result.exit_code == 2
    assert "regcomp-lint: error: locked.py: Permission denied" in result.stderr


def test_runner_warnings_go_to_stderr_without_changing_the_status(project, monkeypatch):
    def slow_run(paths, settings, **options):
        return runner.RunResult(files=1, warnings=["cache folder is read-only; running without the cache"])

    monkeypatch.setattr(runner, "run", slow_run)
    result = invoke(".")
    assert result.exit_code == 0
    assert result.stderr == "regcomp-lint: warning: cache folder is read-only; running without the cache\n"


def test_internal_error_is_short_and_asks_for_a_report(project, monkeypatch):
    def broken_run(paths, settings, **options):
        raise RuntimeError("boom")

    monkeypatch.setattr(runner, "run", broken_run)
    monkeypatch.delenv("REGCOMP_LINT_DEBUG", raising=False)
    result = invoke(".")
    assert result.exit_code == 2
    assert "regcomp-lint: internal error: RuntimeError: boom" in result.stderr
    assert "please report it" in result.stderr
    assert "Traceback" not in result.output


# -- the rule subcommand ---------------------------------------------------------------------
def test_rule_prints_the_page(project):
    result = invoke("rule", "RC107")
    assert result.exit_code == 0
    assert result.stdout == docs.render_page(ALL_RULES["RC107"], generated_note=False)
    assert result.stdout.startswith("# RC107 suppress-errors\n")
    assert "<!--" not in result.stdout  # the note for editors of rules/ is not for the terminal


@pytest.mark.parametrize("key", ["rc107", "suppress-errors"])
def test_rule_by_lowercase_code_or_name(project, key):
    assert invoke("rule", key).stdout.startswith("# RC107 suppress-errors")


def test_rule_all(project):
    result = invoke("rule", "--all")
    assert result.exit_code == 0
    for code, rule in ALL_RULES.items():
        assert f"# {code} {rule.name}\n" in result.stdout


def test_rule_json(project):
    result = invoke("rule", "RC002", "--format", "json")
    data = json.loads(result.stdout)
    assert data["code"] == "RC002" and data["name"] == "unused-suppression" and data["fix"] == "safe"
    assert "## What it does" in data["explanation"]
    assert data["examples"]["invalid"][0]["fixed"] == "x = 1\n"


def test_rule_all_json(project):
    data = json.loads(invoke("rule", "--all", "--format", "json").stdout)
    assert [r["code"] for r in data] == list(ALL_RULES)


def test_unknown_rule_exits_2_with_a_suggestion(project):
    result = invoke("rule", "suppress-erors")
    assert result.exit_code == 2
    assert "unknown rule 'suppress-erors'; did you mean RC107 (suppress-errors)?" in result.stderr


@pytest.mark.parametrize("args", [["rule"], ["rule", "RC107", "--all"]])
def test_rule_needs_exactly_one_of_code_or_all(project, args):
    result = invoke(*args)
    assert result.exit_code == 2
    assert "--all" in result.stderr


def test_a_path_named_like_the_subcommand_is_linted_when_written_as_a_path(project):
    write(project, "rule/bad.py", SUPPRESS)
    for args in (["./rule"], ["--", "rule"], ["rule/bad.py"]):
        result = invoke("--format", "concise", *args)
        assert result.exit_code == 1, args
        assert "bad.py:2:1: RC107" in result.stdout


def test_options_may_follow_paths(project):
    write(project, "bad.py", SUPPRESS)
    result = invoke("bad.py", "--format", "json")
    assert json.loads(result.stdout)[0]["code"] == "RC107"


def test_help_lists_options_and_the_rule_command(project):
    result = invoke("--help")
    assert result.exit_code == 0
    assert result.stdout.startswith("Usage: regcomp-lint [OPTIONS] [PATH]...\n       regcomp-lint COMMAND [ARGS]...\n")
    for text in ("--select", "--stdin-filename", "--fix", "--diff", "rule"):
        assert text in result.stdout


def test_rule_help_usage_line(project):
    result = invoke("rule", "--help")
    assert result.exit_code == 0
    assert result.stdout.startswith("Usage: regcomp-lint rule [OPTIONS] CODE|NAME\n")


# -- real processes --------------------------------------------------------------------------
def run_cli(*args: str, cwd: Path, input: bytes | None = None, env: dict | None = None):
    exe = VENV_BIN / "regcomp-lint"
    if not exe.exists():
        pytest.skip("console script not installed (pip install -e .)")
    full_env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")} | (env or {})
    return subprocess.run(
        [str(exe), *args], cwd=cwd, input=input, capture_output=True, env=full_env, timeout=60, check=False
    )


def test_console_script_lints_a_file(tmp_path):
    write(tmp_path, "bad.py", SUPPRESS)
    proc = run_cli("--format", "concise", "bad.py", cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stdout.decode().startswith("bad.py:2:1: RC107")
    assert proc.stderr == b""


def test_console_script_reads_stdin_and_fixes(tmp_path):
    proc = run_cli("-", "--fix", "--stdin-filename", "t.py", cwd=tmp_path, input=UNUSED_NOQA.encode())
    assert proc.returncode == 0
    assert proc.stdout == b"x = 1\n"


def test_console_script_errors_without_traceback(tmp_path):
    write(tmp_path, "pyproject.toml", "[tool.regcomp-lint]\nbogus = 1\n")
    proc = run_cli("x.py", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.decode().startswith("regcomp-lint: error: ")
    assert b"Traceback" not in proc.stderr


def test_python_dash_m(tmp_path):
    write(tmp_path, "bad.py", SUPPRESS)
    proc = subprocess.run(
        [sys.executable, "-m", "regcomp_lint", "--format", "json", "bad.py"],
        cwd=tmp_path,
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 1
    assert json.loads(proc.stdout)[0]["code"] == "RC107"


def test_lint_path_imports_neither_libcst_nor_torch(tmp_path):
    write(tmp_path, "bad.py", SUPPRESS)
    code = (
        "import sys\n"
        "from regcomp_lint.cli.commands import main\n"
        "try:\n"
        "    main(['--no-cache', '--format', 'text', 'bad.py'], standalone_mode=False)\n"
        "finally:\n"
        "    heavy = sorted(m for m in ('libcst', 'torch', 'accelerate', 'transformers') if m in sys.modules)\n"
        "    print('HEAVY', heavy, file=sys.stderr)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, timeout=60, check=False)
    assert b"HEAVY []" in proc.stderr, proc.stderr.decode()


def test_rule_list_is_one_line_per_rule(project):
    result = invoke("rule", "--list")
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert [line.split()[0] for line in lines] == list(ALL_RULES)
    rc501 = next(line for line in lines if line.startswith("RC501"))
    assert rc501.split()[1:4] == ["info", "unsafe", "prefer-regional-compilation"]


def test_concise_and_statistics_show_fixes_that_need_unsafe_fixes(project):
    write(project, "b.py", "import torch\nm = torch.compile(torch.nn.Linear(2, 2), backend='inducter')\n")
    concise = invoke("--format", "concise", "b.py").stdout.splitlines()[0]
    assert concise.endswith("(fixable with --unsafe-fixes)")
    stats = invoke("--statistics", "b.py").stdout.splitlines()
    assert stats[0].endswith("fixable  with --unsafe-fixes")
    assert stats[1].split()[-2:] == ["0", "1"]


def test_a_missing_path_is_not_reported_as_a_clean_run(project):
    result = invoke("nope.py")
    assert result.exit_code == 2
    assert result.stdout == "No files were linted (see the errors below).\n"
    assert "nope.py: no such file or directory" in result.stderr


def test_ignore_all_does_not_claim_all_checks_passed(project):
    write(project, "bad.py", SUPPRESS)
    result = invoke("--ignore", "ALL", "bad.py")
    assert "All checks passed" not in result.stdout
    assert result.stdout.startswith("No rules are enabled")
    assert "no rules are enabled" in result.stderr
