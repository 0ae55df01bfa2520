"""``hasattr(model, "config")`` / ``getattr(model, "config", None)`` after ``prepare()``: DDP has no
such attribute, so on several processes the probe answers False / the default and the script
silently takes its other branch (codemod/wrapped_access.py). survey 19d's helper met it in a
replica's logging line; transformers-era scripts probe ``hasattr(model, "config")`` before
``model.config.save_pretrained``."""

from regcomp_lint.codemod import convert_source

SCRIPT = """\
import torch
from torch.utils.data import DataLoader, TensorDataset


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = torch.nn.Linear(4, 4)
        self.head = torch.nn.Linear(4, 1)

    def forward(self, x):
        return self.head(self.encoder(x))


model = Net()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(TensorDataset(torch.randn(16, 4), torch.randn(16, 1)), batch_size=4)
for epoch in range(2):
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
PROBE
"""


def test_a_probe_of_the_models_own_attribute_reads_the_unwrapped_model():
    probe = 'if hasattr(model, "encoder"):\n    print(getattr(model, "encoder", None))\n'
    result = convert_source(SCRIPT.replace("PROBE\n", probe), "train.py")
    assert result.refused is None, result.refused
    assert 'if hasattr(accelerator.unwrap_model(model, keep_torch_compile=False), "encoder"):' in result.text
    assert 'print(getattr(accelerator.unwrap_model(model, keep_torch_compile=False), "encoder", None))' in result.text


def test_a_probe_of_what_ddp_has_itself_is_left_alone():
    probe = 'if hasattr(model, "module"):\n    print("wrapped")\nprint(hasattr(model, "parameters"))\n'
    result = convert_source(SCRIPT.replace("PROBE\n", probe), "train.py")
    assert result.refused is None, result.refused
    assert 'hasattr(model, "module")' in result.text
    assert 'hasattr(model, "parameters")' in result.text
