"""codemod/object_saves.py: a checkpoint written by a method of the script's own object called from
the training loop (pytorchtools' ``early_stopping(val_loss, model)``, whose ``save_checkpoint``
calls ``torch.save``) is written by the main process alone, and a read-back after it waits."""

from __future__ import annotations

import textwrap

from regcomp_lint.codemod import ConvertOptions, convert_source

SCRIPT = """
import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class EarlyStopping:
    def __init__(self, patience=7, path="checkpoint.pt"):
        self.patience = patience
        self.counter = 0
        self.best_score = None
        self.early_stop = False
        self.path = path

    def __call__(self, val_loss, model):
        score = -val_loss
        if self.best_score is None or score > self.best_score:
            self.best_score = score
            self.save_checkpoint(val_loss, model)
            self.counter = 0
        else:
            self.counter += 1
            if self.counter >= self.patience:
                self.early_stop = True

    def save_checkpoint(self, val_loss, model):
        torch.save(model.state_dict(), self.path)
        self.val_loss_min = val_loss


def evaluate(model, loader):
    model.eval()
    total = 0.0
    with torch.no_grad():
        for x, y in loader:
            total += nn.functional.mse_loss(model(x), y).item()
    return total / len(loader)


def main():
    data = TensorDataset(torch.randn(16, 4), torch.randn(16, 1))
    train_loader = DataLoader(data, batch_size=4, shuffle=True)
    val_loader = DataLoader(data, batch_size=4)
    model = nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    early_stopping = EarlyStopping(patience=3)
    for epoch in range(5):
        model.train()
        for x, y in train_loader:
            optimizer.zero_grad()
            loss = nn.functional.mse_loss(model(x), y)
            loss.backward()
            optimizer.step()
        early_stopping(evaluate(model, val_loader), model)
        if early_stopping.early_stop:
            break
{tail}

if __name__ == "__main__":
    main()
"""


def convert(tail: str = "", script: str = SCRIPT) -> str:
    source = script.replace("{tail}", textwrap.indent(textwrap.dedent(tail), "    "))
    result = convert_source(source, "train.py", ConvertOptions())
    assert result.refused is None, result.refused
    return result.text


def test_the_method_of_the_object_writes_its_checkpoint_on_the_main_process_only():
    out = convert()
    assert "        if PartialState().is_main_process:\n            torch.save(model.state_dict(), self.path)" in out
    assert "from accelerate import Accelerator, PartialState" in out
    # the call itself still runs everywhere: it decides the early stop every process takes
    assert "        early_stopping(evaluate(model, val_loader), accelerator.unwrap_model(" in out


def test_a_read_back_after_the_loop_waits_for_the_main_process_write():
    out = convert('model.load_state_dict(torch.load("checkpoint.pt"))\n')
    assert (
        '    accelerator.wait_for_everyone()\n    accelerator.unwrap_model(model, keep_torch_compile=False).load_state_dict(torch.load("checkpoint.pt"))'
        in out
    )


def test_a_save_already_under_a_rank_test_in_the_method_is_left_alone():
    script = SCRIPT.replace(
        "        torch.save(model.state_dict(), self.path)\n",
        "        if torch.distributed.get_rank() == 0:\n            torch.save(model.state_dict(), self.path)\n",
    )
    out = convert(script=script)
    assert "PartialState" not in out


def test_a_save_to_a_path_per_process_is_left_alone():
    script = SCRIPT.replace(
        "torch.save(model.state_dict(), self.path)",
        'torch.save(model.state_dict(), f"{self.path}.{self.rank}")',
    )
    out = convert(script=script)
    assert "PartialState" not in out
