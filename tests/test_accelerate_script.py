"""What the RC4xx rules learn about a file's Accelerate setup: names, compile state, loops."""

from __future__ import annotations

import ast
import textwrap

from regcomp_lint.analysis.accelerate_script import AccelerateScript, FeedsAccelerateScript, in_loop_body
from regcomp_lint.analysis.file_context import FileContext
from regcomp_lint.checks.base import Rule
from regcomp_lint.files.source import SourceFile
from regcomp_lint.lint.engine import walk


class _Probe(FeedsAccelerateScript, Rule):
    code, name, message = "RC998", "accelerate-probe", ""

    def __init__(self, ctx):
        super().__init__(ctx)
        self.script = AccelerateScript(ctx)
        self.bindings = self.script.bindings
        self.probes = []

    def visit_Call(self, node):
        self.script.visit(node)
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
