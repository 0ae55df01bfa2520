"""A loop that trains on one branch of a flag, over a loader bound by that flag's ``if``.

survey24b mdrnn (ctallec/world-models trainmdrnn.py): ``data_pass(epoch, train)`` binds ``loader =
train_loader`` under ``if train:`` and ``loader = test_loader`` otherwise, and its one loop steps the
optimizer under ``if train:``. main took the last binding: it prepared ``test_loader`` as the
training loader and left ``train_loader`` whole; a replica on 2 processes trained every rank on all
the data (32 steps each, as many as 1 process) and computed a sharded test loss (0.598 vs 1.203),
each rank its own, so ReduceLROnPlateau cut rank 0's LR at epoch 7 and not rank 1's.
"""

from __future__ import annotations

from regcomp_lint.codemod import ConvertOptions, convert_source

SOURCE = """
from functools import partial
import torch
from torch.utils.data import DataLoader, TensorDataset

model = torch.nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
train_loader = DataLoader(TensorDataset(torch.randn(32, 4)), batch_size=4, shuffle=True)
test_loader = DataLoader(TensorDataset(torch.randn(16, 4)), batch_size=4)


def data_pass(epoch, train):
    if train:
        model.train()
        loader = train_loader
    else:
        model.eval()
        loader = test_loader
    total = 0.0
    for (x,) in loader:
        if train:
            loss = model(x).pow(2).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        else:
            with torch.no_grad():
                loss = model(x).pow(2).mean()
        total += loss.item()
    return total / len(loader)


train = partial(data_pass, train=True)
test = partial(data_pass, train=False)
for e in range(3):
    train(e)
    test_loss = test(e)
"""


def test_the_loader_of_the_training_branch_is_prepared_and_the_other_left_whole():
    result = convert_source(SOURCE, "train.py", ConvertOptions())
    assert result.refused is None, result.refused
    assert "model, optimizer, train_loader = accelerator.prepare(model, optimizer, train_loader)" in result.text
    assert any("test_loader is not iterated by the training loop" in note for note in result.notes), result.notes
