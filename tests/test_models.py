"""Which expressions hold a model with repeated blocks: the recognition RC501 builds on.

Each source ends with ``probe(expr)`` calls; the test asks the finder about every probed
expression at the point of the call.
"""

from __future__ import annotations

import ast
import textwrap

import pytest

from regcomp_lint.analysis.file_context import FileContext
from regcomp_lint.analysis.models import RepeatedBlocks, is_transformers_model_name, iteration_count
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


def probed(src: str) -> list[RepeatedBlocks | None]:
    src = textwrap.dedent(src)
    ctx = FileContext(SourceFile("m.py", src), ast.parse(src))
    rule = _Probe(ctx)
    walk(ctx, [rule])
    finder = ctx.semantic.model_finder
    return [finder.model_of(expr, where) for expr, where in rule.probes]


NANOGPT = """
import torch.nn as nn

class Block(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.mlp = nn.Linear(config.n_embd, config.n_embd)

class GPT(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(config.vocab_size, config.n_embd),
            h=nn.ModuleList([Block(config) for _ in range(config.n_layer)]),
        ))
"""


def test_nanogpt_class_with_config_depth():
    [found] = probed(NANOGPT + "probe(GPT(config))\n")
    assert found == RepeatedBlocks("local", "GPT", "Block", None)
    assert found.describe() == "`Block` ×n"


def test_block_itself_is_not_a_model():
    assert probed(NANOGPT + "probe(Block(config))\n") == [None]


@pytest.mark.parametrize(
    "init, expected",
    [
        ("self.h = nn.ModuleList([Block() for _ in range(12)])", "`Block` ×12"),
        ("self.h = nn.ModuleList(Block() for i in range(2, 8))", "`Block` ×6"),
        ("self.h = nn.ModuleList([Block()] * 4)", "`Block` ×4"),
        ("self.h = nn.ModuleList(2 * [Block(), Block()])", "`Block` ×4"),
        ("self.h = nn.ModuleList([Block(), Block(), Block(), Block()])", "`Block` ×4"),
        ("self.h = nn.ModuleList([lib.Block(c) for c in cfgs])", "`Block` ×n"),
        ("self.h = nn.ModuleList([copy.deepcopy(layer) for _ in range(n)])", "blocks ×n"),
        ("layers = [Block() for _ in range(6)]\n        self.h = nn.ModuleList(layers)", "`Block` ×6"),
        ("self.h = nn.ModuleList()\n        for _ in range(5):\n            self.h.append(Block())", "`Block` ×5"),
        (
            "layers = []\n        for i in range(n):\n            layers.append(Block(i))\n        self.h = nn.ModuleList(layers)",
            "`Block` ×n",
        ),
        (
            "self.h = nn.ModuleList([nn.TransformerEncoderLayer(8, 2) for _ in range(6)])",
            "`TransformerEncoderLayer` ×6",
        ),
    ],
)
def test_repeated_block_spellings(init, expected):
    src = f"import copy\nimport torch.nn as nn\nclass Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n        {init}\nprobe(Net())\n"
    [found] = probed(src)
    assert found is not None and found.describe() == expected


@pytest.mark.parametrize(
    "init",
    [
        "self.h = nn.ModuleList([Block() for _ in range(3)])",  # too few
        "self.h = nn.ModuleList([Block()] * 2)",
        "self.h = nn.ModuleList([nn.Linear(4, 4) for _ in range(8)])",  # single-op layers
        "self.h = nn.Sequential(*[Block() for _ in range(8)])",  # compile_regions only looks at ModuleList
        "self.h = nn.ModuleList([Block() for _ in range(8) if keep])",  # filtered: count unknown
        "self.h = nn.ModuleList([A(), B(), A(), B()])",  # not one class
        "self.h = [Block() for _ in range(8)]",  # a plain list registers nothing
        "self.h = nn.ModuleList()\n        for _ in range(2):\n            self.h.append(Block())",
    ],
)
def test_not_repeated_blocks(init):
    src = f"import torch.nn as nn\nclass Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n        {init}\nprobe(Net())\n"
    assert probed(src) == [None]


