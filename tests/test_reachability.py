"""Module discovery, the forward call graph and chains (regcomp_lint.analysis.reachability)."""

from __future__ import annotations

import ast
import textwrap

import pytest

from regcomp_lint.analysis import reachability
from regcomp_lint.analysis.reachability import from_source, module_file, modules


def build(src: str, filename: str = "<string>"):
    return from_source(textwrap.dedent(src), filename)


def chains(reach) -> dict[str, str]:
    return {func.label: str(chain) for func, chain in reach.reached()}


GPT = """
import torch
import torch.nn as nn
import torch.nn.functional as F

def rotate(x):
    return torch.cat([-x[..., 1:], x[..., :1]], dim=-1)

def unused(x):
    return x

class Attention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.qkv = nn.Linear(cfg.n, 3 * cfg.n)
        self.register_buffer("mask", torch.tril(torch.ones(8, 8)))
        self.scale = nn.Parameter(torch.ones(1))
    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        return self._attn(rotate(q), k, v)
    def _attn(self, q, k, v):
        return F.softmax(q @ k.transpose(-1, -2), -1) @ v
    def not_called(self):
        pass

class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.attn = Attention(cfg)
    def forward(self, x):
        return x + self.attn(x)

class GPT(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.h = nn.ModuleList([Block(cfg) for _ in range(cfg.n_layer)])
    def forward(self, idx):
        x = idx
        for block in self.h:
            x = block(x)
        return x
    def generate(self, idx):
        return self(idx)
"""


def test_chains_follow_submodules_methods_and_functions():
    reach = build(GPT)
    assert set(reach.classes) == {"Attention", "Block", "GPT"}
    assert chains(reach) == {
        "GPT.forward": "reached via GPT.forward",
        "Block.forward": "reached via GPT.forward → Block.forward",
        "Attention.forward": "reached via GPT.forward → Block.forward → Attention.forward",
        "Attention._attn": "reached via GPT.forward → Block.forward → Attention.forward → Attention._attn",
        "rotate": "reached via GPT.forward → Block.forward → Attention.forward → rotate",
    }
    assert [f.label for f in reach.roots] == ["GPT.forward"]


def test_unreached_code_is_absent():
    labels = set(chains(build(GPT)))
    assert not labels & {"GPT.generate", "GPT.__init__", "unused", "Attention.not_called", "Attention.__init__"}


def test_submodules_and_tensor_attributes():
    reach = build(GPT)
    gpt, attn = reach.classes["GPT"], reach.classes["Attention"]
    assert gpt.submodules["h"].container and [c.name for c in gpt.submodules["h"].classes] == ["Block"]
    assert attn.submodules["qkv"].external == ["torch.nn.Linear"]
    assert attn.tensor_attrs == {"mask", "scale"}


def test_locate_picks_innermost_reached_def_and_edges_record_calls():
    reach = build(GPT)
    attn = reach.classes["Attention"]
    forward = attn.local_methods["forward"]
    not_called = attn.local_methods["not_called"]
    func, chain = reach.locate([attn.node, forward])
    assert func.label == "Attention.forward" and len(chain.labels) == 3
    assert reach.locate([not_called]) is None
    callers = reach.callers(func)
    assert [(caller.label, call.func.attr) for caller, call in callers] == [("Block.forward", "attn")]


@pytest.mark.parametrize(
    "header,base",
    [
        ("import torch.nn as nn", "nn.Module"),
        ("from torch import nn", "nn.Module"),
        ("import torch", "torch.nn.Module"),
        ("from torch.nn import Module", "Module"),
        ("from torch.nn import Module as M", "M"),
        ("import torch as T", "T.nn.Module"),
        ("from torch import nn", "nn.Linear"),
        ("from torch.nn import *", "Module"),
        ("from transformers import PreTrainedModel", "PreTrainedModel"),
        ("from ...modeling_utils import GPT2PreTrainedModel", "GPT2PreTrainedModel"),
        ("from ...modeling_layers import GradientCheckpointingLayer", "GradientCheckpointingLayer"),
        ("import lightning as L", "L.LightningModule"),
    ],
)
def test_module_base_spellings(header, base):
    reach = build(f"{header}\nclass Net({base}):\n    def forward(self, x):\n        return x\n")
    assert "Net" in reach.classes


