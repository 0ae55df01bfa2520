"""A deep copy of the prepared model taken after training starts (``torch.save(deepcopy(model)
.state_dict(), path)``, YOLOv5-style trainers, survey 26b cspdarknet_cls) copies the unwrapped
model: a copy of the prepared one saved ``_orig_mod.`` (and, on several processes,
``_orig_mod.module.``) keys that no plain model loads strictly, and pickled the compile wrapper."""

from __future__ import annotations

from regcomp_lint.codemod import convert_source

SCRIPT = """
from copy import deepcopy

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def main():
    loader = DataLoader(TensorDataset(torch.randn(32, 4), torch.randn(32, 1)), batch_size=4, shuffle=True)
    model = nn.Linear(4, 1)
    ema_model = deepcopy(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        for x, y in loader:
            loss = nn.functional.mse_loss(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        torch.save(deepcopy(model).state_dict(), "latest.pt")
        ckpt = {"model": deepcopy(model).half(), "epoch": epoch}
        torch.save(ckpt, "last_full.pt")


if __name__ == "__main__":
    main()
"""


def test_a_copy_taken_after_training_copies_the_unwrapped_model():
    result = convert_source(SCRIPT, "train.py")
    assert result.refused is None, result.refused
    unwrapped = "deepcopy(accelerator.unwrap_model(model, keep_torch_compile=False))"
    assert f'accelerator.save({unwrapped}.state_dict(), "latest.pt")' in result.text
    assert f'ckpt = {{"model": {unwrapped}.half(), "epoch": epoch}}' in result.text


def test_a_copy_taken_before_training_is_left_to_copy_the_plain_module():
    result = convert_source(SCRIPT, "train.py")
    assert "    ema_model = deepcopy(model)\n" in result.text
