"""Suppression comments: parsing of codes, where they apply, and RC002/RC003."""

from regcomp_lint.api import lint_source
from regcomp_lint.files.source import split_lines
from regcomp_lint.lint.suppressions import parse

BAD = "import torch\ntorch._dynamo.config.suppress_errors = True"


def codes(src):
    return [(d.code, d.location.row) for d in lint_source(src, "t.py")]


def test_typo_code_stays_one_unknown_code():
    sups = parse("x = 1  # noqa: RC1O1, RC999\n", split_lines("x = 1  # noqa: RC1O1, RC999\n"))
    assert sups[0].codes == ["RC1O1", "RC999"]
    found = lint_source("x = 1  # noqa: RC1O1, RC999\n", "t.py")
    assert [d.code for d in found] == ["RC003"]
    assert "RC1O1, RC999" in found[0].message


def test_noqa_with_explanation_text_after_codes():
    assert codes(BAD + "  # noqa: RC107 intentional for the benchmark\n") == []


def test_bare_noqa_silences_and_is_never_unused():
    assert codes(BAD + "  # noqa\n") == []
    assert codes("x = 1  # noqa\n") == []


def test_foreign_codes_are_left_alone():
    assert codes(BAD + "  # noqa: E501\n") == [("RC107", 2)]


def test_regcomp_ignore_above_multiline_statement():
    body = 'from accelerate import Accelerator\naccelerator = Accelerator(\n    mixed_precision="bf16",\n    dynamo_backend="inductor",\n)\n'
    assert ("RC105", 4) in codes(body)  # the finding is on the keyword's line, not the statement's
    lines = body.split("\n")
    suppressed = "\n".join([lines[0], "# regcomp: ignore[RC105]", *lines[1:]])
    assert all(code != "RC105" for code, _ in codes(suppressed))
    assert all(code != "RC002" for code, _ in codes(suppressed))


def test_regcomp_ignore_two_lines_above_does_not_apply():
    src = "import torch\n# regcomp: ignore[RC107]\n\n" + BAD.split("\n")[1] + "\n"
    assert sorted(codes(src)) == [("RC002", 2), ("RC107", 4)]


def test_noqa_on_other_line_does_not_apply():
    src = "import torch  # noqa: RC107\ntorch._dynamo.config.suppress_errors = True\n"
    assert sorted(codes(src)) == [("RC002", 1), ("RC107", 2)]


def test_hash_inside_string_is_not_a_comment():
    assert codes('s = "# noqa: RC101"\n') == []


def test_disabled_rule_code_is_not_reported_unused():
    from regcomp_lint.lint.config import Settings

    found = lint_source("x = 1  # noqa: RC107\n", "t.py", Settings(ignore=("RC107",)))
    assert found == []