def test_module_list_spellings_resolve_through_imports():
    for header, spelled in [
        ("from torch import nn", "nn.ModuleList"),
        ("import torch", "torch.nn.ModuleList"),
        ("from torch.nn import ModuleList as ML", "ML"),
    ]:
        src = f"{header}\nclass Net:\n    def __init__(self):\n        self.h = {spelled}([B() for _ in range(4)])\nprobe(Net())\n"
        assert probed(src)[0] is not None, header
    src = "from mylib import ModuleList\nclass Net:\n    def __init__(self):\n        self.h = ModuleList([B() for _ in range(4)])\nprobe(Net())\n"
    assert probed(src) == [None]


def test_blocks_through_submodel_and_base_class():
    src = (
        NANOGPT
        + """
class Wrapper(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.gpt = GPT(config)

class Child(GPT):
    pass

class ChildWithInit(GPT):
    def __init__(self, config):
        super().__init__(config)
        self.extra = nn.Linear(2, 2)

class Unrelated(GPT):
    def __init__(self):
        self.x = 1

probe(Wrapper(cfg))
probe(Child(cfg))
probe(ChildWithInit(cfg))
probe(Unrelated())
"""
    )
    wrapper, child, child_init, unrelated = probed(src)
    assert wrapper is not None and wrapper.block == "Block"
    assert child == RepeatedBlocks("local", "Child", "Block", None)
    assert child_init is not None
    assert unrelated is None


def test_self_referencing_class_terminates():
    src = "import torch.nn as nn\nclass Tree(nn.Module):\n    def __init__(self):\n        self.kids = Tree()\nprobe(Tree())\n"
    assert probed(src) == [None]


@pytest.mark.parametrize(
    "src, expected",
    [
        (
            "from transformers import AutoModelForCausalLM\nprobe(AutoModelForCausalLM.from_pretrained('gpt2'))",
            "AutoModelForCausalLM",
        ),
        ("import transformers\nprobe(transformers.AutoModel.from_config(cfg))", "AutoModel"),
        ("from transformers import GPT2LMHeadModel as M\nprobe(M(config))", "GPT2LMHeadModel"),
        (
            "from transformers.models.llama import LlamaForCausalLM\nprobe(LlamaForCausalLM.from_pretrained(p))",
            "LlamaForCausalLM",
        ),
        (
            "from transformers import *\nprobe(BertForSequenceClassification.from_pretrained(p))",
            "BertForSequenceClassification",
        ),
        (
            "from transformers import T5Model\nprobe(T5Model.from_pretrained(p, torch_dtype=dtype).to('cuda'))",
            "T5Model",
        ),
    ],
)
def test_transformers_models(src, expected):
    [found] = probed(src + "\n")
    assert found == RepeatedBlocks("transformers", expected, None, None)
    assert found.describe() == f"transformers model `{expected}`"


@pytest.mark.parametrize(
    "src",
    [
        "from transformers import AutoTokenizer\nprobe(AutoTokenizer.from_pretrained('x'))",
        "from transformers import AutoConfig\nprobe(AutoConfig.from_pretrained('x'))",
        "from transformers import DataCollatorForLanguageModeling\nprobe(DataCollatorForLanguageModeling(tok))",
        "from transformers import AutoModel\nprobe(AutoModel(cfg))",  # Auto classes cannot be instantiated
        "from mylib import AutoModel\nprobe(AutoModel.from_pretrained('x'))",
        "probe(AutoModel.from_pretrained('x'))",  # no import at all
    ],
)
def test_not_transformers_models(src):
    assert probed(src + "\n") == [None]


def test_model_class_names():
    for name in ("AutoModel", "AutoModelForCausalLM", "GPT2LMHeadModel", "BertModel", "ViTForImageClassification"):
        assert is_transformers_model_name(name), name
    for name in (
        "AutoTokenizer",
        "GPT2Config",
        "TFAutoModel",
        "FlaxBertModel",
        "PreTrainedModel",
        "DataCollatorForSeq2Seq",
        "pipeline",
    ):
        assert not is_transformers_model_name(name), name


def test_names_are_followed_through_assignments_and_calls():
    src = (
        NANOGPT
        + """
model = GPT(cfg)
model.to(device)
model = model.to(device).train()
probe(model)
alias = model
probe(alias)
model, opt = accelerator.prepare(model, opt)
probe(model)
probe(opt)
a, b = model, 3
probe(a)
probe(b)
"""
    )
    found = probed(src)
    assert [f is not None for f in found] == [True, True, True, False, True, False]


