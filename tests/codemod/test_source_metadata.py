"""``SourceMetadata`` gives exactly what libcst's ParentNodeProvider and PositionProvider give.

The fixer reads parents and positions from one printing of the module instead of libcst's two
passes (issue 16); these tests compare the two on every fixture and on code made to hit the
corners: node types whose ``children`` order differs from their printing order, Windows and old
Mac line breaks, a missing final newline, an empty file, comments inside brackets.
"""

from __future__ import annotations

import gc
from importlib.metadata import version
from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import (
    ExpressionContextProvider,
    MetadataWrapper,
    ParentNodeProvider,
    PositionProvider,
    ScopeProvider,
)

from regcomp_lint.codemod.source_metadata import SourceMetadata, release_scopes, resolve_scopes
from regcomp_lint.codemod.tree import Tree, find_all

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = sorted((ROOT / "fixtures").rglob("*.py"))

_LIBCST = tuple(int(part) for part in version("libcst").split(".")[:2])

CORNERS = {
    "aliases": "import torch.nn as nn\nfrom a import (b as  c,  # why\n  d as e)\n",
    "del": "del  (a,  # one\n  b), c\ndel x[1]\n",
    "slash": "def f(a, /, b, *, c=1, **k):\n    return a\ndef g(a, /  , b): pass\nlambda x, /: x\n",
    "match": (
        "match p:\n    case [1, *rest] | (2, 3) as q if q:\n        pass\n"
        "    case {'k': v, **kw}:\n        pass\n    case Point(x=0, y=_) | None:\n        pass\n"
    ),
    "types": "type Alias[T: int, *Ts, **P] = list[T]\ndef f[T](x: T) -> T: ...\nclass C[T]: pass\n",
    "strings": 'x = f"{a!r:>{w}} {b=}" "tail" \'q\'\ny = b"\\x00" rb"raw"\n',
    "crlf": "def f(x):\r\n    # c\r\n    return (x +\r\n            1)\r\n",
    "cr": "a = 1\rb = (2,\r 3)\r",
    "no_final_newline": "if a:\n    b = 1",
    "empty": "",
    "blank": "\n\n",
    "tabs": "if a:\n\tif b:\n\t\tc = [\n\t\t\t1,\n\t\t]\n",
    "continuation": "x = 1 + \\\n    2\nwith (open(a) as f, open(b) as g):\n    pass\n",
    "decorators": "@a.b(c)\n# between\n@d\nasync def f():\n    async for x in y:\n        await z\n",
    "try_star": "try:\n    pass\nexcept* ValueError as e:\n    raise\nelse:\n    pass\nfinally:\n    pass\n",
    "comprehensions": "a = [x for x in y if x]\nb = {k: v for k, v in z}\nc = {x async for x in w}\nd = (i for i in q)\n",
    "walrus_star": "if (n := len(a)) > 1:\n    print(*a, **k, sep='')\nglobal g\nnonlocal h\n",
    "annotations": (
        "import typing as t\nfrom .core import Context\ndef f(x: 'Context', y: t.Optional['Context'] = None) -> 'Context':\n"
        "    return t.cast('Context', x)\nclass C(t.Generic[t.TypeVar('T')]):\n    a: 'C'\n"
    ),
}


def _compare(text: str) -> None:
    module = cst.parse_module(text)
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    parents = wrapper.resolve(ParentNodeProvider)
    positions = wrapper.resolve(PositionProvider)
    ours = SourceMetadata(module)
    assert ours.code == module.code
    assert dict(ours.parents) == dict(parents)
    assert len(ours.positions) == len(positions)
    assert all(ours.positions[node] == where for node, where in positions.items())
    assert all(ours.positions.get(node) == positions.get(node) for node in list(parents)[:50])
    # each node's children in the order of libcst's ``children`` (find_all's order)
    ours_children: dict[cst.CSTNode, list[cst.CSTNode]] = {}
    for child, parent in ours.parents.items():
        ours_children.setdefault(parent, []).append(child)
    for parent, children in ours_children.items():
        assert children == list(parent.children)


@pytest.mark.parametrize("name", sorted(CORNERS))
def test_corners(name: str) -> None:
    _compare(CORNERS[name])


