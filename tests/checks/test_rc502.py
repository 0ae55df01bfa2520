"""RC502 behaviour beyond the examples: the layouts `compile_regions` cannot regionalize, as
measured with accelerate 1.15 (see the rule's docs), and how the model is found."""

from __future__ import annotations

import textwrap

import pytest

from regcomp_lint.api import lint_source
from regcomp_lint.lint.config import Settings

HEAD = """
import torch
from torch import nn
from accelerate.utils import compile_regions

class Block(nn.Module):
    def __init__(self, dim=4):
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x):
        return self.fc(x)
"""


def rc502(src: str, filename: str = "train.py"):
    return lint_source(textwrap.dedent(src), filename, Settings(select=("RC502",)))


def net(init: str, forward: str, tail: str = "model = compile_regions(Net())\n") -> str:
    body = textwrap.indent(textwrap.dedent(init), " " * 8)
    fwd = textwrap.indent(textwrap.dedent(forward), " " * 8)
    return (
        textwrap.dedent(HEAD)
        + "\nclass Net(nn.Module):\n    def __init__(self, n=6):\n        super().__init__()\n"
        + body
        + "\n    def forward(self, x, task='a'):\n"
        + fwd
        + "\n"
        + tail
    )


def test_sequential_blocks_message_and_location():
    src = net("self.blocks = nn.Sequential(*[Block() for _ in range(n)])", "return self.blocks(x)")
    [diag] = rc502(src)
    assert diag.location.row == src.count("\n")  # the compile_regions call, on the last line
    assert diag.message.startswith(
        "regional compilation of `Net`: its repeated `Block` blocks sit in an `nn.Sequential` (`Net.blocks`, line 17)"
    )
    assert "compiles the whole model as one graph" in diag.message
    assert "`block.compile()`" in diag.message


def test_torchvision_style_helper_method_building_sequential_stages():
    src = net(
        """
        self.inplanes = 4
        self.layer1 = self._make_layer(4, 2)
        self.layer2 = self._make_layer(8, 2)
        """,
        "return self.layer2(self.layer1(x))",
    ).replace(
        "model = compile_regions",
        """
    def _make_layer(self, planes, blocks):
        layers = [Block(self.inplanes)]
        self.inplanes = planes
        for _ in range(1, blocks):
            layers.append(Block(planes))
        return nn.Sequential(*layers)

model = compile_regions""",
    )
    [diag] = rc502(src)
    assert "`Block` blocks sit in an `nn.Sequential`" in diag.message


def test_blocks_in_a_sequential_with_inner_lists_run_their_forward_eagerly():
    src = net("self.blocks = nn.Sequential(*[Multi() for _ in range(n)])", "return self.blocks(x)").replace(
        "class Net",
        """
class Multi(nn.Module):
    def __init__(self):
        super().__init__()
        self.heads = nn.ModuleList([nn.Linear(4, 2) for _ in range(2)])

    def forward(self, x):
        return torch.cat([h(x) for h in self.heads], -1)

class Net""",
    )
    [diag] = rc502(src)
    assert "runs the blocks' own `forward` eagerly" in diag.message


@pytest.mark.parametrize(
    "forward,effect",
    [
        ("return self.heads[task](x)", "not subscriptable"),
        ("return self.heads.a(x)", "through `.a`: they run uncompiled"),
        ("return sum(h(x) for h in self.heads.values())", "through `.values`: they run uncompiled"),
        ("return [h(x) for _, h in zip(range(2), self.heads)]", "passes it to `zip()`"),
    ],
)
def test_module_dict_beside_the_blocks(forward, effect):
    src = net(
        "self.blocks = nn.ModuleList([Block() for _ in range(n)])\nself.heads = nn.ModuleDict({'a': nn.Linear(4, 2)})",
        "for b in self.blocks:\n    x = b(x)\n" + forward,
    )
    [diag] = rc502(src)
    assert effect in diag.message
    assert "wraps `self.heads` of `Net` (an nn.ModuleDict)" in diag.message


