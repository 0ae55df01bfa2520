"""The prepared model handed to another local module's function that reads its own attributes
(codemod/handed_to_modules.py)."""

from __future__ import annotations

from regcomp_lint.codemod import convert_source

TRAIN = """\
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

from evaluate import evaluate


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.n_classes = 1
        self.fc = nn.Linear(4, 1)

    def forward(self, x):
        return self.fc(x)


model = Net()
ds = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
loader = DataLoader(ds, batch_size=8, shuffle=True)
val_loader = DataLoader(ds, batch_size=8)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for x, y in loader:
        loss = nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print("val", evaluate(model, val_loader))
"""


def _convert(tmp_path, evaluate_py: str):
    (tmp_path / "evaluate.py").write_text(evaluate_py)
    script = tmp_path / "train.py"
    script.write_text(TRAIN)
    result = convert_source(TRAIN, str(script))
    assert result.refused is None, result.refused
    return result


def test_an_evaluation_reading_the_models_attribute_gets_the_unwrapped_model(tmp_path):
    """milesial's UNet: evaluate.py reads net.n_classes, which DDP does not pass through."""
    result = _convert(
        tmp_path,
        "import torch\n\n\ndef evaluate(net, loader):\n    net.eval()\n    total = 0.0\n    with torch.no_grad():\n"
        "        for x, y in loader:\n            if net.n_classes == 1:\n                total += net(x).mean().item()\n"
        "    net.train()\n    return total\n",
    )
    assert (
        'print("val", evaluate(accelerator.unwrap_model(model, keep_torch_compile=False), val_loader))' in result.text
    )
    assert any("evaluate() of evaluate.py reads net.n_classes (line 9)" in n for n in result.notes), result.notes


def test_a_function_using_only_the_module_api_gets_the_prepared_model(tmp_path):
    result = _convert(
        tmp_path,
        "def evaluate(net, loader):\n    net.eval()\n    out = [net(x).sum().item() for x, _ in loader]\n    net.train()\n"
        "    return sum(out)\n",
    )
    assert 'print("val", evaluate(model, val_loader))' in result.text


def test_a_function_that_trains_is_named_in_a_note(tmp_path):
    result = _convert(
        tmp_path,
        "def evaluate(net, loader):\n    for x, y in loader:\n        (net(x) * net.n_classes).sum().backward()\n",
    )
    assert 'print("val", evaluate(model, val_loader))' in result.text
    assert any("and trains it" in n and "net.n_classes (line 3)" in n for n in result.notes), result.notes


def test_without_the_modules_file_nothing_is_guessed(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(TRAIN)
    result = convert_source(TRAIN, str(script))
    assert 'print("val", evaluate(model, val_loader))' in result.text
