"""Gradient clipping goes through the Accelerator (codemod/gradient_clipping.py)."""

from __future__ import annotations

import pytest

from regcomp_lint.codemod import convert_source

SCRIPT = """\
import torch
import torch.nn as nn
IMPORT
from torch.utils.data import DataLoader, TensorDataset

model = nn.Linear(4, 1)
OPTIMIZERS
loader = DataLoader(TensorDataset(torch.randn(64, 4), torch.randn(64, 1)), batch_size=8)
for epoch in range(2):
    for x, y in loader:
        loss = nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        CLIP
        optimizer.step()
"""
ONE = "optimizer = torch.optim.SGD(model.parameters(), lr=0.1)"


def _convert(clip, optimizers=ONE, imports=""):
    text = SCRIPT.replace("IMPORT\n", imports).replace("OPTIMIZERS", optimizers).replace("CLIP", clip)
    result = convert_source(text, "train.py")
    assert result.refused is None, result.refused
    return result


@pytest.mark.parametrize(
    ("clip", "imports", "expected"),
    [
        (
            "torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)",
            "",
            "accelerator.clip_grad_norm_(model.parameters(), 1.0)",
        ),
        (
            "nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0, norm_type=2)",
            "",
            "accelerator.clip_grad_norm_(model.parameters(), max_norm=1.0, norm_type=2)",
        ),
        (
            "clip_grad_norm_(model.parameters(), 0.5)",
            "from torch.nn.utils import clip_grad_norm_\n",
            "accelerator.clip_grad_norm_(model.parameters(), 0.5)",
        ),
        (
            "torch.nn.utils.clip_grad_value_(model.parameters(), 0.1)",
            "",
            "accelerator.clip_grad_value_(model.parameters(), 0.1)",
        ),
    ],
)
def test_clipping_goes_through_the_accelerator(clip, imports, expected):
    result = _convert(clip, imports=imports)
    assert f"        {expected}\n" in result.text
    assert any("unscales fp16 mixed precision's gradients before clipping" in n for n in result.notes)


def test_arguments_the_accelerator_does_not_take_keep_the_torch_call():
    result = _convert("torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, error_if_nonfinite=True)")
    assert "torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, error_if_nonfinite=True)" in result.text
    assert any("does not take its arguments" in n for n in result.notes)


def test_with_two_optimizers_the_clip_is_left_with_a_note():
    """accelerator.clip_grad_norm_ unscales every optimizer: a second clip in the step would fail."""
    two = ONE + "\nhead = nn.Linear(1, 1)\nother = torch.optim.SGD(head.parameters(), lr=0.1)\n"
    body = "torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n        other.step()\n        head(y).sum().backward()"
    result = _convert(body, optimizers=two)
    assert "        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n" in result.text
    assert any("with 2 optimizers" in n for n in result.notes), result.notes
