"""The lint view finds, for every libcst node, the ``ast`` expression and statement an
``ast.walk``-ordered index finds (breadth first: the first expression inside a node's range).

``LintView`` builds its index in one depth-first walk that ranks expressions breadth first
(depth, then pre-order); these tests compare it with the reference built from ``ast.walk``, for
every node of the fix fixtures and of code made for the corners: a class (whose ``lpar`` is its
bases' parenthesis), non-ASCII text before expressions, f-strings (whose parts share a range).
"""

from __future__ import annotations

import ast
from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper

from regcomp_lint.codemod import lint_view as lv
from regcomp_lint.codemod.source_metadata import SourceMetadata, resolve_scopes
from regcomp_lint.codemod.tree import Tree, clear_find_cache
from regcomp_lint.files.source import decode_source

ROOT = Path(__file__).resolve().parents[2]

CORNERS = {
    "class": (
        "class A:\n    def f(self):\n        self.rank = g(h)\n    @torch.no_grad()\n    def e(self):\n        pass\n"
        "class C(B):\n    x: int = 1\n"
    ),
    "non_ascii": "s = 'é' + f(x)  # ü\nt = {'ключ': g(y)['ü'].z}\n",
    "fstrings": "a = f'{x!r:>{w}} and {y.z(1)}' f'{q}'\nb = (c)(d)\n",
    "nested": "x = [f(g(h(i))) for i in range(3) if i]\ny = (lambda a: a + b)(c)\ndef f(a=b, *c, d=e, **k): return a\n",
}


def _reference(source, parsed: ast.Module, kinds):
    spans: dict = {}
    for index, node in enumerate(n for n in ast.walk(parsed) if isinstance(n, kinds)):
        first = lv._start(source, node)
        spans.setdefault(first[0], []).append((index, first, lv._end(source, node), node))
    return spans


def _compare(text: str) -> None:
    module = cst.parse_module(text)
    metadata = SourceMetadata(module)
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    metadata.seed(wrapper)
    resolve_scopes(wrapper)
    tree = Tree(wrapper, None, text=metadata.code, preorder=metadata.preorder())
    try:
        view = lv.LintView(tree)
        assert view.parsed is not None
        source = view._source
        statements = {lv._start(source, n): n for n in ast.walk(view.parsed) if isinstance(n, ast.stmt)}
        askable = _reference(source, view.parsed, lv._ASKABLE)
        every = _reference(source, view.parsed, (ast.expr,))
        for node in metadata.parents:
            assert view.expression_at(node) is view._outermost(node, askable)
            assert view.any_expression_at(node) is view._outermost(node, every)
            span = metadata.positions[node]
            assert view.statement_at(node) is statements.get((span.start.line, span.start.column))
    finally:
        clear_find_cache()


@pytest.mark.parametrize("name", sorted(CORNERS))
def test_corners(name: str) -> None:
    _compare(CORNERS[name])


def test_fix_fixtures() -> None:
    for path in sorted((ROOT / "fixtures" / "fix").glob("*/input.py")):
        _compare(decode_source(path.read_bytes()))
