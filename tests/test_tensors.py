"""Tensor-ness inference (regcomp_lint.analysis.tensors): tensors are found, shape logic never is."""

from __future__ import annotations

import ast
import textwrap

import pytest

from regcomp_lint.analysis import tensors
from regcomp_lint.analysis.reachability import from_source

HEADER = """
import torch
import torch.nn as nn
import torch.nn.functional as F
from typing import Optional

def helper(t, n):
    return t * n

def shape_of(t):
    return t.shape[0]

class Block(nn.Module):
    def forward(self, h, idx):
        return h

class Net(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.fc = nn.Linear(4, 4)
        self.blocks = nn.ModuleList([Block() for _ in range(4)])
        self.scale = nn.Parameter(torch.ones(1))
        self.register_buffer("mask", torch.ones(4))
        self.n_layers = 4

    def forward(self, x, mask=None, flag: bool = False, bias: Optional[torch.Tensor] = None,
                steps: int = 2, extra: "torch.FloatTensor" = None, ids: torch.Tensor | None = None, *args, **kwargs):
{body}
        return x

    def part(self, a, b, unused):
        return a
"""


_KEEP = []  # an oracle is valid while its Reachability lives


def oracle_for(body: str, function: str = "Net.forward"):
    src = textwrap.dedent(HEADER).replace("{body}", textwrap.indent(textwrap.dedent(body), " " * 8))
    reach = from_source(src, "<test>")
    _KEEP[:] = [reach]
    func = next(f for f, _ in reach.reached() if f.label == function)
    return tensors.oracle(reach, func), func


def expr(text: str) -> ast.expr:
    return ast.parse(text, mode="eval").body


def check(body: str, text: str, function: str = "Net.forward") -> bool:
    oracle, _ = oracle_for(body, function)
    return oracle.is_tensor(expr(text))


BODY = """
y = self.fc(x)
z = torch.relu(y)
w = F.gelu(z).view(-1)
a, b = x.chunk(2)
bsz, seq = x.shape[:2]
n = x.size(-1)
h = x
for i, block in enumerate(self.blocks):
    h = block(h, i)
for row in x:
    pass
k = 0
k = k + 1
maybe = None
maybe = x * 2
m = torch.isnan(x)
p = helper(x, 2)
q = shape_of(x)
r = self.part(x, y, 3)
"""


@pytest.mark.parametrize(
    "text",
    [
        "x",
        "y",
        "z",
        "w",
        "a",
        "b",
        "h",
        "row",
        "m",
        "p",
        "r",
        "x + 1",
        "1 - x",
        "x[0]",
        "x[:, 1:]",
        "x.T",
        "-x",
        "x > 0",
        "x == y",
        "x.sum()",
        "x.abs().max()",
        "torch.zeros(3)",
        "torch.cat([x, y])",
        "torch.linalg.norm(x)",
        "self.scale",
        "self.mask",
        "self.fc.weight",
        "self.fc(x)",
        "self.blocks[0](x, 0)",
        "bias",
        "extra",
        "ids",
        "x if flag else y",
        "abs(x)",
    ],
)
def test_tensors(text):
    assert check(BODY, text), text


@pytest.mark.parametrize(
    "text",
    [
        # shape logic and metadata
        "x.shape",
        "x.shape[0]",
        "x.shape[0] > 1",
        "x.size(-1)",
        "x.dim()",
        "x.ndim",
        "x.numel()",
        "x.dtype",
        "x.device",
        "bsz",
        "seq",
        "n",
        "len(x)",
        "x.dtype == torch.float16",
        "x.is_floating_point()",
        # identity and flags
        "x is None",
        "mask is not None",
        "isinstance(x, torch.Tensor)",
        "not flag",
        "flag",
        "steps",
        "self.training",
        "self.config.dropout",
        "self.n_layers",
        "len(self.blocks)",
        "self.blocks",
        # defaults, varargs, loop counters and mixed bindings
        "mask",
        "args",
        "kwargs",
        "i",
        "k",
        "maybe",
        "q",
        # Python values out of tensors (RC201's business, not tensors any more)
        "x.item()",
        "x.tolist()",
        "int(x.sum())",
        "torch.is_tensor(x)",
        "torch.equal(x, y)",
        # unknown things
        "undefined_name",
        "self.unknown(x)",
        "some.module.function(x)",
        "x in y",
        "max(x, y)",
    ],
)
def test_not_tensors(text):
    assert not check(BODY, text), text


def test_parameters_follow_call_sites():
    oracle, func = oracle_for(BODY, "Net.part")
    a, b, unused = func.node.args.args[1:]
    assert oracle.param_is_tensor(a) and oracle.param_is_tensor(b)
    assert not oracle.param_is_tensor(unused)  # every call passes the literal 3


def test_submodule_forward_parameters():
    oracle, func = oracle_for(BODY, "Block.forward")
    h, idx = func.node.args.args[1:]
    assert oracle.param_is_tensor(h)
    assert not oracle.param_is_tensor(idx)  # an enumerate counter at the only call site


def test_helper_returns():
    oracle, _ = oracle_for(BODY)
    assert oracle.is_tensor(expr("helper(x, 2)"))
    assert not oracle.is_tensor(expr("shape_of(x)"))


@pytest.mark.parametrize(
    "test,reads",
    [
        ("x.sum() > 0", True),
        ("x.any()", True),
        ("not torch.isnan(x).any()", True),
        ("mask is not None and x.any()", True),
        ("x", True),
        ("(x > 0).all() or flag", True),
        ("x.shape[0] > 1 and x.size(-1) == 4", False),
        ("mask is None or flag", False),
        ("self.training and self.config.dropout > 0", False),
        ("isinstance(x, torch.Tensor)", False),
        ("x.dtype == torch.float16 and not flag", False),
        ("len(self.blocks) > 2", False),
    ],
)
def test_conditions(test, reads):
    oracle, _ = oracle_for(BODY)
    assert oracle.reads_tensor_value(expr(test)) is reads


def test_self_rebound_is_not_the_module():
    oracle, _ = oracle_for("self = other\ny = self.scale\n")
    assert not oracle.is_tensor(expr("self.scale"))


def test_recursion_terminates():
    src = textwrap.dedent("""
        import torch
        from torch import nn
        def f(t):
            return g(t)
        def g(t):
            return f(t)
        class Net(nn.Module):
            def forward(self, x):
                y = f(x)
                x = x.view(-1)
                return y
    """)
    reach = from_source(src)
    func = next(f for f, _ in reach.reached() if f.label == "Net.forward")
    oracle = tensors.oracle(reach, func)
    assert not oracle.is_tensor(expr("y"))  # no return is known to be a tensor
    assert oracle.is_tensor(expr("x"))


def test_closure_parameters_and_free_names():
    src = textwrap.dedent("""
        import torch
        from torch import nn
        class MLP(nn.Module):
            def __init__(self):
                super().__init__()
                self.w = nn.Parameter(torch.ones(1))
            def forward(self, x, n: int = 2):
                y = x * 2
                def gate(t):
                    return t * y * self.w * n
                return gate(x)
    """)
    reach = from_source(src)
    _KEEP[:] = [reach]
    gate = next(f for f, _ in reach.reached() if f.label == "MLP.forward.gate")
    oracle = tensors.oracle(reach, gate)
    assert oracle.param_is_tensor(gate.node.args.args[0])  # t: the call passes x
    assert oracle.is_tensor(expr("y")) and oracle.is_tensor(expr("self.w"))
    assert not oracle.is_tensor(expr("n"))
