"""``--add-noqa``: every current finding silenced where it is, and nothing else changed."""

from __future__ import annotations

from click.testing import CliRunner

from regcomp_lint.cli.commands import main
from regcomp_lint.lint.add_noqa import add_noqa_text
from tests.output.helpers import diag

SCRIPT = (
    "import torch\n"
    "torch._dynamo.config.suppress_errors = True  # keep going\n"
    'm = torch.compile(torch.nn.Linear(2, 2), backend="inducter")  # noqa: E501\n'
)


def test_adds_to_a_plain_line_and_merges_into_an_existing_noqa():
    text = "a = 1\nb = 2  # noqa: E501\n"
    new, added, skipped = add_noqa_text(text, [diag("RC107", start=(1, 1)), diag("RC101", start=(2, 1))])
    assert new == "a = 1  # noqa: RC107\nb = 2  # noqa: E501, RC101\n"
    assert (added, skipped) == (2, 0)


def test_a_line_inside_a_string_or_continued_is_left_alone():
    text = 's = """\nx\n"""\ny = 1 + \\\n    2\n'
    new, added, skipped = add_noqa_text(text, [diag("RC107", start=(2, 1)), diag("RC107", start=(4, 1))])
    assert new == text
    assert (added, skipped) == (0, 2)


def test_tool_findings_are_not_silenced():
    new, added, _ = add_noqa_text("x = 1  # noqa: RC107\n", [diag("RC002", start=(1, 8))])
    assert added == 0 and new == "x = 1  # noqa: RC107\n"


def test_cli_then_the_next_run_is_clean(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "t.py").write_text(SCRIPT, encoding="utf-8")
    runner = CliRunner()
    result = runner.invoke(main, ["--add-noqa", "--no-cache", "t.py"])
    assert result.exit_code == 0
    assert "Added 2 noqa directives in 1 file." in result.stderr
    lines = (tmp_path / "t.py").read_text(encoding="utf-8").splitlines()
    assert lines[1].endswith("# keep going  # noqa: RC107") and lines[2].endswith("# noqa: E501, RC101")
    again = runner.invoke(main, ["--no-cache", "t.py"])
    assert again.exit_code == 0 and again.stdout == "All checks passed!\n"


def test_cli_refuses_stdin():
    result = CliRunner().invoke(main, ["--add-noqa", "-"], input="x = 1\n")
    assert result.exit_code == 2 and "stdin" in result.stderr