@pytest.mark.parametrize(
    "forward",
    [
        "x = self.stem(x)",  # called: the compiled wrapper runs
        "x = x * len(self.stem)",  # OptimizedModule forwards len()
    ],
)
def test_sequential_stem_used_safely(forward):
    src = net(
        "self.stem = nn.Sequential(nn.Linear(4, 4), nn.ReLU())\nself.blocks = nn.ModuleList([Block() for _ in range(n)])",
        forward + "\nfor b in self.blocks:\n    x = b(x)\nreturn x",
    )
    assert rc502(src) == []


def test_nanogpt_layout_is_regionalizable():
    src = net(
        """
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(10, 4),
            h=nn.ModuleList([Block() for _ in range(n)]),
            ln_f=nn.LayerNorm(4),
        ))
        """,
        "x = self.transformer.wte(x)\nfor b in self.transformer.h:\n    x = b(x)\nreturn self.transformer.ln_f(x)",
    )
    assert rc502(src) == []


def test_model_found_through_a_factory_function_and_to_device():
    src = net(
        "self.blocks = nn.Sequential(Block(), Block())",
        "return self.blocks(x)",
        "def build():\n    return Net(4)\nmodel = build().to('cuda')\nmodel = compile_regions(model, mode='max-autotune')\n",
    )
    assert len(rc502(src)) == 1


@pytest.mark.parametrize(
    "tail",
    [
        "model = torch.compile(Net())\n",  # not regional
        (
            "from accelerate import Accelerator\nfrom accelerate.utils import TorchDynamoPlugin\n"
            "acc = Accelerator(dynamo_plugin=TorchDynamoPlugin(backend='inductor', use_regional_compilation=False))\nm = acc.prepare(Net())\n"
        ),
        (
            "from accelerate import Accelerator\nfrom accelerate.utils import TorchDynamoPlugin\n"
            "acc = Accelerator(dynamo_plugin=TorchDynamoPlugin(backend='inductor'))\nm = acc.prepare(Net())\n"
        ),
        "from transformers import AutoModel\nm = compile_regions(AutoModel.from_pretrained('gpt2'))\n",  # not a class we can read
    ],
)
def test_no_regional_request_or_unknown_model(tail):
    assert rc502(net("self.blocks = nn.Sequential(*[Block() for _ in range(n)])", "return self.blocks(x)", tail)) == []


def test_plugin_keyword_is_the_location():
    src = net(
        "self.blocks = nn.Sequential(Block(), Block())",
        "return self.blocks(x)",
        "from accelerate import Accelerator\nfrom accelerate.utils import TorchDynamoPlugin\n"
        "acc = Accelerator(dynamo_plugin=TorchDynamoPlugin(backend='inductor', use_regional_compilation=True))\n"
        "model, opt = acc.prepare(Net(), opt)\n",
    )
    [diag] = rc502(src)
    assert diag.location.row == src.count("\n") - 1
    assert src.splitlines()[diag.location.row - 1][diag.location.column - 1 :].startswith("True")


def test_model_imported_from_a_local_module(tmp_path):
    (tmp_path / "model.py").write_text(
        textwrap.dedent(HEAD)
        + textwrap.dedent("""
        class StemNet(nn.Module):
            def __init__(self):
                super().__init__()
                self.stem = nn.Sequential(nn.Linear(4, 4), nn.GELU())
                self.blocks = nn.ModuleList([Block() for _ in range(4)])

            def forward(self, x):
                for layer in self.stem:
                    x = layer(x)
                for b in self.blocks:
                    x = b(x)
                return x
    """)
    )
    train = tmp_path / "train.py"
    train.write_text(
        "from accelerate.utils import compile_regions\nfrom model import StemNet\nmodel = compile_regions(StemNet())\n"
    )
    [diag] = rc502(train.read_text(), str(train))
    assert (
        "`StemNet.forward` iterates it: `TypeError: 'OptimizedModule' object is not iterable` (model.py:"
        in diag.message
    )
