"""codemod/handed_in.py: a trainer handed its model and optimizer; where the trainer is built,
moving the model to a device is left to the trainer's prepare()."""

from __future__ import annotations

from regcomp_lint.codemod import ConvertOptions, convert_source

SCRIPT = """
import torch
from torch.utils.data import DataLoader, TensorDataset


class Trainer:
    def __init__(self, model, loader, optimizer):
        self.model = model
        self.loader = loader
        self.optimizer = optimizer

    def train(self):
        for (x,) in self.loader:
            loss = self.model(x).sum()
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()


def main(device="cuda"):
    model = torch.nn.Linear(4, 2)
{placement}
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(TensorDataset(torch.randn(8, 4)), batch_size=4)
    Trainer(model, loader, optimizer).train()
"""


def convert(placement: str) -> str:
    result = convert_source(SCRIPT.replace("{placement}", placement), "train.py", ConvertOptions())
    assert result.refused is None, result.refused
    return result.text


def test_a_device_move_of_the_handed_in_model_is_removed():
    out = convert("    model.to(device)")
    assert "model.to(device)" not in out
    assert "    model = torch.nn.Linear(4, 2)\n    optimizer" in out


def test_a_dtype_cast_of_the_handed_in_model_stays():
    assert "    model.to(torch.float64)\n" in convert("    model.to(torch.float64)")
