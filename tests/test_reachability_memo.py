"""The functions graph shares the default graph's classes and callees, and other files'
callees are found once per process: the same graph as one built from scratch."""

from __future__ import annotations

import ast

from regcomp_lint.analysis import dependencies
from regcomp_lint.analysis.file_context import FileContext
from regcomp_lint.analysis.reachability import ParsedModule, Reachability
from regcomp_lint.files.source import SourceFile

OPS = (
    "from .more import deeper\n"
    "def scale(x):\n"
    "    def inner(t):\n"
    "        return deeper(t)\n"
    "    return inner(x) + helper(x)\n"
    "def helper(x):\n"
    "    return x\n"
)
MORE = "def deeper(x):\n    return x.item()\n"
MAIN = (
    "from torch import nn\n"
    "from .ops import scale, helper\n"
    "from . import ops\n"
    "def local(x):\n"
    "    return helper(x)\n"
    "class Block(nn.Module):\n"
    "    def forward(self, x):\n"
    "        return ops.scale(local(x))\n"
    "class Net(nn.Module):\n"
    "    def __init__(self):\n"
    "        super().__init__()\n"
    "        self.blocks = nn.ModuleList([Block() for _ in range(2)])\n"
    "    def forward(self, x):\n"
    "        for block in self.blocks:\n"
    "            x = block(x)\n"
    "        return scale(x)\n"
)


def _project(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "ops.py").write_text(OPS)
    (pkg / "more.py").write_text(MORE)
    (pkg / "main.py").write_text(MAIN)
    return pkg / "main.py"


def _ctx(path):
    src = path.read_text()
    ctx = FileContext(SourceFile(str(path), src), ast.parse(src))
    for stmt in ctx.tree.body:
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            ctx.imports.add(stmt)
    return ctx


def _shape(reach):
    """The shortest-path tree as labels, in order, with the line of each call followed."""
    return [
        (f.label, f.local, None if via is None else (via[0].label, via[1].lineno)) for f, via in reach.paths().items()
    ]


def test_functions_graph_is_the_one_built_from_scratch(tmp_path):
    path = _project(tmp_path)
    ctx = _ctx(path)
    ctx.semantic.reachability().reached()  # the default graph first, as the rules build it
    shared = ctx.semantic.reachability(functions=True)
    assert shared.module is ctx.semantic.reachability().module
    fresh = Reachability(ParsedModule.from_tree(ctx.tree, ctx.filename, ctx.imports), deep=False, functions=True)
    assert _shape(shared) == _shape(fresh)
    labels = [label for label, _, _ in _shape(shared)]
    assert "scale.inner" in labels and "deeper" in labels and "local" in labels


def test_other_files_callees_memo_still_records_their_files(tmp_path):
    path = _project(tmp_path)
    shapes, recorded = [], []
    for _ in range(2):  # the second time, other files' callees come from the memo
        ctx = _ctx(path)
        with dependencies.recording() as paths:
            shapes.append(_shape(ctx.semantic.reachability(functions=True)))
        recorded.append({p.rsplit("/", 1)[-1] for p in paths})
    assert shapes[0] == shapes[1]
    assert recorded[0] == recorded[1] and {"ops.py", "more.py"} <= recorded[0]


def test_memo_is_recomputed_when_a_module_is_parsed_again(tmp_path):
    path = _project(tmp_path)
    ctx = _ctx(path)  # the semantic model holds its context weakly: keep the context
    first = _shape(ctx.semantic.reachability(functions=True))
    (path.parent / "more.py").write_text("def deeper(x):\n    return other(x)\ndef other(x):\n    return x\n")
    # ``ops.py`` is not parsed again: what was kept about its ``scale`` must not name the old ``deeper``.
    ctx = _ctx(path)
    second = _shape(ctx.semantic.reachability(functions=True))
    assert [label for label, _, _ in second] == [label for label, _, _ in first] + ["other"]
