"""codemod/shard_metrics.py: a training accuracy counted over the prepared (sharded) loader and
divided by the whole data set's length reports 1/N of the value on N processes (survey 14:
50 % for 100 % on two): the conversion names the line."""

from regcomp_lint.codemod import convert_source

SCRIPT = """\
import torch
from torch.utils.data import DataLoader, TensorDataset


def train_loop(train_loader, model, optimizer):
    correct = 0
    for x, y in train_loader:
        pred = model(x)
        loss = torch.nn.functional.cross_entropy(pred, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        correct += (pred.argmax(1) == y).sum().item()
    COUNT
    return acc


loader = DataLoader(TensorDataset(torch.randn(64, 4), torch.zeros(64, dtype=torch.long)), batch_size=8)
model = torch.nn.Linear(4, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
train_loop(loader, model, optimizer)
"""


def test_a_count_over_the_shard_divided_by_the_whole_data_set_is_named():
    result = convert_source(SCRIPT.replace("COUNT", "acc = correct / len(train_loader.dataset)"), "t.py")
    assert result.refused is None, result.refused
    assert any(
        "`correct / len(train_loader.dataset)` at line 14" in note and "1/N of the value" in note
        for note in result.notes
    ), result.notes


def test_a_count_reduced_across_processes_is_not_named():
    count = "acc = torch.distributed.all_reduce(torch.tensor(correct)) or correct / len(train_loader.dataset)"
    result = convert_source(SCRIPT.replace("COUNT", count), "t.py")
    assert not any("1/N of the value" in note for note in result.notes), result.notes


def test_an_average_over_the_loader_length_is_not_named():
    """`total / len(train_loader)` divides by this process's own number of batches."""
    result = convert_source(SCRIPT.replace("COUNT", "acc = correct / len(train_loader)"), "t.py")
    assert not any("1/N of the value" in note for note in result.notes), result.notes


EVALUATED = """\
import torch
from torch.utils.data import DataLoader, TensorDataset


def test(loader):
    model.eval()
    correct = 0
    for x, y in loader:
        correct += int((model(x).argmax(1) == y).sum())
    return correct / len(loader.dataset)


data = TensorDataset(torch.randn(64, 4), torch.zeros(64, dtype=torch.long))
train_loader = DataLoader(data, batch_size=8, shuffle=True)
val_loader = DataLoader(data, batch_size=8)
model = torch.nn.Linear(4, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    model.train()
    for x, y in train_loader:
        loss = torch.nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    train_acc = test(train_loader)
    val_acc = test(val_loader)
"""


def test_an_evaluation_function_handed_the_prepared_loader_is_named():
    """survey26b gnn_timm: ``test(train_loader)`` counts one shard and divides by the whole data
    set's length; the note only followed loops tied to one loader, and ``test`` is not training."""
    result = convert_source(EVALUATED, "t.py")
    assert result.refused is None, result.refused
    notes = [n for n in result.notes if "1/N of the value" in n]
    assert len(notes) == 1, result.notes
    assert "`correct / len(loader.dataset)` at line 10" in notes[0]
    assert "train_loader (handed to test() at line 25)" in notes[0]
