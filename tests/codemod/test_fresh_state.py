"""A model method that only makes a fresh state (``init_hidden``) is read from the unwrapped
model; one that runs the model is still refused (cleanrl's PPO)."""

import pytest

from regcomp_lint.codemod import convert_source

SCRIPT = """\
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.cell = nn.Linear(8, 4)

    def init_hidden(self, n):
        {body}

    def forward(self, x, h):
        h = torch.tanh(self.cell(torch.cat([x, h], 1)))
        return h, h


model = Net()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    hidden = model.init_hidden(2)
    out, hidden = model(torch.randn(2, 4), hidden)
    loss = out.sum()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
"""


@pytest.mark.parametrize(
    "body",
    [
        "return torch.zeros(n, 4)",
        "weight = next(self.parameters())\n        return weight.new_zeros(n, 4)",
        "return torch.zeros(n, 4).to(self.cell.weight.device)",
        "if n > 1:\n            return torch.zeros(n, 4)\n        return torch.ones(n, 4).detach()",
        "return Variable(torch.zeros(n, 4))",
    ],
)
def test_a_method_returning_new_tensors_is_read_from_the_unwrapped_model(body):
    result = convert_source(SCRIPT.replace("{body}", body), "train.py")
    assert result.refused is None, result.refused
    assert "    hidden = accelerator.unwrap_model(model, keep_torch_compile=False).init_hidden(2)\n" in result.text


@pytest.mark.parametrize(
    "body",
    [
        "return self.cell(torch.zeros(n, 8))",  # runs a layer: the loss flows through it
        "return torch.zeros(n, 4) + self.cell.bias",  # arithmetic with a parameter
        "return self.h0.expand(n, 4)",  # a learned initial state
        "return (torch.zeros(n, 4), torch.zeros(n, 4))[0]",  # not a form we read: refused, as before
    ],
)
def test_a_method_that_computes_with_parameters_still_refuses(body):
    refused = convert_source(SCRIPT.replace("{body}", body), "train.py").refused
    assert refused is not None and "model.init_hidden(...) at line 21 computes the loss" in refused, refused


def test_a_fresh_state_method_of_a_model_in_a_local_module_is_found(tmp_path):
    """pytorch/examples' word language model: RNNModel.init_hidden lives in model.py."""
    model_py = SCRIPT.split("\n\nmodel = Net()")[0].replace("{body}", "return torch.zeros(n, 4)")
    (tmp_path / "net.py").write_text(model_py + "\n")
    script = "import torch\n\nimport net\n\nmodel = net.Net()" + SCRIPT.split("model = Net()")[1]
    (tmp_path / "train.py").write_text(script)
    result = convert_source(script, str(tmp_path / "train.py"))
    assert result.refused is None, result.refused
    assert "accelerator.unwrap_model(model, keep_torch_compile=False).init_hidden(2)" in result.text


def test_a_method_no_readable_file_defines_is_refused_as_unseen(tmp_path):
    """survey19d's LSTM word LM: `import model` and `model = model.LSTMModel(...)`, but model.py
    is not next to main.py. The refusal said `model.init_hidden(...) computes the loss with the
    model's own method`; nothing it could read says what init_hidden does (it only makes the zero
    hidden state in pytorch/examples). It now says the method is unseen, where the model comes
    from, and that a fresh-state method converts once its module is readable."""
    script = "import torch\n\nimport net\n\nmodel = net.Net()" + SCRIPT.split("model = Net()")[1]
    (tmp_path / "train.py").write_text(script)
    refused = convert_source(script, str(tmp_path / "train.py")).refused
    assert refused is not None
    assert "computes the loss" not in refused, refused
    assert (
        "model.init_hidden(...) at line 8 calls the model's own method init_hidden(), which no file regcomp-fix "
        "can read defines (the model comes from net.Net(...), line 5)" in refused
    ), refused
    assert "once the module that defines it is next to the script" in refused, refused
