"""codemod/returned_models.py: the prepared model a training function returns goes back to its
caller unwrapped.

survey21c byol_spot: ``train_byol(...)`` prepares ``online``, trains it and ``return online``;
its caller hands it to ``extract_features``, which reads ``online.encoder``. On 2 gloo processes the
returned object was the ``DistributedDataParallel`` wrapper: "'DistributedDataParallel' object has
no attribute 'encoder'" once training was over (1 process: identical to the original).
"""

from __future__ import annotations

from regcomp_lint.codemod import ConvertOptions, convert_source

SCRIPT = """\
import torch
from torch.utils.data import DataLoader, TensorDataset


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = torch.nn.Linear(8, 4)
        self.head = torch.nn.Linear(4, 1)

    def forward(self, x):
        return self.head(self.encoder(x))


def train(data, epochs=2):
    model = Net()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(TensorDataset(data), batch_size=8)
    for epoch in range(epochs):
        for (x,) in loader:
            loss = model(x).pow(2).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    RETURN


@torch.no_grad()
def features(model, data):
    return model.encoder(data)


def run(data):
    CALL
"""


def convert(ret: str, call: str = "model = train(data)\n    return features(model, data)"):
    text = SCRIPT.replace("RETURN", ret).replace("CALL", call)
    result = convert_source(text, "train.py", ConvertOptions())
    assert result.refused is None, result.refused
    return result


def test_a_returned_model_goes_back_unwrapped():
    result = convert("return model")
    assert "    return accelerator.unwrap_model(model, keep_torch_compile=False)\n" in result.text
    assert any("model returned at line 25" in n and "unwrap_model" in n for n in result.notes), result.notes


def test_a_model_returned_beside_other_values_goes_back_unwrapped():
    result = convert("return model, epochs", "model, _ = train(data)\n    return features(model, data)")
    assert "    return accelerator.unwrap_model(model, keep_torch_compile=False), epochs\n" in result.text


def test_a_returned_loss_is_left_as_it_is():
    result = convert("return loss.item()", "return train(data)")
    assert "    return loss.item()\n" in result.text
