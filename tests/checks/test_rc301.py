"""RC301 behaviour beyond the examples: where the int comes from, where it lands, who reads it."""

from __future__ import annotations

import textwrap

import pytest

from regcomp_lint.api import lint_source
from regcomp_lint.diagnostics import Location
from regcomp_lint.lint.config import Settings


def rc301(src: str, filename: str = "model.py"):
    return lint_source(textwrap.dedent(src), filename, Settings(select=("RC301",)))


GPT2 = """
    import torch
    from torch import nn

    class Attention(nn.Module):
        def __init__(self, dim, layer_idx=None):
            super().__init__()
            self.c_attn = nn.Linear(dim, dim)
            self.layer_idx = layer_idx

        def forward(self, x):
            w = self.c_attn(x)
            w = w / float(self.layer_idx + 1)
            return w * self.layer_idx

    class Block(nn.Module):
        def __init__(self, dim, layer_idx):
            super().__init__()
            self.attn = Attention(dim, layer_idx=layer_idx)

        def forward(self, x):
            return x + self.attn(x)

    class GPT2(nn.Module):
        def __init__(self, cfg):
            super().__init__()
            self.transformer = nn.ModuleDict(dict(
                wte=nn.Embedding(10, 4),
                h=nn.ModuleList([Block(4, layer_idx=i) for i in range(cfg.n_layer)]),
            ))

        def forward(self, idx):
            x = self.transformer.wte(idx)
            for block in self.transformer.h:
                x = block(x)
            return x
"""


def test_reported_once_at_the_first_read_with_chain_and_construction():
    [diag] = rc301(GPT2)
    assert diag.location == Location(13, 23)
    assert "`self.layer_idx` differs per block (`Block(4, layer_idx=i)`, line 29)" in diag.message
    assert "`Attention.forward` reads it" in diag.message
    assert "reached via GPT2.forward → Block.forward → Attention.forward" in diag.message
    assert "past `recompile_limit` (8)" in diag.message
    assert "allow_unspec_int_on_nn_module" in diag.message


@pytest.mark.parametrize("depth,limit_clause", [(6, False), (8, False), (12, True)])
def test_literal_depth_decides_whether_the_limit_is_mentioned(depth, limit_clause):
    src = GPT2.replace("range(cfg.n_layer)", f"range({depth})")
    [diag] = rc301(src)
    assert f"({depth} blocks)" in diag.message
    assert ("recompile_limit" in diag.message) is limit_clause


BLOCK = """
    from torch import nn

    class Block(nn.Module):
        def __init__(self, dim, idx):
            super().__init__()
            self.fc = nn.Linear(dim, dim)
            {store}

        def forward(self, x):
            {use}
            return self.fc(x)

    class Net(nn.Module):
        def __init__(self, n):
            super().__init__()
            self.blocks = nn.ModuleList([Block(4, {arg}) for i in range(n)])

        def forward(self, x):
            for b in self.blocks:
                x = b(x)
            return x
"""


def block(store="self.idx = idx", use="x = x * self.idx", arg="i"):
    return BLOCK.format(store=store, use=use, arg=arg)


@pytest.mark.parametrize(
    "store,use,arg",
    [
        ("self.idx = idx", "x = x * self.idx", "i"),
        ("self.idx = idx", "x = x * self.idx", "i + 1"),
        ("self.idx = idx", "x = x * self.idx", "2 * i"),
        ("self.idx = idx", "x = x * self.idx", "i // 2"),
        ("self.idx = idx + 1", "x = x * self.idx", "i"),
        ("self.idx = int(idx)", "x = x * self.idx", "i"),
        # measured: a branch, an `is None` test and a string attribute all recompile per block
        ("self.idx = idx", "if self.idx == 0:\n                x = x * 2", "i"),
        ("self.idx = idx", "if self.idx is None:\n                x = x * 2", "i"),
        ("self.name = f'block{idx}'", "x = x if self.name else x * 2", "i"),
    ],
)
def test_per_block_values_read_in_forward(store, use, arg):
    assert len(rc301(block(store, use, arg))) == 1


