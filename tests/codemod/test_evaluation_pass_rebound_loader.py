"""The note on a loop outside training over the prepared training loader follows the binding,
not the name (survey 19a, a molecule regressor on torch_geometric's DataLoader): after training
the script builds ``train_dataloader = DataLoader(...)`` anew and measures on it. That loader is
not prepared, so the pass covers the whole set (measured on a 2-process replica: 64 of 64
training samples predicted); the note said it saw "only this process's share"."""

from regcomp_lint.codemod import convert_source

SCRIPT = """\
import torch
import torch.nn as nn
from torch_geometric.loader import DataLoader


def run(train_dataset):
    model = nn.Linear(4, 1)
    train_dataloader = DataLoader(train_dataset, batch_size=2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(3):
        for batch in train_dataloader:
            loss = model(batch).sum()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    model.eval()
    preds = []
    train_dataloader = DataLoader(train_dataset, batch_size=2)
    for batch in train_dataloader:
        preds += list(model(batch).detach())
    return preds
"""

NOTE = "train_dataloader is prepared for training, so the loop over it"


def test_no_share_note_for_a_loader_built_anew():
    result = convert_source(SCRIPT, "train.py")
    assert result.refused is None, result.refused
    assert "model, optimizer, train_dataloader = accelerator.prepare(" in result.text, result.text
    assert not any(NOTE in note for note in result.notes), result.notes


def test_the_note_stays_for_the_prepared_loader_itself():
    result = convert_source(
        SCRIPT.replace(
            "    train_dataloader = DataLoader(train_dataset, batch_size=2)\n    for batch", "    for batch"
        ),
        "train.py",
    )
    assert result.refused is None, result.refused
    assert any(NOTE in note for note in result.notes), result.notes