def _compare_files(paths: list[Path]) -> int:
    compared = 0
    for path in paths:
        text = path.read_text(encoding="utf-8", errors="replace")
        try:
            cst.parse_module(text)
        except Exception:  # (fixtures of bad input)
            continue
        _compare(text)
        compared += 1
    return compared


def test_fix_fixtures() -> None:
    assert _compare_files(sorted((ROOT / "fixtures" / "fix").glob("*/input.py"))) > 30


@pytest.mark.slow
def test_every_fixture() -> None:
    assert _compare_files(FIXTURES) > 100


def test_seeded_wrapper_answers_with_ours() -> None:
    module = cst.parse_module(CORNERS["aliases"])
    ours = SourceMetadata(module)
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    ours.seed(wrapper)
    assert wrapper.resolve(ParentNodeProvider) is ours.parents
    assert wrapper.resolve(PositionProvider) is ours.positions


def test_find_all_in_children_order() -> None:
    text = CORNERS["del"] + CORNERS["aliases"] + CORNERS["slash"]
    module = cst.parse_module(text)
    Tree(MetadataWrapper(module, unsafe_skip_copy=True))
    expected: list[cst.CSTNode] = []

    class _All(cst.CSTVisitor):
        def on_visit(self, node: cst.CSTNode) -> bool:
            expected.append(node)
            return True

    module.visit(_All())
    assert find_all(module, cst.CSTNode) == expected


def _scope_summary(scopes, module: cst.Module) -> list[tuple]:
    """Per node: its scope's kind, qualified names, and what binds it with how many references
    (nodes of a string annotation, which the provider parses anew each time, by type)."""
    in_tree = {module, *SourceMetadata(module).parents}
    summary = []
    for node, scope in scopes.items():
        names: tuple = ()
        bound: tuple = ()
        if isinstance(node, (cst.Name, cst.Attribute, cst.Call)) and scope is not None:
            names = tuple(sorted((q.name, q.source.name) for q in scope.get_qualified_names_for(node)))
        if isinstance(node, cst.Name) and scope is not None and node.value in scope:
            bound = tuple(sorted((type(a).__name__, len(a.references)) for a in scope[node.value]))
        summary.append((node if node in in_tree else type(node).__name__, type(scope).__name__, names, bound))
    return summary


@pytest.mark.parametrize("name", ["fixtures", *sorted(set(CORNERS) - {"walrus_star"})])
def test_resolve_scopes_gives_libcst_scopes(name: str) -> None:
    """Same scopes, qualified names, assignments and references, in the same order (f-strings
    with and without a format spec, comprehensions, classes, match and type statements included)."""
    paths = sorted((ROOT / "fixtures" / "fix").glob("*/input.py")) if name == "fixtures" else [None]
    for path in paths:
        text = CORNERS[name] if path is None else path.read_text(encoding="utf-8", errors="replace")
        module = cst.parse_module(text)
        theirs = MetadataWrapper(module, unsafe_skip_copy=True)
        ours = MetadataWrapper(module, unsafe_skip_copy=True)
        resolve_scopes(ours, text)  # (a text without "typing": calls are not asked for typing.cast)
        assert _scope_summary(ours.resolve(ScopeProvider), module) == _scope_summary(
            theirs.resolve(ScopeProvider), module
        )
        contexts = theirs.resolve(ExpressionContextProvider)
        assert list(ours.resolve(ExpressionContextProvider).items()) == list(contexts.items())


_TARGETS = (
    "a, (b.c, d[(e := 1)]), *f = g = h\nfor x, y.z in w: pass\nasync def af():\n    async for i in j: pass\n"
    "with o as (p, q), o2 as r[s]: pass\nimport m as n\nfrom m import t as u\ntry:\n    pass\n"
    "except E as err:\n    pass\nh[lambda s, *t, k=1, **kw: s] = 1\nx: int = 1\nx2: int\nv += (yy := 2)\n"
    "[k for k, *_ in r if (z := k)]\ndel a, b[c], d.e\nclass K(B, metaclass=M):\n    def f(self, a=(lambda q: q)): pass\n"
    "match p:\n    case [1, *rest] | {'k': rest} as q:\n        pass\n"
)