@pytest.mark.parametrize(
    "header,base",
    [
        ("from flax import linen as nn", "nn.Module"),
        ("import torch", "torch.autograd.Function"),
        ("import torch", "torch.nn.Parameter"),
        ("", "object"),
        ("from transformers import TFPreTrainedModel", "TFPreTrainedModel"),
        ("from mylib import Module", "Module"),
    ],
)
def test_not_module_bases(header, base):
    reach = build(f"{header}\nclass Net({base}):\n    def forward(self, x):\n        return x\n")
    assert "Net" not in reach.classes and reach.reached() == []


def test_local_base_class_and_inherited_forward_reaches_override():
    reach = build("""
        from torch import nn
        class Base(nn.Module):
            def forward(self, x):
                return self.mix(x)
            def mix(self, x):
                return x
        class Child(Base):
            def mix(self, x):
                return x * 2
        class Mixin:
            def helper(self, x):
                return x
        class Both(Mixin, nn.Module):
            def forward(self, x):
                return self.helper(x)
    """)
    assert set(reach.classes) == {"Base", "Child", "Both"}
    got = chains(reach)
    assert got["Child.mix"] == "reached via Base.forward → Child.mix"
    assert got["Base.mix"] == "reached via Base.forward → Base.mix"
    assert got["Mixin.helper"] == "reached via Both.forward → Mixin.helper"


def test_super_calls_and_method_references():
    reach = build("""
        from torch import nn
        from torch.utils.checkpoint import checkpoint
        class Base(nn.Module):
            def forward(self, x):
                return x
        class Net(Base):
            def __init__(self):
                super().__init__()
                self.block = Base()
            def forward(self, x):
                x = checkpoint(self.block, x)
                x = checkpoint(self.part, x)
                return super().forward(x)
            def part(self, x):
                return x
    """)
    got = chains(reach)
    assert got["Net.part"] == "reached via Net.forward → Net.part"
    assert got["Base.forward"] == "reached via Net.forward → Base.forward"


@pytest.mark.parametrize(
    "init,loop",
    [
        (
            "self.layers = nn.ModuleList()\n        for _ in range(4):\n            self.layers.append(Block())",
            "for layer in self.layers:\n            x = layer(x)",
        ),
        (
            "layers = []\n        for _ in range(4):\n            layers.append(Block())\n        self.layers = nn.ModuleList(layers)",
            "for i, layer in enumerate(self.layers):\n            x = layer(x)",
        ),
        (
            "self.layers = nn.ModuleDict(dict(h=nn.ModuleList([Block() for _ in range(4)])))",
            "for layer in self.layers.h:\n            x = layer(x)",
        ),
        (
            "self.layers = nn.ModuleList([Block() for _ in range(4)])",
            "for i in range(4):\n            x = self.layers[i](x)",
        ),
        ("self.layers = nn.ModuleList([Block() for _ in range(4)])", "layer = self.layers[0]\n        x = layer(x)"),
        (
            "self.layers = nn.ModuleList([Block() for _ in range(4)])",
            "for a, layer in zip(range(4), self.layers):\n            x = layer(x)",
        ),
        (
            "self.layers = nn.ModuleDict({'a': Block()})",
            "for name, layer in self.layers.items():\n            x = layer(x)",
        ),
        (
            "self.layers = nn.Sequential(*[Block() for _ in range(4)])",
            "x = self.layers(x)\n        x = self.layers[0].extra(x)",
        ),
        ("self.add_module('layer0', Block())", "x = self.layer0(x)"),
        (
            "self.layers = nn.ModuleList([copy.deepcopy(Block()) for _ in range(4)])",
            "for layer in reversed(self.layers):\n            x = layer(x)",
        ),
    ],
)
def test_block_lists(init, loop):
    reach = build(f"""
import copy
from torch import nn
class Block(nn.Module):
    def forward(self, x):
        return x
    def extra(self, x):
        return x
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        {init}
    def forward(self, x):
        {loop}
        return x
""")
    assert chains(reach)["Block.forward"] == "reached via Net.forward → Block.forward"


def test_recursion_and_cycles_terminate():
    reach = build("""
        from torch import nn
        def f(x):
            return g(x)
        def g(x):
            return f(x)
        class A(nn.Module):
            def __init__(self):
                super().__init__()
                self.b = B()
            def forward(self, x):
                return f(self.b(x))
        class B(nn.Module):
            def __init__(self):
                super().__init__()
                self.a = A()
            def forward(self, x):
                return self.forward(self.a(x))
    """)
    got = chains(reach)
    assert got["g"].endswith("f → g") and "B.forward" in got


