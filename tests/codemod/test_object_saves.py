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


_CLASS = SCRIPT[SCRIPT.index("class EarlyStopping") : SCRIPT.index("def evaluate")]
#: The same script with the class in a module of its own (pytorchtools.py, as most copies have it).
IMPORTED = SCRIPT.replace(_CLASS, "").replace(
    "from torch.utils.data import DataLoader, TensorDataset\n",
    "from torch.utils.data import DataLoader, TensorDataset\n\nfrom pytorchtools import EarlyStopping\n",
)


def _convert_beside(tmp_path, module: str | None, tail: str = "") -> tuple[str, list[str]]:
    if module is not None:
        (tmp_path / "pytorchtools.py").write_text(module)
    source = IMPORTED.replace("{tail}", textwrap.indent(textwrap.dedent(tail), "    "))
    result = convert_source(source, str(tmp_path / "train.py"), ConvertOptions())
    assert result.refused is None, result.refused
    return result.text, result.notes


def test_a_class_of_a_module_beside_the_script_gets_a_note_and_a_read_back_waits(tmp_path):
    """survey26b: ``from pytorchtools import EarlyStopping`` still wrote its checkpoint from every
    process, with no note. The fixer edits the script only: it names the write in the module to
    guard, and a read-back after it waits until every process has written."""
    text, notes = _convert_beside(
        tmp_path, "import torch\n\n\n" + _CLASS, 'model.load_state_dict(torch.load("checkpoint.pt"))\n'
    )
    note = next(n for n in notes if "torch.save() at pytorchtools.py line" in n)
    assert "EarlyStopping.save_checkpoint() (reached from the call at line" in note
    assert "PartialState().is_main_process" in note
    assert "    accelerator.wait_for_everyone()\n    accelerator.unwrap_model(model" in text


def test_a_class_of_a_module_not_found_gets_a_note(tmp_path):
    _text, notes = _convert_beside(tmp_path, None)
    notes = [n for n in notes if "EarlyStopping.__call__() at line" in n and "pytorchtools (not found" in n]
    assert len(notes) == 1, notes
    assert "it runs in every process: if it saves a checkpoint, put that torch.save under" in notes[0]


def test_a_module_write_already_under_a_rank_test_gets_no_note(tmp_path):
    module = "import torch\n\n\n" + _CLASS.replace(
        "        torch.save(model.state_dict(), self.path)\n",
        "        if torch.distributed.get_rank() == 0:\n            torch.save(model.state_dict(), self.path)\n",
    )
    _text, notes = _convert_beside(tmp_path, module)
    assert not any("torch.save() at pytorchtools.py" in n for n in notes)
