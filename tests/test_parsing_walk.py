"""parsing.walk and parsing.children give what ast.walk and ast.iter_child_nodes give, in order."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from regcomp_lint.files.parsing import children, walk

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = sorted((ROOT / "fixtures" / "fix").glob("*/input.py"))[:12] + [ROOT / "regcomp_lint" / "files" / "parsing.py"]

EXTRA = """
async def f(a, /, b=1, *c, d: int = 2, **e) -> "x":
    async with g() as (h, i):
        async for j in k:
            yield [m async for m in n if m] or {o: p for o, p in q} or {*r} or (s := t)
    match u:
        case [1, *rest] | {"k": v, **kw} | Point(x=0) as w if w:
            pass
    try:
        del x[1:2, ::3], y.z
    except* (ValueError, TypeError) as err:
        raise RuntimeError(f"{err!r:>{width}}") from None
    global gg
    lambda *a, **k: (yield)
"""


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.parent.name)
def test_same_nodes_in_the_same_order(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8-sig"))
    _check(tree)


def test_every_kind_of_node() -> None:
    _check(ast.parse(EXTRA))


def _check(tree: ast.AST) -> None:
    expected = list(ast.walk(tree))
    assert [id(n) for n in walk(tree)] == [id(n) for n in expected]
    for node in expected:
        assert [id(c) for c in children(node)] == [id(c) for c in ast.iter_child_nodes(node)]