def test_a_local_name_shadows_module_function():
    reach = build("""
        from torch import nn
        def helper(x):
            return x
        class Net(nn.Module):
            def forward(self, x, helper=None):
                return helper(x)
    """)
    assert "helper" not in chains(reach)


def test_cross_file_relative_and_absolute_imports(tmp_path):
    pkg = tmp_path / "proj" / "pkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "layers.py").write_text(
        textwrap.dedent("""
        from torch import nn
        from .ops import scale
        class Block(nn.Module):
            def forward(self, x):
                return scale(x)
    """)
    )
    (pkg / "ops.py").write_text("def scale(x):\n    return x * 2\n")
    (pkg / "base.py").write_text("import torch\nclass Base(torch.nn.Module):\n    pass\n")
    model = pkg / "model.py"
    model.write_text(
        textwrap.dedent("""
        from torch import nn
        from .layers import Block
        from pkg.base import Base
        from pkg import ops
        class Net(Base):
            def __init__(self):
                super().__init__()
                self.blocks = nn.ModuleList([Block() for _ in range(4)])
            def forward(self, x):
                for b in self.blocks:
                    x = b(x)
                return ops.scale(x)
    """)
    )
    reach = reachability.from_source(model.read_text(), str(model))
    assert "Net" in reach.classes  # the base comes from pkg/base.py
    got = chains(reach)
    assert got["Block.forward"] == "reached via Net.forward → Block.forward"
    assert got["scale"] == "reached via Net.forward → scale"
    foreign = {f.label: f.local for f, _ in reach.reached()}
    assert foreign == {"Net.forward": True, "Block.forward": False, "scale": False}
    assert reach.module_class("Block").module.path == str(pkg / "layers.py")


def test_module_file_resolution(tmp_path):
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "b" / "c.py").write_text("")
    (tmp_path / "a" / "util.py").write_text("")
    importer = str(tmp_path / "a" / "b" / "main.py")
    assert module_file(importer, ".c") == str(tmp_path / "a" / "b" / "c.py")
    assert module_file(importer, "..util") == str(tmp_path / "a" / "util.py")
    assert module_file(importer, "a.util") == str(tmp_path / "a" / "util.py")
    assert module_file(importer, "nowhere") is None
    assert module_file("<stdin>", ".c") is None


def test_unparsable_local_module_is_ignored(tmp_path):
    (tmp_path / "broken.py").write_text("def (:\n")
    model = tmp_path / "m.py"
    src = (
        "from torch import nn\nfrom .broken import Block\nclass Net(nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        self.b = Block()\n    def forward(self, x):\n        return self.b(x)\n"
    )
    reach = reachability.from_source(src, str(model))
    assert list(chains(reach)) == ["Net.forward"]


def test_the_semantic_model_builds_each_graph_once_per_file():
    import ast

    from regcomp_lint.analysis.file_context import FileContext
    from regcomp_lint.files.source import SourceFile

    src = "from torch import nn\nclass N(nn.Module):\n    def forward(self, x):\n        return x\n"
    ctx = FileContext(SourceFile("x.py", src), ast.parse(src))
    for stmt in ctx.tree.body:
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            ctx.imports.add(stmt)
    semantic = ctx.semantic
    assert semantic.reachability() is semantic.reachability()
    assert semantic.reachability(deep=True) is semantic.reachability(deep=True, functions=True)
    assert semantic.reachability(deep=True) is not semantic.reachability()
    assert "N" in semantic.reachability().classes


def test_closures_called_in_a_method_are_nodes_with_their_parent():
    reach = build("""
        from torch import nn
        class MLP(nn.Module):
            def forward(self, x):
                def gate(t):
                    return t * self.scale
                return gate(x)
    """)
    got = chains(reach)
    assert got["MLP.forward.gate"] == "reached via MLP.forward → MLP.forward.gate"
    gate = next(f for f, _ in reach.reached() if f.label == "MLP.forward.gate")
    assert gate.parent.label == "MLP.forward" and not gate.is_method


def test_submodules_built_in_a_method_called_from_init():
    reach = build("""
        from torch import nn
        class Block(nn.Module):
            def forward(self, x):
                return x
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self._build()
            def _build(self):
                self.blocks = nn.ModuleList([Block() for _ in range(4)])
            def reset(self):
                self.other = Block()  # not called from __init__: not a known submodule
            def forward(self, x):
                for b in self.blocks:
                    x = b(x)
                return x
    """)
    net = reach.classes["Net"]
    assert set(net.submodules) == {"blocks"}
    assert "Block.forward" in chains(reach)


