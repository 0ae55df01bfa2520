"""A loader class of the script's own (not a DataLoader) is not prepared, and the note says
that every process iterates all of it (it said "prepared too, so a DataLoader is sharded")."""

from regcomp_lint.codemod import convert_source

LOADER = """\
import torch


class Loader:
    def __init__(self, data, batch_size):
        self.data = data
        self.batch_size = batch_size

    def __iter__(self):
        for i in range(0, len(self.data), self.batch_size):
            yield self.data[i : i + self.batch_size]
"""

TRAIN = """\
import torch.nn as nn


def main():
    model = nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    train_loader = Loader(torch.randn(64, 4), 8)
    for epoch in range(2):
        for x in train_loader:
            loss = model(x).sum()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()


main()
"""


def test_a_loader_class_of_the_same_file_is_left_unprepared():
    result = convert_source(LOADER + "\n\n" + TRAIN, "train.py")
    assert result.refused is None, result.refused
    assert "model, optimizer = accelerator.prepare(model, optimizer)\n" in result.text
    assert any("is the script's own batch source, not a DataLoader" in n for n in result.notes), result.notes


def test_a_loader_class_of_a_local_module_too(tmp_path):
    """airbench's `airbench.CifarLoader(...)`."""
    (tmp_path / "loaders.py").write_text(LOADER)
    script = "import torch\n\nimport loaders\n" + TRAIN.replace("Loader(", "loaders.Loader(")
    result = convert_source(script, str(tmp_path / "train.py"))
    assert result.refused is None, result.refused
    assert "model, optimizer = accelerator.prepare(model, optimizer)\n" in result.text


def test_a_dataloader_subclass_is_still_prepared():
    text = ("from torch.utils.data import DataLoader\n" + LOADER).replace("class Loader:", "class Loader(DataLoader):")
    result = convert_source(text + "\n\n" + TRAIN, "train.py")
    assert result.refused is None, result.refused
    assert "accelerator.prepare(model, optimizer, train_loader)" in result.text


GENERATOR = """\
import torch


def get_batches(data, batch_size):
    for i in range(0, len(data), batch_size):
        yield data[i : i + batch_size]


def main():
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    data = torch.randn(64, 4)
    for epoch in range(2):
        batches = get_batches(data, 8)
        for x in batches:
            loss = model(x).sum()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()


main()
"""


def test_a_generator_function_of_the_same_file_is_the_scripts_own_batch_source():
    """Sweep 15 (a Muon/Coconut char-LM trainer): `batch = get_sequential_batches_random(...)`,
    a generator of the same file rebuilt each epoch, was taken for a loader to prepare, so the
    script was refused as "built anew in each pass (folds, repeated runs or a rebuilt
    optimizer)". prepare() hands a generator back unchanged: it is the script's own batch source."""
    result = convert_source(GENERATOR, "train.py")
    assert result.refused is None, result.refused
    assert "model, optimizer = accelerator.prepare(model, optimizer)\n" in result.text
    assert any("batches (get_batches(), line 14) is the script's own batch source" in n for n in result.notes), (
        result.notes
    )


def test_a_generator_built_once_is_not_prepared_either():
    text = GENERATOR.replace(
        "    for epoch in range(2):\n        batches = get_batches(data, 8)\n",
        "    batches = get_batches(data, 8)\n    for epoch in range(2):\n",
    )
    result = convert_source(text, "train.py")
    assert result.refused is None, result.refused
    assert "model, optimizer = accelerator.prepare(model, optimizer)\n" in result.text


HANDED_LOADER = """\
import torch
from torch.utils.data import DataLoader, TensorDataset


def train_one_epoch(model, loader):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in loader:
        optimizer.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()


class Client:
    def __init__(self, model, loader):
        self.model, self.loader = model, loader

    def fit(self):
        train_one_epoch(self.model, self.loader)


def main():
    loader = DataLoader(TensorDataset(torch.randn(8, 4), torch.randn(8, 1)), batch_size=2)
    Client(torch.nn.Linear(4, 1), loader).fit()
"""


def test_a_loader_handed_in_as_a_parameter_is_not_called_the_scripts_own_batches():
    """Sweep 15 (a Flower federated client): `for x, y in loader` over train_one_epoch()'s
    parameter, a DataLoader main() builds and hands through a client object; the note said "no
    DataLoader feeds the training loop: its batches come from the script's own code"."""
    result = convert_source(HANDED_LOADER, "client.py")
    assert result.refused is None, result.refused
    assert not any(n.startswith("no DataLoader feeds the training loop") for n in result.notes), result.notes
    assert any(
        "loader is a parameter of train_one_epoch(): what its callers hand in is not prepared here" in n
        for n in result.notes
    ), result.notes


ENDLESS = """\
import torch


def _endless(data, batch_size):
    while True:
        order = torch.randperm(len(data))
        for i in range(0, len(data) - batch_size + 1, batch_size):
            yield data[order[i : i + batch_size]]


def get_data(batch_size):
    data = torch.randn(64, 4)
    data_iter = _endless(data, batch_size)
    return data_iter, len(data)


model = torch.nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
train_data_iter, train_size = get_data(8)
step = 0
while step < 20:
    x = next(train_data_iter)
    loss = model(x).sum()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    step += 1
"""


def test_a_function_that_returns_a_generator_of_the_file_is_the_scripts_own_batch_source():
    """llama_mmqa (survey 21e): ``train_data_iter, train_size = get_metamathqa(...)`` hands back the
    endless generator ``_data_iter_padding(...)``; it was "prepared too, so a DataLoader is sharded"
    (prepare() returns it as it is: every process draws its own batches from all of the data)."""
    result = convert_source(ENDLESS, "train.py")
    assert result.refused is None, result.refused
    assert "model, optimizer = accelerator.prepare(model, optimizer)\n" in result.text, result.text
    assert any("train_data_iter (get_data(), line 19) is the script's own batch source" in n for n in result.notes), (
        result.notes
    )