@pytest.mark.parametrize(
    "store,use,arg",
    [
        # folded into two values: one recompilation, not one per block
        ("self.odd = idx % 2 == 1", "x = x * self.odd", "i"),
        ("self.first = idx == 0", "x = x * self.first", "i"),
        # a float: dynamo makes it dynamic after one recompilation
        ("self.scale = 1.0 / (idx + 1)", "x = x * self.scale", "i"),
        # the same value for every block
        ("self.idx = idx", "x = x * self.idx", "4"),
        # never read in forward
        ("self.idx = idx", "x = x * 2", "i"),
        # a buffer is a tensor input, not a guarded constant
        ("self.register_buffer('idx', torch.tensor(idx))", "x = x * self.idx", "i"),
    ],
)
def test_not_per_block_or_not_read(store, use, arg):
    assert rc301(block(store, use, arg)) == []


def test_appended_in_a_loop_with_enumerate_and_positional_argument():
    src = """
        from torch import nn

        class Layer(nn.Module):
            def __init__(self, cfg, layer_id):
                super().__init__()
                self.layer_id = layer_id
                self.fc = nn.Linear(4, 4)

            def forward(self, x):
                return self.fc(x) * (self.layer_id + 1)

        class Model(nn.Module):
            def __init__(self, cfg):
                super().__init__()
                self.layers = nn.ModuleList()
                for i, kind in enumerate(cfg.kinds):
                    self.layers.append(Layer(cfg, i))

            def forward(self, x):
                for layer in self.layers:
                    x = layer(x)
                return x
    """
    [diag] = rc301(src)
    assert "`Layer(cfg, i)`" in diag.message


def test_index_forwarded_through_super_init():
    src = """
        from torch import nn

        class Base(nn.Module):
            def __init__(self, dim, layer_idx):
                super().__init__()
                self.layer_idx = layer_idx

        class Block(Base):
            def __init__(self, dim, layer_idx):
                super().__init__(dim, layer_idx)
                self.fc = nn.Linear(dim, dim)

            def forward(self, x):
                return self.fc(x)[..., self.layer_idx :]

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.blocks = nn.ModuleList([Block(4, i) for i in range(10)])

            def forward(self, x):
                for b in self.blocks:
                    x = b(x)
                return x
    """
    [diag] = rc301(src)
    assert "`Block.forward` reads it" in diag.message


def test_reads_outside_forward_are_not_judged():
    src = block(use="x = x").replace(
        "return self.fc(x)\n", "return self.fc(x)\n\n        def describe(self):\n            print(self.idx)\n", 1
    )
    assert rc301(src) == []


def test_blocks_in_a_sequential_are_not_compiled_per_block_by_compile_regions():
    assert (
        rc301(
            block().replace("nn.ModuleList([", "nn.Sequential(*[").replace("for i in range(n)])", "for i in range(n)])")
        )
        == []
    )


def test_reads_on_an_optional_path_are_not_judged():
    """HF attention reads `self.layer_idx` only under `if past_key_values is not None:`; a
    training step passes no cache, so dynamo never guards on it."""
    src = GPT2.replace(
        "        def forward(self, x):\n            w = self.c_attn(x)\n            w = w / float(self.layer_idx + 1)\n            return w * self.layer_idx",
        "        def forward(self, x, cache=None, use_cache=False):\n            w = self.c_attn(x)\n"
        "            if cache is not None:\n                w = cache.update(w, self.layer_idx)\n"
        "            w = w * self.layer_idx if use_cache else w\n            return w",
    )
    assert "cache.update" in src
    assert rc301(src) == []
    assert len(rc301(src.replace("if cache is not None:", "if w.dim() == 3:"))) == 1