def test_paths_are_a_shortest_path_tree_that_can_skip_calls():
    reach = build(GPT)
    tree = reach.paths()
    labels = {
        f.label: (parent.label, call.lineno) if parent else None
        for f, (parent, call) in ((f, edge or (None, None)) for f, edge in tree.items())
    }
    assert labels["GPT.forward"] is None
    assert labels["Block.forward"][0] == "GPT.forward"
    assert labels["rotate"][0] == "Attention.forward"
    assert list(tree)[0].label == "GPT.forward"  # breadth first: roots come first
    skipped = reach.paths(lambda caller, call, callee: caller.label != "Attention.forward")
    assert {f.label for f in skipped} == {"GPT.forward", "Block.forward", "Attention.forward"}
    attn = next(f for f in tree if f.label == "Attention.forward")
    assert {f.label for f in reach.reachable([attn], tree)} == {"Attention.forward", "Attention._attn", "rotate"}


def test_counterpart_maps_a_shallow_function_to_the_deep_graph():
    shallow = build(GPT, "m.py")
    deep = reachability.Reachability(shallow.module, deep=True)
    for func, _ in shallow.reached():
        twin = deep.counterpart(func)
        assert twin is not None and twin.node is func.node and twin.label == func.label
        assert (twin.cls is None) == (func.cls is None)


def test_from_dot_import_module_then_attribute_call(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "util.py").write_text("def show(x):\n    return x\n")
    model = pkg / "model.py"
    model.write_text(
        "from torch import nn\nfrom . import util\nclass Net(nn.Module):\n"
        "    def forward(self, x):\n        return util.show(x)\n"
    )
    reach = reachability.from_source(model.read_text(), str(model))
    assert chains(reach)["show"] == "reached via Net.forward → show"
    assert reach.module.imports.qualname(ast.parse("util.show").body[0].value) == ".util.show"


def test_of_module_is_the_files_own_shallow_graph_kept_once(tmp_path):
    path = tmp_path / "ops.py"
    path.write_text(
        "from torch import nn\ndef f(x):\n    return x\nclass M(nn.Module):\n    def forward(self, x):\n        return f(x)\n"
    )
    module = reachability.load_module(str(path))
    own = reachability.of_module(module)
    assert own is reachability.of_module(module) and not own.deep
    assert chains(own) == {"M.forward": "reached via M.forward", "f": "reached via M.forward → f"}


def test_decorator_and_default_calls_are_not_edges():
    """`@cached(...)` runs when the def is made, not when forward runs."""
    reach = build("""
        from torch import nn
        def cached(size):
            print(size)
            return lambda f: f
        def default():
            return 1
        class Net(nn.Module):
            @cached(4)
            def forward(self, x, n=default()):
                return x
    """)
    assert chains(reach) == {"Net.forward": "reached via Net.forward"}


@pytest.mark.parametrize(
    "test,guard",
    [
        ("is_compiling()", True),
        ("not torch.compiler.is_compiling()", False),
        ("not is_tracing(mask)", False),
        ("mask is None and not is_torchdynamo_compiling()", False),
        ("mask is None or torch.compiler.is_compiling()", True),
        ("mask is None and is_compiling()", None),
        ("is_compiling(x)", None),
        ("x.any()", None),
    ],
)
def test_compiling_guards(test, guard):
    assert reachability.compiling_guard(ast.parse(test, mode="eval").body) is guard


def test_traced_operands_stop_at_a_short_circuiting_guard():
    node = ast.parse("not is_tracing(m) and (m[:, -1] == 0).all() and m", mode="eval").body
    assert [ast.unparse(v) for v in reachability.traced_operands(node)] == ["not is_tracing(m)"]
    node = ast.parse("m.any() or is_compiling() or m.all()", mode="eval").body
    assert [ast.unparse(v) for v in reachability.traced_operands(node)] == ["m.any()", "is_compiling()"]


def test_a_local_module_that_became_a_named_pipe_is_skipped_not_waited_on(tmp_path):
    """``module_file`` checks ``isfile``, but the file can be swapped for a FIFO before it is
    read: the load must give up (None) instead of waiting for a writer forever."""
    import os

    fifo = tmp_path / "helpers.py"
    os.mkfifo(fifo)
    assert modules._load(str(fifo), 0, 0) is None
