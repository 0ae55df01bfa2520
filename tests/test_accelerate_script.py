"""What the RC4xx rules learn about a file's Accelerate setup: names, compile state, loops."""

from __future__ import annotations

import ast
import textwrap

from regcomp_lint.analysis.accelerate_script import in_loop_body
from regcomp_lint.analysis.file_context import FileContext
from regcomp_lint.checks.base import Rule
from regcomp_lint.files.source import SourceFile
from regcomp_lint.lint.engine import walk


class _Probe(Rule):
    code, name, message = "RC998", "accelerate-probe", ""

    def __init__(self, ctx):
        super().__init__(ctx)
        self.script = ctx.semantic.accelerate_script
        self.bindings = self.script.bindings
        self.probes = []

    def visit_Call(self, node):
        if isinstance(node.func, ast.Name) and node.func.id == "probe":
            self.probes.append((node, self.bindings.here(node), in_loop_body(self.ctx, node)))


def run(src: str) -> _Probe:
    src = textwrap.dedent(src)
    ctx = FileContext(SourceFile("a.py", src), ast.parse(src))
    rule = _Probe(ctx)
    walk(ctx, [rule])
    return rule


def names(src: str) -> list[tuple[str, bool] | None]:
    rule = run(src)
    out = []
    for _, where, _ in rule.probes:
        name = rule.script.accelerator_name(where)
        out.append((name.text, name.certain) if name else None)
    return out


def test_names_by_scope():
    src = """
        from accelerate import Accelerator
        probe()
        def main():
            acc = Accelerator()
            probe()
        def train(accelerator: "Accelerator"):
            probe()
        def guess(accelerator):
            probe()
        class T:
            def __init__(self):
                self.accelerator = Accelerator()
            def fit(self):
                probe()
    """
    assert names(src) == [
        None,
        ("acc", True),
        ("accelerator", True),
        ("accelerator", False),
        ("self.accelerator", True),
    ]


def test_two_accelerators_are_ambiguous_and_an_alias_is_not():
    two = "from accelerate import Accelerator\na = Accelerator()\nb = Accelerator()\nprobe()\n"
    param_and_global = (
        "from accelerate import Accelerator\nacc = Accelerator()\ndef f(accelerator: Accelerator):\n    probe()\n"
    )
    assert names(param_and_global) == [None]
    alias = "from accelerate import Accelerator\na = Accelerator()\nb = a\nprobe()\n"
    assert names(two) == [None]
    assert names(alias) == [("a", True)]


def test_compile_state():
    def state(setup: str):
        rule = run(
            "from accelerate import Accelerator\nfrom accelerate.utils import TorchDynamoPlugin\n"
            + setup
            + "probe(acc)\n"
        )
        call, where, _ = rule.probes[0]
        s = rule.script.compile_state(rule.script.accelerator_of(call.args[0], where))
        return s.compiles, s.regional

    assert state("acc = Accelerator()\n") == (False, False)
    assert state("acc = Accelerator(dynamo_backend='inductor')\n") == (True, False)
    assert state(
        "p = TorchDynamoPlugin(backend='eager', use_regional_compilation=True)\nacc = Accelerator(dynamo_plugin=p)\n"
    ) == (True, True)
    assert state(
        "acc = Accelerator(dynamo_plugin=TorchDynamoPlugin(backend='x', use_regional_compilation=flag))\n"
    ) == (True, None)
    assert state("acc = Accelerator(dynamo_plugin=TorchDynamoPlugin(backend='NO'))\n") == (False, False)
    assert state("acc = Accelerator(dynamo_plugin=get_plugin())\n") == (True, None)


def test_in_loop_body():
    src = """
        probe()
        for x in probe():
            probe()
            def f():
                probe()
        else:
            probe()
        while True:
            if x:
                y = [probe() for _ in z]
    """
    assert [inside for _, _, inside in run(src).probes] == [False, False, True, False, False, True]


def test_prepare_calls_are_collected_with_their_statement():
    rule = run(
        "from accelerate import Accelerator\nacc = Accelerator()\nm, o = acc.prepare(m, o)\nacc.prepare_model(n)\nimport x\nx.prepare(1)\n"
    )
    kinds = [(call.func.attr, type(statement).__name__) for call, statement, _ in rule.script.prepares]
    assert kinds == [("prepare", "Assign"), ("prepare_model", "Expr")]


class _BindingsOnly(Rule):
    code, name, message = "RC996", "bindings-probe", ""

    def __init__(self, ctx):
        super().__init__(ctx)
        self.bindings = ctx.semantic.bindings
        self.wheres = []

    def visit_Call(self, node):
        if isinstance(node.func, ast.Name) and node.func.id == "probe":
            self.wheres.append(self.bindings.here(node))


def test_the_script_asked_for_after_the_walk_answers_as_the_fed_one():
    src = textwrap.dedent(
        """
        from accelerate import Accelerator
        class T:
            def __init__(self):
                self.accelerator = Accelerator(dynamo_backend="inductor")
            def step(self):
                probe()
        def train(accel: Accelerator):
            probe()
        probe()
        """
    )
    fed = run(src)
    ctx = FileContext(SourceFile("a.py", src), fed.ctx.tree)
    rule = _BindingsOnly(ctx)
    walk(ctx, [rule])  # the file's bindings are fed; its script is not
    late = ctx.semantic.accelerate_script
    assert late is ctx.semantic.accelerate_script
    assert late.bindings is not ctx.semantic.bindings  # the late pass follows bindings of its own
    assert [late.accelerator_name(w) for w in rule.wheres] == [fed.script.accelerator_name(w) for _, w, _ in fed.probes]
    texts = [name.text if name else None for name in map(late.accelerator_name, rule.wheres)]
    assert texts == ["self.accelerator", "accel", None]
    assert late.compile_state(None) == fed.script.compile_state(None)


def test_build_alone_feeds_the_bindings_and_the_script_in_one_pass():
    src = "from accelerate import Accelerator\ndef train(accelerator: Accelerator):\n    probe()\n"
    fed = run(src)
    ctx = FileContext(SourceFile("a.py", src), fed.ctx.tree)
    script = ctx.semantic.accelerate_script  # asked for before any walk: waits for one
    ctx.semantic.build_alone()  # none comes
    assert script.bindings is ctx.semantic.bindings
    where = fed.probes[0][1]
    assert script.accelerator_name(where) == fed.script.accelerator_name(where) is not None
