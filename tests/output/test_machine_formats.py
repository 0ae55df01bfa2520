"""JSON, GitHub annotations, statistics and the format registry."""

from __future__ import annotations

import json

import pytest

from regcomp_lint.diagnostics import Applicability
from regcomp_lint.output import FORMATS, RenderContext, render, statistics
from regcomp_lint.output.github import escape_data, escape_property
from tests.output.helpers import diag, fix


def test_registry_knows_every_format_and_rejects_others():
    assert set(FORMATS) == {"text", "concise", "json", "sarif", "github"}
    for name in FORMATS:
        assert isinstance(render(name, [diag()], RenderContext()), str)
    with pytest.raises(ValueError, match="unknown output format 'xml'"):
        render("xml", [], RenderContext())


def test_json_round_trips_through_diagnostic_to_json():
    d = diag(message="é", fix=fix(Applicability.UNSAFE, content="new", start=(1, 1), end=(1, 3)))
    data = json.loads(render("json", [d], RenderContext()))
    assert data == [d.to_json()]
    assert data[0]["fix"]["applicability"] == "unsafe"


def test_github_escaping_rules():
    assert escape_data("50% done\r\nnext") == "50%25 done%0D%0Anext"
    assert escape_property("a,b:c%\n") == "a%2Cb%3Ac%25%0A"


def test_github_line_escapes_file_and_message(tmp_path):
    d = diag(message="line one\nline 100%", filename=str(tmp_path / "we,ird:name.py"), start=(3, 4), end=(5, 6))
    out = render("github", [d], RenderContext(cwd=str(tmp_path)))
    assert (
        out
        == "::error file=we%2Cird%3Aname.py,line=3,col=4,endLine=5,endColumn=6,title=RC107::line one%0Aline 100%25\n"
    )


def test_github_without_findings_prints_nothing():
    assert render("github", [], RenderContext()) == ""


def test_statistics_rows_sorted_by_count_then_code():
    found = [
        diag(code="RC002", name="unused-suppression", fix=fix()),
        diag(),
        diag(),
        diag(code="RC001", name="syntax-error"),
    ]
    rows = statistics.rows(found, RenderContext())
    assert [(r["code"], r["count"], r["fixable"]) for r in rows] == [("RC107", 2, 0), ("RC001", 1, 0), ("RC002", 1, 1)]


def test_statistics_without_findings():
    assert statistics.render([], RenderContext()) == "All checks passed!\n"
    assert statistics.render([], RenderContext(), as_json=True) == "[]\n"