def test_rebinding_replaces_the_model():
    src = "from transformers import AutoModel\nmodel = AutoModel.from_pretrained('x')\nprobe(model)\nmodel = model.lm_head\nprobe(model)\n"
    assert [f is not None for f in probed(src)] == [True, False]


def test_use_before_assignment_in_same_statement_sees_previous_binding():
    src = "from transformers import AutoModel\nmodel = AutoModel.from_pretrained('x')\nmodel = probe(model)\n"
    assert probed(src)[0] is not None


def test_functions_returning_models_even_when_defined_later():
    src = (
        NANOGPT
        + """
def main():
    model = build(cfg)
    probe(model)

def build(cfg):
    net = GPT(cfg)
    return net.cuda()
"""
    )
    assert probed(src)[0] is not None


def test_scopes_parameters_loops_and_comprehensions_shadow():
    src = (
        NANOGPT
        + """
model = GPT(cfg)
def f(model):
    probe(model)
def g():
    probe(model)
other = GPT(cfg)
[probe(other) for other in things]
probe(other)
for other in others:
    probe(other)
"""
    )
    assert [f is not None for f in probed(src)] == [False, True, False, True, False]


def test_function_sees_the_module_binding_that_comes_last():
    src = NANOGPT + "def g():\n    probe(model)\nmodel = GPT(cfg)\nfor model in models:\n    pass\n"
    assert probed(src) == [None]


def test_self_attributes_across_methods():
    src = (
        NANOGPT
        + """
class Trainer:
    def __init__(self, cfg):
        self.model = GPT(cfg)

    def setup(self):
        probe(self.model)
        self.model = self.model.cuda()
        probe(self.model)

    def other(self):
        self.model = None
        probe(self.model)
"""
    )
    assert [f is not None for f in probed(src)] == [True, True, False]


def test_ddp_wrapper_keeps_the_model():
    src = (
        NANOGPT
        + "from torch.nn.parallel import DistributedDataParallel as DDP\nmodel = DDP(GPT(cfg), device_ids=[0])\nprobe(model)\n"
    )
    assert probed(src)[0] is not None


def test_iteration_count():
    def count(text):
        return iteration_count(ast.parse(text, mode="eval").body)

    assert count("range(6)") == 6
    assert count("range(2, 10, 2)") == 4
    assert count("(a, b, c)") == 3
    assert count("range(n)") is None
    assert count("range(1, 2, 0)") is None  # ValueError in range, not a crash


def test_many_methods_reassigning_an_attribute_stay_fast():
    methods = "".join(f"    def m{i}(self):\n        self.model = self.model.cuda()\n" for i in range(60))
    src = (
        NANOGPT
        + f"class T:\n    def __init__(self):\n        self.model = GPT(cfg)\n{methods}    def last(self):\n        probe(self.model)\n"
    )
    assert probed(src)[0] is not None


def test_deep_chains_of_names_end():
    chain = "".join(f"m{i + 1} = m{i}\n" for i in range(200))
    assert probed(NANOGPT + "m0 = GPT(cfg)\n" + chain + "probe(m200)\n") == [None]  # past MAX_DEPTH: unknown


# -- the conversion asks the same question ---------------------------------------------------

_BLOCK = "class Block(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.mlp = nn.Linear(2, 2)\n\n"
_NET = "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n        {}\n\n"
_LOOP = (
    "    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
    "    for step in range(10):\n"
    "        loss = model(torch.randn(4, 2)).sum()\n"
    "        optimizer.zero_grad()\n"
    "        loss.backward()\n"
    "        optimizer.step()\n"
)

