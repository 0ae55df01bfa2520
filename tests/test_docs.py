"""Rule pages: generated from the rule classes; ``rules/`` must match the generator exactly.

When a test here fails after you changed a rule, regenerate the pages:

    python -m regcomp_lint.lint.rule_docs --write
"""

from __future__ import annotations

import pytest

from regcomp_lint.checks import ALL_RULES
from regcomp_lint.checks.base import DOC_SECTIONS, Invalid, Rule
from regcomp_lint.diagnostics import Applicability, Severity
from regcomp_lint.lint import rule_docs as docs

STALE = f"rules/ is out of date: run `{docs.REGENERATE}`"


@pytest.mark.parametrize("code", list(ALL_RULES))
def test_rule_page_in_rules_folder_is_up_to_date(code):
    path = docs.RULES_DIR / f"{code}.md"
    assert path.is_file(), f"{path} is missing; {STALE}"
    assert path.read_text(encoding="utf-8") == docs.render_page(ALL_RULES[code]), f"{path} differs; {STALE}"


def test_index_is_up_to_date():
    path = docs.RULES_DIR / "README.md"
    assert path.is_file() and path.read_text(encoding="utf-8") == docs.render_index(), STALE


def test_no_page_for_a_code_that_is_not_a_rule():
    orphans = [p.name for p in docs.RULES_DIR.iterdir() if docs.PAGE_NAME.match(p.name) and p.stem not in ALL_RULES]
    assert not orphans, f"pages for codes that are not rules: {orphans}; {STALE}"


def test_check_reports_nothing_for_the_repository():
    assert docs.stale_files(docs.RULES_DIR) == []


class Example(Rule):
    """## What it does
    Finds `thing`.

    ## Why is this bad
    Because.

    ## Example
    ```python
    thing()
    ```

    ## Use instead
    ```python
    other()
    ```

    ## Fix safety
    Unsafe: `other` differs.

    ## References
    - [a link](https://example.org)
    """

    code = "RC999"
    name = "example-rule"
    message = "`thing` | found"
    severity = Severity.WARNING
    fix_applicability = Applicability.UNSAFE
    graph_break_ids = ("GB0059", "GB0124")
    valid = ["other()\n"]
    invalid = [Invalid("thing()\n", fixed="other()\n"), Invalid("thing(); thing()\n", count=2)]


def test_page_has_title_metadata_sections_and_examples():
    page = docs.render_page(Example)
    assert page.startswith("# RC999 example-rule\n")
    assert "| Code | `RC999` |" in page
    assert "| Name | `example-rule` |" in page
    assert "| Fix | unsafe (applied by `--fix --unsafe-fixes`) |" in page
    assert "| torch graph-break ids | `GB0059`, `GB0124` |" in page
    assert "| Message | `thing` \\| found |" in page
    positions = [page.index(f"## {section}") for section in DOC_SECTIONS]
    assert positions == sorted(positions)
    examples = page[page.index("## Examples checked by the tests") :]
    assert "### Reported\n\n```python\nthing()\n```\n\nAfter the fix:\n\n```python\nother()\n```" in examples
    assert "Reported (2 findings):" in examples
    assert "### Not reported\n\n```python\nother()\n```" in examples
    assert page.endswith("```\n") and not page.endswith("\n\n")


def test_rule_without_fix_or_graph_breaks():
    page = docs.render_page(ALL_RULES["RC001"])
    assert "| Fix | none |" in page
    assert "graph-break" not in page


def test_code_blocks_survive_backticks_in_examples():
    class Fenced(Example):
        """## What it does\nx"""

        invalid = [Invalid('s = """\n```\n"""\n')]

    page = docs.render_page(Fenced)
    assert '````python\ns = """\n```\n"""\n````' in page


def test_index_lists_every_rule_with_summary_and_fix():
    index = docs.render_index({"RC999": Example, "RC107": ALL_RULES["RC107"]})
    assert "| [RC999](RC999.md) | `example-rule` | warning | Finds `thing`. | unsafe |" in index
    assert f"| [RC107](RC107.md) | `suppress-errors` | warning | {ALL_RULES['RC107'].summary()} | display |" in index


def test_write_then_check_round_trip(tmp_path):
    (tmp_path / "RC998.md").write_text("stale page of a removed rule\n")
    (tmp_path / "notes.txt").write_text("not ours\n")
    rules = {"RC999": Example}
    assert docs.stale_files(tmp_path, rules) == [
        "RC999.md: missing",
        "README.md: missing",
        "RC998.md: page for a code that is not a rule",
    ]
    written = docs.write(tmp_path, rules)
    assert written == ["RC999.md", "README.md", "RC998.md (removed)"]
    assert docs.stale_files(tmp_path, rules) == []
    assert (tmp_path / "notes.txt").exists(), "files the generator does not own are left alone"
    (tmp_path / "RC999.md").write_text("edited by hand\n")
    assert docs.stale_files(tmp_path, rules) == ["RC999.md: out of date"]
    assert docs.write(tmp_path, rules) == ["RC999.md"]
    assert docs.write(tmp_path, rules) == []


def test_main_check_exits_1_when_stale_and_write_fixes_it(tmp_path, capsys):
    assert docs.main(["--check", "--dir", str(tmp_path)]) == 1
    assert "python -m regcomp_lint.lint.rule_docs --write" in capsys.readouterr().err
    assert docs.main(["--write", "--dir", str(tmp_path)]) == 0
    assert docs.main(["--check", "--dir", str(tmp_path)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([f"{c}.md" for c in ALL_RULES] + ["README.md"])


def test_lookup_by_code_name_and_suggestion():
    assert docs.lookup("rc107") is ALL_RULES["RC107"]
    assert docs.lookup("suppress-errors") is ALL_RULES["RC107"]
    with pytest.raises(docs.UnknownRule, match=r"did you mean RC107 \(suppress-errors\)\?"):
        docs.lookup("suppress-erors")
    with pytest.raises(docs.UnknownRule, match=r"did you mean .*RC107 \(suppress-errors\)"):
        docs.lookup("rc1o7")
    with pytest.raises(docs.UnknownRule, match="unknown rule 'zzz' \\(list them all"):
        docs.lookup("zzz")


def test_rule_json_shape():
    data = docs.rule_json(Example)
    assert data["code"] == "RC999" and data["fix"] == "unsafe" and data["graph_break_ids"] == ["GB0059", "GB0124"]
    assert data["examples"]["invalid"][0] == {"code": "thing()\n", "fixed": "other()\n", "count": 1}


def test_readme_rule_table_is_up_to_date():
    from regcomp_lint.lint.rule_docs import README_END, README_PATH, README_START, sync_readme

    text = README_PATH.read_text(encoding="utf-8")
    assert README_START in text and README_END in text, "README.md lost its rule-table markers"
    assert sync_readme(text) == text, "README rule table is stale: run `python -m regcomp_lint.lint.rule_docs --write`"
    for code in ALL_RULES:
        assert f"[{code}](rules/{code}.md)" in text
