"""``edits.append_keyword``: adding an argument in the call's own layout."""

from __future__ import annotations

import ast

import pytest

from regcomp_lint.analysis.file_context import FileContext
from regcomp_lint.checks.text_edits import append_keyword
from regcomp_lint.files.source import SourceFile, apply_edits


def appended(src: str, text: str = "k=True") -> str:
    ctx = FileContext(SourceFile("e.py", src), ast.parse(src))
    call = next(n for n in ast.walk(ctx.tree) if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "f")
    out = apply_edits(src, append_keyword(ctx, call, text))
    ast.parse(out)
    return out


@pytest.mark.parametrize(
    "src, expected",
    [
        ("f()\n", "f(k=True)\n"),
        ("f(a)\n", "f(a, k=True)\n"),
        ("f(a, b=1, )\n", "f(a, b=1, k=True, )\n"),
        ("f(*args, **kw)\n", "f(*args, **kw, k=True)\n"),
        ("x = f(a,\n      b=1)\n", "x = f(a,\n      b=1, k=True)\n"),
        ("f(\n    a,\n    b=1,\n)\n", "f(\n    a,\n    b=1,\n    k=True,\n)\n"),
        ("f(\n    a,\n    b=1\n)\n", "f(\n    a,\n    b=1,\n    k=True\n)\n"),
        ("f(\n    a,\n    b=1,  # note\n)\n", "f(\n    a,\n    b=1,  # note\n    k=True,\n)\n"),
        ("f(\r\n    a,\r\n)\r\n", "f(\r\n    a,\r\n    k=True,\r\n)\r\n"),
        ("g(f(a), 'é')\n", "g(f(a, k=True), 'é')\n"),
    ],
)
def test_layouts(src, expected):
    assert appended(src) == expected