#: (definitions, model expression, has repeated blocks). Each case once split the lint (RC501)
#: and the conversion (``use_regional_compilation=True``), which had their own copies.
DISAGREED = [
    # the conversion counted single-op torch layers as blocks
    (_NET.format("self.h = nn.ModuleList([nn.Linear(2, 2) for _ in range(6)])"), "Net()", False),
    # the conversion read a literal range(a, b) as unknown, so "many"
    (_BLOCK + _NET.format("self.h = nn.ModuleList([Block() for _ in range(1, 3)])"), "Net()", False),
    # the conversion did not see `[Block()] * n`, `append` in a loop, a base class, a factory function
    (_BLOCK + _NET.format("self.h = nn.ModuleList([Block()] * 4)"), "Net()", True),
    (
        _BLOCK
        + _NET.format("self.h = nn.ModuleList()\n        for _ in range(6):\n            self.h.append(Block())"),
        "Net()",
        True,
    ),
    (
        _BLOCK + _NET.format("self.h = nn.ModuleList([Block() for _ in range(6)])") + "class Child(Net):\n    pass\n\n",
        "Child()",
        True,
    ),
    (
        _BLOCK
        + _NET.format("self.h = nn.ModuleList([Block() for _ in range(6)])")
        + "def build():\n    return Net()\n\n",
        "build()",
        True,
    ),
    # the conversion matched any name shaped like a model, imported from transformers or not
    (
        "from transformers import DataCollatorForLanguageModeling\n",
        "DataCollatorForLanguageModeling.from_pretrained('x')",
        False,
    ),
    ("class MyModel(nn.Module):\n    pass\n\n", "MyModel.from_pretrained('x')", False),
    # the lint missed model classes with an underscore in the name
    (
        "from transformers import Qwen2_5_VLForConditionalGeneration\n",
        "Qwen2_5_VLForConditionalGeneration(config)",
        True,
    ),
    # both always agreed on these
    ("from transformers import AutoModelForCausalLM\n", "AutoModelForCausalLM.from_config(config)", True),
    (_BLOCK + _NET.format("self.h = nn.ModuleList([Block() for _ in range(n_layer)])"), "Net().to('cpu')", True),
]


@pytest.mark.parametrize("definitions, creation, expected", DISAGREED)
def test_lint_and_conversion_agree_on_repeated_blocks(definitions, creation, expected):
    from regcomp_lint.codemod import ConvertOptions, convert_source

    head = "import torch\nfrom torch import nn\nconfig = n_layer = None\n" + definitions
    [found] = probed(head + f"probe({creation})\n")
    assert (found is not None) == expected, found
    result = convert_source(head + f"\n\ndef main():\n    model = {creation}\n" + _LOOP, "train.py", ConvertOptions())
    assert result.refused is None
    [plugin] = [line for line in result.text.splitlines() if "TorchDynamoPlugin(" in line and "import" not in line]
    assert ("use_regional_compilation=True" in plugin) == expected, plugin


def test_model_class_in_a_local_module_is_judged_in_its_file(tmp_path):
    """nanoGPT: train.py compiles GPT imported from model.py; the finding names model.py's line."""
    from regcomp_lint.api import lint_source

    (tmp_path / "model.py").write_text(
        "import torch.nn as nn\nclass Block(nn.Module):\n    pass\nclass GPT(nn.Module):\n"
        "    def __init__(self, config):\n        super().__init__()\n"
        "        self.h = nn.ModuleList([Block() for _ in range(config.n_layer)])\n",
        encoding="utf-8",
    )
    train = tmp_path / "train.py"
    text = "import torch\nfrom model import GPT\nmodel = torch.compile(GPT(cfg))\n"
    [diag] = [d for d in lint_source(text, str(train)) if d.code == "RC501"]
    assert "`GPT` in model.py:7" in diag.message
    # a class of the same name that is not a model: nothing to report
    (tmp_path / "model.py").write_text("class GPT:\n    pass\n", encoding="utf-8")
    assert not [d for d in lint_source(text, str(train)) if d.code == "RC501"]


def test_trainer_regional_switch_in_a_launch_script_beside_it(tmp_path):
    """RC501 for the Trainer trusts a regional switch set in a launch file next to the script."""
    from regcomp_lint.api import lint_source

    train = tmp_path / "train.py"
    text = (
        "from transformers import AutoModelForCausalLM, Trainer, TrainingArguments\n"
        "model = AutoModelForCausalLM.from_pretrained('gpt2')\n"
        "Trainer(model=model, args=TrainingArguments('out', torch_compile=True)).train()\n"
    )
    assert [d.code for d in lint_source(text, str(train)) if d.code == "RC501"] == ["RC501"]
    (tmp_path / "launch.sh").write_text(
        "accelerate launch --dynamo_use_regional_compilation train.py\n", encoding="utf-8"
    )
    assert not [d for d in lint_source(text, str(train)) if d.code == "RC501"]