@pytest.mark.parametrize("name", ["fixtures", "targets", *sorted(set(CORNERS) - {"walrus_star"})])
def test_scopes_from_the_store_names(name: str) -> None:
    """With the module's printing, the scopes come from its STORE names and no visit for the
    expression contexts: the same scopes as libcst's, and the same contexts when asked."""
    paths = sorted((ROOT / "fixtures" / "fix").glob("*/input.py")) if name == "fixtures" else [None]
    for path in paths:
        text = (
            (_TARGETS if name == "targets" else CORNERS[name])
            if path is None
            else path.read_text(encoding="utf-8", errors="replace")
        )
        module = cst.parse_module(text)
        theirs = MetadataWrapper(module, unsafe_skip_copy=True)
        ours = MetadataWrapper(module, unsafe_skip_copy=True)
        metadata = SourceMetadata(module)
        metadata.seed(ours)
        resolve_scopes(ours, text, metadata)
        if _LIBCST[:2] == (1, 9):
            # every corner but the type parameters, which libcst's visitor skips in a def and a class
            assert (metadata.store_names() is None) == (name == "types")
        assert _scope_summary(ours.resolve(ScopeProvider), module) == _scope_summary(
            theirs.resolve(ScopeProvider), module
        )
        contexts = theirs.resolve(ExpressionContextProvider)
        assert list(ours.resolve(ExpressionContextProvider).items()) == list(contexts.items())


@pytest.mark.skipif(_LIBCST[:2] != (1, 9), reason="the scopes' private fields of libcst 1.9")
def test_released_scopes_leave_no_cycles() -> None:
    """Once released, a module's scopes are freed by reference counting with it: the cyclic
    collector finds only the emptied global and builtin scopes (which name each other), not
    the accesses, assignments and nodes they held (3,168 objects for this script)."""
    text = (ROOT / "fixtures" / "fix" / "mnist_loop" / "input.py").read_text(encoding="utf-8")
    enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        found = {}
        for release in (False, True):
            module = cst.parse_module(text)
            wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
            metadata = SourceMetadata(module)
            metadata.seed(wrapper)
            resolve_scopes(wrapper, text, metadata)
            assert wrapper.resolve(ScopeProvider)[module.body[0]] is not None
            if release:
                release_scopes(wrapper)
            del module, wrapper, metadata
            found[release] = gc.collect()  # (unreachable objects found)
    finally:
        if enabled:
            gc.enable()
    assert found[False] > 1000
    assert found[True] < 20


def test_comment_counts_of_a_rebuilt_subtree() -> None:
    from collections import Counter

    from regcomp_lint.codemod.tree import _find_all, clear_find_cache, comment_counts

    for path in sorted((ROOT / "fixtures" / "fix").glob("*/input.py"))[:10]:
        module = cst.parse_module(path.read_text(encoding="utf-8"))
        Tree(MetadataWrapper(module, unsafe_skip_copy=True))
        try:
            for stmt in [module, *module.body]:
                rebuilt = stmt.with_changes()  # a new node over the same children
                expected = Counter(c.value for c in _find_all(rebuilt, cst.Comment, True))
                assert comment_counts(rebuilt) == expected
                assert comment_counts(stmt) == expected
        finally:
            clear_find_cache()


@pytest.mark.parametrize("name", ["fixtures", *sorted(CORNERS)])
def test_preorder_is_the_index_built_from_parents(name: str) -> None:
    from regcomp_lint.codemod.tree import _NodeIndex

    paths = sorted((ROOT / "fixtures" / "fix").glob("*/input.py"))[:12] if name == "fixtures" else [None]
    for path in paths:
        module = cst.parse_module(CORNERS[name] if path is None else path.read_text(encoding="utf-8"))
        ours = SourceMetadata(module)
        built = _NodeIndex(module, MetadataWrapper(module, unsafe_skip_copy=True).resolve(ParentNodeProvider))
        preorder = ours.preorder()
        if preorder is None:
            # libcst 1.1 (the lowest we allow) prints a match statement's pieces in another order
            # than its children: the index falls back to the one built from the parents, as here
            assert name == "match" and _LIBCST < (1, 2), f"{name}: the printing's order was not usable"
            continue
        order, start, ends = preorder
        assert order == built.order and ends == built.end and start == built.start
        assert ours.preorder() is None  # handed over once


