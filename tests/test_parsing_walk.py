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


def test_kept_walks_inside_shared_parses() -> None:
    """Inside ``shared_parses`` a scope's walk (and a block's ``kept_walk``) is made once and
    handed out again, the same nodes in the same order; outside, nothing is kept."""
    from regcomp_lint.analysis.training_loops import own_nodes, scope_nodes
    from regcomp_lint.files import parsing

    tree = ast.parse(EXTRA)
    function = tree.body[0]
    assert isinstance(function, ast.AsyncFunctionDef)
    expected = [id(n) for n in ast.walk(function)]
    own = [id(n) for n in own_nodes(function.body)]
    assert [id(n) for n in scope_nodes(function.body)] == own
    assert parsing._walked is None
    with parsing.shared_parses():
        for _ in range(2):
            assert [id(n) for n in walk(function)] == expected
            assert [id(n) for n in scope_nodes(function.body)] == own
        assert parsing._walked is not None
        assert len(parsing._walked) == 2  # one walk of the function, one of its body
        assert [id(n) for n in walk(function.body[0])] == [id(n) for n in ast.walk(function.body[0])]
        assert len(parsing._walked) == 2  # (a statement's walk is not kept)
    assert parsing._walked is None
