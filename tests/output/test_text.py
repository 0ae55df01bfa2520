"""Text and concise formats: header, snippet, caret under the right cells, markers, summary."""

from __future__ import annotations

from regcomp_lint.diagnostics import Applicability
from regcomp_lint.output import RenderContext, render
from regcomp_lint.output.text import caret_span, display_width, printable
from tests.output.helpers import diag, fix


def ctx(**kw) -> RenderContext:
    return RenderContext(cwd="/nowhere", **kw)


def test_snippet_and_caret_from_in_memory_source():
    d = diag(message="bad backend", filename="t.py", start=(2, 5), end=(2, 8))
    out = render("text", [d], ctx(sources={"t.py": "x = 1\nm = foo(y)\n"}))
    assert out == ("t.py:2:5: RC107 [error] bad backend\n  |\n2 | m = foo(y)\n  |     ^^^\n\nFound 1 error.\n")


def test_snippet_read_from_disk_with_its_encoding(tmp_path):
    path = tmp_path / "latin.py"
    path.write_bytes("# coding: latin-1\ns = 'é'; bad()\n".encode("latin-1"))
    d = diag(filename=str(path), start=(2, 10), end=(2, 15))  # `bad()`, columns in characters
    out = render("text", [d], ctx())
    assert "2 | s = 'é'; bad()\n  | " + " " * 9 + "^^^^^\n" in out


def test_unreadable_source_prints_no_snippet():
    out = render("text", [diag(filename="/does/not/exist.py")], ctx())
    assert out.splitlines()[0] == "/does/not/exist.py:1:1: RC107 [error] msg"
    assert "|" not in out


def test_caret_with_tabs_wide_characters_and_multiline_span():
    line = "\tx = '漢字' + bad"
    start, width = caret_span(line, diag(start=(1, 13), end=(1, 16)))
    shown = line.expandtabs(4)
    assert display_width(shown[: shown.index("bad")]) == start and width == 3
    # a span that goes on to later lines is underlined to the end of this one
    assert caret_span("call(", diag(start=(1, 1), end=(3, 2))) == (0, 5)
    # an empty span still gets one caret; a column past the end is clamped
    assert caret_span("abc", diag(start=(1, 4), end=(1, 4))) == (3, 1)
    assert caret_span("abc", diag(start=(1, 9), end=(1, 12))) == (3, 1)


def test_control_characters_cannot_reach_the_terminal():
    assert printable("a\x1b[31mb\tc") == "a\ufffd[31mb\tc"


def test_fix_markers():
    safe = diag(fix=fix(Applicability.SAFE))
    unsafe = diag(fix=fix(Applicability.UNSAFE))
    display = diag(fix=fix(Applicability.DISPLAY))
    text = render("text", [safe, unsafe, display], ctx())
    headers = [line for line in text.splitlines() if line.startswith("a.py:")]
    assert headers == [
        "a.py:1:1: RC107 [error] msg (fixable)",
        "a.py:1:1: RC107 [error] msg (fixable with --unsafe-fixes)",
        "a.py:1:1: RC107 [error] msg",
    ]
    concise = render("concise", [safe, unsafe, display], ctx()).splitlines()
    assert concise[:3] == [
        "a.py:1:1: RC107 [error] [*] msg",
        "a.py:1:1: RC107 [error] msg (fixable with --unsafe-fixes)",
        "a.py:1:1: RC107 [error] msg",
    ]
    concise_unsafe = render("concise", [safe, unsafe, display], ctx(unsafe_fixes=True)).splitlines()
    assert concise_unsafe[:2] == ["a.py:1:1: RC107 [error] [*] msg", "a.py:1:1: RC107 [error] [*] msg"]


def test_paths_are_shown_relative_to_the_current_folder(tmp_path):
    inside = tmp_path / "sub" / "a.py"
    out = render("concise", [diag(filename=str(inside))], RenderContext(cwd=str(tmp_path)))
    assert out.startswith("sub/a.py:1:1: RC107")


def test_colour_codes_only_when_asked():
    plain = render("text", [diag()], ctx(sources={"a.py": "x\n"}))
    coloured = render("text", [diag()], ctx(sources={"a.py": "x\n"}, color=True))
    assert "\x1b[" not in plain and "\x1b[1;31mRC107\x1b[0m" in coloured
