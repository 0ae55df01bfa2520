"""RC302 behaviour beyond the examples: which compiles are shape-static, which padding varies."""

from __future__ import annotations

import pytest

from regcomp_lint.api import lint_source
from regcomp_lint.diagnostics import Location
from regcomp_lint.lint.config import Settings

HEAD = "import torch\nfrom transformers import AutoTokenizer, DataCollatorForSeq2Seq, DataCollatorWithPadding\n"


def rc302(src: str):
    return lint_source(src, "train.py", Settings(select=("RC302",)))


def test_points_at_the_static_keyword_and_names_the_padding_line():
    [diag] = rc302(HEAD + "collator = DataCollatorWithPadding(tok)\nmodel = torch.compile(model, dynamic=False)\n")
    assert (diag.location, diag.end_location) == (Location(4, 38), Location(4, 43))
    assert "`DataCollatorWithPadding` pads each batch to its longest sample (line 3)" in diag.message
    assert diag.fix is None


@pytest.mark.parametrize(
    "compile_line",
    [
        "model = torch.compile(model, dynamic=False)\n",
        "model = torch.compile(model, mode='reduce-overhead')\n",
        "model = torch.compile(model, mode='max-autotune', dynamic=None)\n",
        "model.compile(dynamic=False)\n",
        "from accelerate.utils import compile_regions\nmodel = compile_regions(model, dynamic=False)\n",
        "from accelerate.utils import TorchDynamoPlugin\nplugin = TorchDynamoPlugin('inductor', 'default', False, False)\n",
        "from accelerate.utils import TorchDynamoPlugin\nplugin = TorchDynamoPlugin(backend='inductor', mode='reduce-overhead')\n",
    ],
)
def test_static_shape_compiles(compile_line):
    assert len(rc302(HEAD + "collator = DataCollatorWithPadding(tok)\n" + compile_line)) == 1


@pytest.mark.parametrize(
    "compile_line",
    [
        "model = torch.compile(model)\n",
        "model = torch.compile(model, dynamic=True, mode='reduce-overhead')\n",
        "model = torch.compile(model, mode='max-autotune-no-cudagraphs')\n",
        "model = torch.compile(model, dynamic=flag)\n",
        "import re\npattern = re.compile('x', dynamic=False)\n",
    ],
)
def test_compiles_that_follow_the_length(compile_line):
    assert rc302(HEAD + "collator = DataCollatorWithPadding(tok)\n" + compile_line) == []


@pytest.mark.parametrize(
    "padding",
    [
        "collator = DataCollatorForSeq2Seq(tok, model=model)\n",
        "collator = DataCollatorWithPadding(tokenizer=tok, padding=True)\n",
        "collator = DataCollatorWithPadding(tokenizer=tok, padding='longest')\n",
        "collator = DataCollatorWithPadding(tok, pad_to_multiple_of=None)\n",
        "enc = tokenizer(texts, padding=True)\n",
        "enc = self.tokenizer.batch_encode_plus(texts, padding='longest')\n",
        "enc = tok.pad(features, padding=True, return_tensors='pt')\n",
        "enc = processor(images, texts, padding=True, return_tensors='pt')\n",
    ],
)
def test_padding_to_the_longest(padding):
    assert len(rc302(HEAD + padding + "model = torch.compile(model, dynamic=False)\n")) == 1


@pytest.mark.parametrize(
    "padding",
    [
        "collator = DataCollatorForSeq2Seq(tok, model=model, pad_to_multiple_of=8)\n",
        "collator = DataCollatorWithPadding(tok, padding='max_length', max_length=256)\n",
        "from transformers.utils import PaddingStrategy\ncollator = DataCollatorWithPadding(tok, padding=PaddingStrategy.MAX_LENGTH)\n",
        "enc = tokenizer(texts, padding='max_length', max_length=128)\n",
        "enc = tokenizer(texts, padding=True, pad_to_multiple_of=64)\n",
        "enc = tokenizer(texts, padding=False)\n",
        # a local class of the same name is not transformers' collator
        "class DataCollatorWithPadding2:\n    pass\nc = DataCollatorWithPadding2(tok)\n",
        "import numpy as np\nx = np.pad(a, 2)\n",
    ],
)
def test_fixed_or_no_padding(padding):
    assert rc302(HEAD + padding + "model = torch.compile(model, dynamic=False)\n") == []


def test_star_import_and_pad_sequence():
    src = "import torch\nfrom transformers import *\nc = DataCollatorForTokenClassification(tok)\nm = torch.compile(m, dynamic=False)\n"
    assert len(rc302(src)) == 1
    src = "import torch\nfrom torch.nn.utils.rnn import pad_sequence as pad\nb = pad(seqs)\nm = torch.compile(m, dynamic=False)\n"
    [diag] = rc302(src)
    assert "`pad_sequence`" in diag.message


def test_every_static_compile_of_the_file_is_reported():
    src = (
        HEAD
        + "c = DataCollatorWithPadding(tok)\na = torch.compile(m1, dynamic=False)\nb = torch.compile(m2, mode='reduce-overhead')\n"
    )
    assert [d.location.row for d in rc302(src)] == [4, 5]