@pytest.mark.parametrize("name", ["fixtures", *sorted(CORNERS)])
def test_code_of_a_module_made_from_this_one(name: str) -> None:
    """``code_of`` gives ``module.code`` for modules that keep some of the parsed module's
    children and change others: a statement replaced, one added, header and footer changed,
    Windows line breaks, no final newline, an empty result."""
    paths = sorted((ROOT / "fixtures" / "fix").glob("*/input.py"))[:12] if name == "fixtures" else [None]
    for path in paths:
        text = CORNERS[name] if path is None else path.read_text(encoding="utf-8")
        module = cst.parse_module(text)
        ours = SourceMetadata(module)
        added = cst.parse_statement("import accelerate\n")
        body = list(module.body)
        variants = [
            module,
            module.with_changes(body=[added, *body]),
            module.with_changes(body=[*body[:1], added, *body[2:]]),
            module.with_changes(body=[b.with_changes() for b in body[::-1]]),
            module.with_changes(header=[], footer=[cst.EmptyLine(comment=cst.Comment("# end"))]),
            module.with_changes(body=[], header=[], footer=[]),
            module.with_changes(body=[*body, added], has_trailing_newline=False),
        ]
        for variant in variants:
            assert ours.code_of(variant) == variant.code


@pytest.mark.parametrize("name", ["fixtures", *sorted(CORNERS)])
def test_code_for_node_is_libcsts(name: str) -> None:
    """``code_for_node`` (a printing without libcst's per-node context managers) gives
    ``Module([]).code_for_node`` for every node, and for the file's own newline and indent;
    ``tree.code`` gives the same during a conversion (its printings cached) as outside one."""
    from regcomp_lint.codemod.source_metadata import code_for_node
    from regcomp_lint.codemod.tree import _index_module, clear_find_cache, code

    paths = sorted((ROOT / "fixtures" / "fix").glob("*/input.py"))[:12] if name == "fixtures" else [None]
    for path in paths:
        text = CORNERS[name] if path is None else path.read_text(encoding="utf-8")
        module = cst.parse_module(text)
        nodes = [module, *SourceMetadata(module).parents]
        plain = cst.Module([])
        assert [_text(code_for_node, n) for n in nodes] == [_text(plain.code_for_node, n) for n in nodes]
        indent, newline = module.default_indent, module.default_newline
        ours = [_text(lambda n: code_for_node(n, indent, newline), n) for n in nodes]  # noqa: B023 (used at once)
        assert ours == [_text(module.code_for_node, n) for n in nodes]
        outside = [_text(code, n) for n in nodes]
        _index_module(module, SourceMetadata(module).parents)
        try:
            assert [_text(code, n) for n in nodes] == outside == [_text(code, n) for n in nodes]
        finally:
            clear_find_cache()


def _text(printer, node: cst.CSTNode) -> str:
    """What ``printer`` gives for ``node``, or the error it raises (an ``Annotation`` alone)."""
    try:
        return printer(node)
    except SyntaxError as exc:  # (libcst's CSTCodegenError)
        return f"error: {exc}"


def test_find_own_and_found_in_rebuilt_match_a_visit() -> None:
    """``find_own`` (a loop's own statements) and ``found_in_rebuilt`` (names outside imports in
    a rebuilt module) give what a libcst visit of the same nodes gives."""
    from regcomp_lint.codemod.tree import _find_all, clear_find_cache, find_own, found_in_rebuilt

    stop = (cst.For, cst.While, cst.FunctionDef, cst.ClassDef)
    for path in sorted((ROOT / "fixtures" / "fix").glob("*/input.py"))[:12]:
        module = cst.parse_module(path.read_text(encoding="utf-8"))
        Tree(MetadataWrapper(module, unsafe_skip_copy=True))
        try:
            for block in find_all(module, cst.IndentedBlock):
                for kind in (cst.If, cst.Break, (cst.Assign, cst.AugAssign)):
                    assert find_own(block, kind, stop) == _find_all(block, kind, False, stop)
            rebuilt = module.with_changes(body=[s.with_changes() for s in module.body])
            visitor = _NamesOutsideImports()
            rebuilt.visit(visitor)
            found = found_in_rebuilt(rebuilt, cst.Name, (cst.Import, cst.ImportFrom))
            assert {n.value for n in found} == visitor.names
        finally:
            clear_find_cache()


class _NamesOutsideImports(cst.CSTVisitor):
    def __init__(self) -> None:
        self.names: set[str] = set()

    def visit_Import(self, node: cst.Import) -> bool:
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        return False

    def visit_Name(self, node: cst.Name) -> None:
        self.names.add(node.value)
