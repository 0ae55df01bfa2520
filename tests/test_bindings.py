"""What a name holds at a point: the source-order, scope-aware lookup rules share."""

from __future__ import annotations

import ast
import textwrap

import pytest

from regcomp_lint.analysis.file_context import FileContext
from regcomp_lint.checks.base import Rule
from regcomp_lint.files.source import SourceFile
from regcomp_lint.lint.engine import walk


class _Probe(Rule):
    code, name, message = "RC999", "probe", ""

    def __init__(self, ctx):
        super().__init__(ctx)
        self.bindings = ctx.semantic.bindings
        self.probes = []

    def visit_Call(self, node):
        if isinstance(node.func, ast.Name) and node.func.id == "probe":
            self.probes.append((node.args[0], self.bindings.here(node)))


def values(src: str) -> list[str | None]:
    """For each ``probe(x)``: the source of what ``x`` holds there ('?' when unknown), with
    ``[i]`` for an element of a tuple target; None when unbound."""
    src = textwrap.dedent(src)
    ctx = FileContext(SourceFile("b.py", src), ast.parse(src))
    rule = _Probe(ctx)
    walk(ctx, [rule])
    out = []
    for expr, where in rule.probes:
        bound = rule.bindings.lookup(expr, where)
        if bound is None:
            out.append(None)
        elif bound.value is None:
            out.append("?")
        elif isinstance(bound.value, (ast.FunctionDef, ast.ClassDef)):
            out.append(f"def {bound.value.name}")
        else:
            text = ast.unparse(bound.value)
            out.append(text if bound.index is None else f"{text}[{bound.index}]")
    return out


def test_source_order_and_rebinding():
    assert values("probe(x)\nx = 1\nprobe(x)\nx = x + 1\nprobe(x)\n") == [None, "1", "x + 1"]


def test_tuple_targets_and_starred():
    assert values("a, (b, c) = f()\nprobe(a)\nprobe(b)\nx, *y, z = g()\nprobe(x)\nprobe(z)\n") == [
        "f()[0]",
        None,
        "g()[0]",
        "?",
    ]


def test_unknown_bindings_shadow():
    src = """
    m = 1
    for m in ms:
        pass
    probe(m)
    n = 1
    with open(p) as n:
        probe(n)
    k = 1
    k += 2
    probe(k)
    if (w := h()):
        probe(w)
    """
    assert values(src) == ["?", "?", "?", "h()"]


def test_definitions_bind_names():
    assert values("def f():\n    pass\nclass C:\n    pass\nprobe(f)\nprobe(C)\n") == ["def f", "def C"]


def test_class_body_names_are_not_module_names():
    src = "class C:\n    model = 1\n    def build(self):\n        pass\nprobe(model)\nprobe(build)\n"
    assert values(src) == [None, None]


def test_function_scopes():
    src = """
    x = 1
    def f(y):
        probe(x)
        probe(y)
        z = 2
        def inner():
            probe(z)
        lam = lambda x: probe(x)
    """
    assert values(src) == ["1", "?", "2", "?"]


def test_global_declarations_bind_module_names():
    # NNI's CIFAR trainer: prepare() fills module globals that train() reads
    src = """
    optimizer = None
    def prepare():
        global optimizer
        optimizer = SAM(params)
        probe(optimizer)
    def train():
        global optimizer
        probe(optimizer)
    def other():
        optimizer = local()
        probe(optimizer)
    """
    assert values(src) == ["SAM(params)", "SAM(params)", "local()"]


def test_comprehension_variables_do_not_leak():
    assert values("v = 1\nxs = [probe(v) for v in range(3)]\nprobe(v)\n") == [None, "1"]


def test_self_attributes():
    src = """
    class T:
        def __init__(self):
            self.a = A()
        def run(self):
            probe(self.a)
            self.a = B()
            probe(self.a)
    probe(self.a)
    """
    assert values(src) == ["A()", "B()", None]


def test_returns_are_recorded_per_function():
    src = "def f():\n    if c:\n        return 1\n    return g()\ndef h():\n    return\n"
    ctx = FileContext(SourceFile("b.py", src), ast.parse(src))
    rule = _Probe(ctx)
    walk(ctx, [rule])
    f, h = ctx.tree.body
    assert [ast.unparse(v) for v, _ in rule.bindings.returns(f)] == ["1", "g()"]
    assert rule.bindings.returns(h) == []


# -- one Bindings per file, in the file's semantic model ----------------------------------------

SHARED = """
model = Net()
def train(model):
    probe(model)
    model = wrap(model)
    probe(model)
probe(model)
"""


def _texts(bindings, probes):
    found = []
    for expr, where in probes:
        bound = bindings.lookup(expr, where)
        found.append(None if bound is None else "?" if bound.value is None else ast.unparse(bound.value))
    return found


def test_every_rule_of_a_file_gets_the_same_bindings_fed_once():
    src = textwrap.dedent(SHARED)
    ctx = FileContext(SourceFile("b.py", src), ast.parse(src))
    first, second = _Probe(ctx), _Probe(ctx)
    assert first.bindings is second.bindings is ctx.semantic.bindings
    walk(ctx, [first, second])
    assert first.probes == second.probes
    assert _texts(first.bindings, first.probes) == ["?", "wrap(model)", "Net()"]


def test_bindings_asked_for_after_the_walk_are_built_alone_with_the_same_answers():
    src = textwrap.dedent(SHARED)
    fed_ctx = FileContext(SourceFile("b.py", src), ast.parse(src))
    rule = _Probe(fed_ctx)
    walk(fed_ctx, [rule])
    late_ctx = FileContext(SourceFile("b.py", src), fed_ctx.tree)  # same nodes, so the same points
    late_ctx.semantic.build_alone()
    assert _texts(late_ctx.semantic.bindings, rule.probes) == _texts(rule.bindings, rule.probes)
    assert late_ctx.ancestors == []


def test_a_walk_fed_analysis_cannot_be_asked_for_in_the_middle_of_the_walk():
    src = "x = 1\nprobe(x)\n"
    ctx = FileContext(SourceFile("b.py", src), ast.parse(src))

    class _Late(Rule):
        code, name, message = "RC997", "late", ""

        def visit_Call(self, node):
            self.late = self.ctx.semantic.bindings

    with pytest.raises(RuntimeError, match="before the walk"):
        walk(ctx, [_Late(ctx)])
