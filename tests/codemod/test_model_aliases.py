"""The optimizer built from a second name of the model (survey 20e, a tiny-GPT SFT script:
``orig_model = model`` then ``if cfg.compile and device == "cuda": model = torch.compile(model)``,
``optimizer = orig_model.configure_optimizers(...)``, the loop calling ``model(x, y)``). The
conversion prepared ``orig_model`` (the optimizer's owner) and left the loop calling ``model``,
the bare module prepare() never wrapped: no gradient sync, and the hand compile left in place.
Replica (prepared loader, 2 processes under accelerate launch): the two ranks ended with weight
sums -1.799608 and -1.016316 (the original, 1 process: -1.214800). The model the loop calls is
prepared now; the other name still holds the bare module, whose parameters are the same."""

from regcomp_lint.codemod import convert_source

SCRIPT = """\
import sys

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

use_compile = "--compile" in sys.argv
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
orig_model = model
COMPILE
loader = DataLoader(TensorDataset(torch.randn(64, 8), torch.randn(64, 1)), batch_size=8)
optimizer = torch.optim.SGD(orig_model.parameters(), lr=0.1)
for x, y in loader:
    loss = nn.functional.mse_loss(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
torch.save(orig_model.state_dict(), "last.pt")
"""


def test_the_model_the_loop_calls_is_prepared_not_the_optimizers_second_name():
    result = convert_source(SCRIPT.replace("COMPILE\n", ""), "t.py")
    assert result.refused is None, result.refused
    assert "model, optimizer, loader = accelerator.prepare(model, optimizer, loader)" in result.text, result.text
    assert "orig_model = model\n" in result.text, result.text


def test_the_hand_compile_of_the_called_model_goes_to_the_plugin():
    result = convert_source(SCRIPT.replace("COMPILE", "if use_compile:\n    model = torch.compile(model)"), "t.py")
    assert result.refused is None, result.refused
    assert 'TorchDynamoPlugin(backend="inductor" if use_compile else "no")' in result.text, result.text
    assert "torch.compile(model)" not in result.text, result.text
    assert "accelerator.prepare(model, optimizer, loader)" in result.text, result.text


def test_a_second_name_the_loop_calls_stays_the_prepared_one():
    script = SCRIPT.replace("COMPILE\n", "").replace("model(x)", "orig_model(x)")
    result = convert_source(script, "t.py")
    assert result.refused is None, result.refused
    assert "orig_model, optimizer, loader = accelerator.prepare(orig_model, optimizer, loader)" in result.text, (
        result.text
    )
