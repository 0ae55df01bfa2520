"""``roles.bindings`` answers from a per-function table made once per conversion (``tree.memo_of``)."""

from __future__ import annotations

from pathlib import Path

import libcst as cst

from regcomp_lint.codemod.roles import _BINDERS, bindings, bound_keys
from regcomp_lint.codemod.tree import clear_find_cache, find_all, memo_of

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = """\
import torch
from torch import nn as tnn


def main(loader):
    model = tnn.Linear(2, 2)
    a, (b, *model) = 1, (2, [3])
    for step, batch in enumerate(loader):
        model += 1
    with open("x") as model:
        pass

    def model():
        return 1

    class step:
        pass

    x: int = 3
    model, model = 1, 2
    import torch.nn as model
"""


def _scanned(function, key):
    """What ``bindings`` answered before the table: one pass over the function per question."""
    return [
        node
        for node in find_all(function, _BINDERS, enter_functions=False)
        if node is not function and key in bound_keys(node)
    ]


def _functions(module):
    return [module, *find_all(module, cst.FunctionDef)]


def test_bindings_same_as_one_scan_per_question():
    scripts = [SCRIPT, *(p.read_text() for p in sorted((ROOT / "fixtures" / "fix").glob("*/input.py"))[:12])]
    for text in scripts:
        module = cst.parse_module(text)
        try:
            for function in _functions(module):
                keys = {k for node in find_all(function, _BINDERS) for k in bound_keys(node)} | {"absent"}
                for key in sorted(keys):
                    assert bindings(function, key) == _scanned(function, key), key
        finally:
            clear_find_cache()


def test_a_node_binding_a_key_twice_is_listed_once_in_source_order():
    module = cst.parse_module(SCRIPT)
    main = find_all(module, cst.FunctionDef)[0]
    try:
        found = bindings(main, "model")
        assert [type(n).__name__ for n in found] == [
            "Assign", "Assign", "AugAssign", "With", "FunctionDef", "Assign", "Import"
        ]  # fmt: skip
        found.clear()  # (each answer is a copy)
        assert len(bindings(main, "model")) == 7
    finally:
        clear_find_cache()


def test_memo_of_asks_once_per_node_until_cleared():
    module = cst.parse_module("x = 1\n")
    other = cst.parse_module("x = 1\n")
    asked = []

    def make(node):
        asked.append(node)
        return len(asked)

    try:
        assert memo_of(module, "q", make) == 1
        assert memo_of(module, "q", make) == 1
        assert memo_of(other, "q", make) == 2  # (an equal tree is another node)
        assert memo_of(module, "r", make) == 3
        clear_find_cache()
        assert memo_of(module, "q", make) == 4
    finally:
        clear_find_cache()
