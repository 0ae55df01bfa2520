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


TRAINER = """\
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset
from tqdm import tqdm
from transformers import get_cosine_schedule_with_warmup


class ScoreTrainer:
    def __init__(self, model, dataset, epochs=2, device="cuda"):
        self.model = model
        self.dataset = dataset
        self.epochs = epochs
        self.device = device
        self.train_loader, self.val_loader = self._create_data_loaders()
        self.model.to(self.device)

    def _create_data_loaders(self):
        train_ds, val_ds = torch.utils.data.random_split(self.dataset, [48, 16])
        train_loader = DataLoader(train_ds, batch_size=8, shuffle=True)
        val_loader = DataLoader(val_ds, batch_size=8)
        return train_loader, val_loader

    def _train_epoch(self):
        self.model.train()
LOOP
            x, y = x.to(self.device), y.to(self.device)
            loss = nn.functional.mse_loss(self.model(x), y)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            self.scheduler.step()

    def _validate_epoch(self):
        self.model.eval()
        with torch.no_grad():
            for x, y in self.val_loader:
                print(nn.functional.mse_loss(self.model(x.to(self.device)), y.to(self.device)).item())

    def train(self):
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=1e-3)
        self.scheduler = get_cosine_schedule_with_warmup(self.optimizer, 2, self.epochs * len(self.train_loader))
        for epoch in range(self.epochs):
            self._train_epoch()
            self._validate_epoch()


if __name__ == "__main__":
    ds = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
    ScoreTrainer(nn.Linear(4, 1), ds).train()
"""


@pytest.mark.parametrize(
    "loop",
    [
        # the survey's diffusion ScoreTrainer: a progress bar bound to a name in another method
        '        progress_bar = tqdm(self.train_loader, desc="train")\n        for i, (x, y) in enumerate(progress_bar):',
        "        batches = self.train_loader\n        for x, y in batches:",
        "        for i, (x, y) in enumerate(tqdm(self.train_loader)):",
    ],
)
def test_a_trainer_loader_unpacked_from_its_own_factory_method_is_prepared(loop):
    """``self.train_loader, self.val_loader = self._create_data_loaders()`` in ``__init__``,
    iterated by ``_train_epoch()``: was left unprepared (every rank trained on all the data, and
    the per-step scheduler was kept for it), with a note calling the batches the script's own."""
    result = convert_source(TRAINER.replace("LOOP", loop), "trainer.py")
    assert result.refused is None, result.refused
    notes = "\n".join(result.notes)
    assert "self.train_loader" in notes.split("prepared: ")[1].split("\n")[0]
    assert "self.scheduler" in notes.split("prepared: ")[1].split("\n")[0]
    assert "no DataLoader feeds the training loop" not in notes
    prepare = result.text.split("accelerator.prepare(")[1].split(")")[0]
    assert "self.val_loader" not in prepare


IN_SCOPE = """\
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset
from tqdm import tqdm


def get_loaders():
    ds = TensorDataset(torch.randn(32, 4), torch.randn(32, 1))
    return DataLoader(ds, batch_size=4, shuffle=True), DataLoader(ds, batch_size=4)


def train():
    train_loader, test_loader = get_loaders()
    model = nn.Linear(4, 1)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(2):
        BAR
        for i, (x, y) in pbar:
            loss = nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()


if __name__ == "__main__":
    train()
"""


@pytest.mark.parametrize(
    "bar",
    [
        # survey 26f's VQ-VAE: left unprepared before, every process iterated all of its batches
        'pbar = tqdm(enumerate(train_loader), total=len(train_loader), desc=f"Epoch {epoch}")',
        "pbar = enumerate(train_loader)",
    ],
)
def test_a_bar_over_a_factory_loader_bound_in_the_training_scope_prepares_the_loader(bar):
    result = convert_source(IN_SCOPE.replace("BAR", bar), "train.py")
    assert result.refused is None, result.refused
    assert "prepared: model, opt, train_loader" in result.notes, result.notes
    assert not any("feeds the training loop and is not prepared" in n for n in result.notes)
