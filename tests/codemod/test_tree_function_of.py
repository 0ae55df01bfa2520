"""``Tree.function_of``: the function whose code runs a node (lambdas and comprehensions inline),
the module outside every def; kept per node, asked again it answers the same."""

from __future__ import annotations

import libcst as cst
from libcst.metadata import MetadataWrapper

from regcomp_lint.codemod.tree import Tree, find_all

TEXT = "x = f(1)\ndef outer():\n    def inner():\n        return g(lambda: h(2))\n    return [k(i) for i in y]\n"


def test_function_of_each_call_asked_twice() -> None:
    tree = Tree(MetadataWrapper(cst.parse_module(TEXT)))
    calls = {cst.ensure_type(c.func, cst.Name).value: c for c in find_all(tree.module, cst.Call)}
    functions = {f.name.value: f for f in find_all(tree.module, cst.FunctionDef)}
    expected = {"f": tree.module, "g": functions["inner"], "h": functions["inner"], "k": functions["outer"]}
    for _ in range(2):
        assert {name: tree.function_of(call) for name, call in calls.items()} == expected
    # a node the conversion built (no parents in the parsed module): the module's code
    assert tree.function_of(cst.Name("new")) is tree.module
