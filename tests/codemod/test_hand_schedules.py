"""A learning rate set by hand in the training loop is named once the loader is prepared
(codemod/hand_schedules.py)."""

from __future__ import annotations

from regcomp_lint.codemod import convert_source

SCRIPT = """\
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

device = "cuda" if torch.cuda.is_available() else "cpu"
LOADER
model = nn.Linear(4, 1).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
burn_in = 20
for epoch in range(3):
    for batch_i, (x, y) in enumerate(BATCHES):
        batches_done = len(BATCHES) * epoch + batch_i
        for g in optimizer.param_groups:
            g["lr"] = 0.1 * min(1.0, batches_done / burn_in)
        loss = nn.functional.mse_loss(model(x.to(device)), y.to(device))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
"""


def test_a_burn_in_counted_in_batches_of_a_prepared_loader_is_named():
    """YOLOv3's trainer: on N processes the burn-in ends after N times the data."""
    text = SCRIPT.replace(
        "LOADER", "loader = DataLoader(TensorDataset(torch.randn(64, 4), torch.randn(64, 1)), batch_size=8)"
    )
    result = convert_source(text.replace("BATCHES", "loader"), "train.py")
    assert result.refused is None, result.refused
    assert any(n.startswith("the learning rate is set by hand at line 14: with loader prepared") for n in result.notes)


def test_batches_the_script_draws_itself_are_not_sharded_so_nothing_is_named():
    text = SCRIPT.replace("LOADER", "batches = [(torch.randn(8, 4), torch.randn(8, 1)) for _ in range(8)]")
    result = convert_source(text.replace("BATCHES", "batches"), "train.py")
    assert result.refused is None, result.refused
    assert not any("set by hand" in n for n in result.notes)
