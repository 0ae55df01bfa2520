"""Training loaders unpacked from a factory's tuple are prepared however the training function
loops over them (codemod/plain.py's loaders of unknown origin, analysis/training_loops.py)."""

from __future__ import annotations

import pytest

from regcomp_lint.codemod import convert_source

SCRIPT = """\
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset
from tqdm import tqdm

device = "cuda" if torch.cuda.is_available() else "cpu"


def get_loaders():
    ds = TensorDataset(torch.arange(32, dtype=torch.float32).unsqueeze(1), torch.zeros(32, 1))
    return DataLoader(ds, batch_size=4, shuffle=True), DataLoader(ds, batch_size=4)


train_loader, dev_loader = get_loaders()
model = nn.Linear(1, 1).to(device)
opt = torch.optim.SGD(model.parameters(), lr=1e-3)


def train_epoch(loader):
LOOP
        x, y = x.to(device), y.to(device)
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()


for epoch in range(2):
    train_epoch(train_loader)
"""


@pytest.mark.parametrize(
    "loop",
    [
        "    for i, (x, y) in enumerate(loader):",
        # a speech trainer's progress bar, bound to a name first: every rank trained on all the data
        "    pbar = tqdm(enumerate(loader), total=len(loader))\n    for i, (x, y) in pbar:",
    ],
)
def test_a_factory_loader_the_training_function_loops_over_is_prepared(loop):
    result = convert_source(SCRIPT.replace("LOOP", loop), "train.py")
    assert result.refused is None, result.refused
    assert "prepared: model, opt, train_loader" in result.notes
    assert "dev_loader" not in result.text.split("accelerator.prepare(")[1].split(")")[0]
