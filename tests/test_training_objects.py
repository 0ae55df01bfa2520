"""Which constructor calls build a model, an optimizer, a data loader or an LR scheduler."""

from __future__ import annotations

import ast

import pytest

from regcomp_lint.analysis.file_context import FileContext
from regcomp_lint.analysis.name_resolution import ImportMap
from regcomp_lint.analysis.training_objects import Kind, constructor_kind
from regcomp_lint.files.source import SourceFile


def kind_of(src: str) -> Kind | None:
    """The kind of the last line's call, with the lines above as imports and classes."""
    tree = ast.parse(src)
    ctx = FileContext(SourceFile("t.py", src), tree)
    ctx.imports = ImportMap()
    classes = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            ctx.imports.add(node)
        elif isinstance(node, ast.ClassDef):
            classes[node.name] = node
    return constructor_kind(ctx, tree.body[-1].value, classes)


@pytest.mark.parametrize(
    "src,kind",
    [
        ("import torch\ntorch.optim.AdamW(p)", Kind.OPTIMIZER),
        ("from torch import optim\noptim.SGD(p, lr=0.1)", Kind.OPTIMIZER),
        ("import bitsandbytes as bnb\nbnb.optim.PagedAdamW8bit(p)", Kind.OPTIMIZER),
        ("from transformers import Adafactor\nAdafactor(p)", Kind.OPTIMIZER),
        ("from accelerate.utils import DummyOptim\nDummyOptim(p)", Kind.OPTIMIZER),
        ("from torch.utils.data import DataLoader as DL\nDL(ds)", Kind.DATALOADER),
        ("import torch.utils.data\ntorch.utils.data.DataLoader(ds)", Kind.DATALOADER),
        ("import torch\ntorch.optim.lr_scheduler.CosineAnnealingLR(o, 10)", Kind.SCHEDULER),
        (
            "from transformers import get_cosine_schedule_with_warmup\nget_cosine_schedule_with_warmup(o, 1, 2)",
            Kind.SCHEDULER,
        ),
        ("from transformers.optimization import get_scheduler\nget_scheduler('linear', o)", Kind.SCHEDULER),
        ("from diffusers.optimization import get_scheduler\nget_scheduler('constant', optimizer=o)", Kind.SCHEDULER),
        ("from transformers import AutoModelForCausalLM\nAutoModelForCausalLM.from_pretrained('gpt2')", Kind.MODEL),
        ("from transformers import BertForSequenceClassification\nBertForSequenceClassification(cfg)", Kind.MODEL),
        ("from diffusers import UNet2DConditionModel\nUNet2DConditionModel.from_pretrained('sd')", Kind.MODEL),
        ("import torchvision\ntorchvision.models.resnet18()", Kind.MODEL),
        ("import timm\ntimm.create_model('resnet50')", Kind.MODEL),
        ("from torch import nn\nnn.Sequential(nn.Linear(2, 2))", Kind.MODEL),
        ("import torch.nn as nn\nclass Net(nn.Module):\n    pass\nNet()", Kind.MODEL),
        ("import torch.nn as nn\nclass Base(nn.Module):\n    pass\nclass Net(Base):\n    pass\nNet()", Kind.MODEL),
        ("from transformers import GPT2LMHeadModel\nclass Mine(GPT2LMHeadModel):\n    pass\nMine(cfg)", Kind.MODEL),
        # classes of the file, by their bases: a Muon-style optimizer, a warm-up schedule
        ("import torch\nclass Muon(torch.optim.Optimizer):\n    pass\nMuon(p, lr=0.02)", Kind.OPTIMIZER),
        (
            "from torch.optim import Optimizer\nclass A(Optimizer):\n    pass\nclass B(A):\n    pass\nB(p)",
            Kind.OPTIMIZER,
        ),
        (
            "from torch.optim.lr_scheduler import LRScheduler\nclass Warm(LRScheduler):\n    pass\nWarm(o)",
            Kind.SCHEDULER,
        ),
    ],
)
def test_recognised(src, kind):
    assert kind_of(src) is kind


@pytest.mark.parametrize(
    "src",
    [
        "from torch import nn\nnn.CrossEntropyLoss()",
        "from torch import nn\nnn.ReLU()",
        "from transformers import AutoModel\nAutoModel(cfg)",
        "from transformers import AutoTokenizer\nAutoTokenizer.from_pretrained('x')",
        "import torch\ntorch.optim.Optimizer(p, {})",
        "import torch\ntorch.optim.swa_utils.AveragedModel(m)",
        "from diffusers import DDPMScheduler\nDDPMScheduler.from_pretrained('sd')",
        "from diffusers.training_utils import EMAModel\nEMAModel(p)",
        "class Net:\n    pass\nNet()",
        "from mylib import DataLoader\nDataLoader(ds)",
        "make_model()",
        "import torch\nclass Avg(torch.optim.swa_utils.AveragedModel):\n    pass\nAvg(m)",
        "class Muon:\n    pass\nMuon(p)",
    ],
)
def test_not_recognised(src):
    assert kind_of(src) is None
