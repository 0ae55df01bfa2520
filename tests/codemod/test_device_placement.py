"""codemod/device_placement.py: a script that computes a device and never places anything on it
trains on the CPU, and so must its conversion (survey 21d lstm_lbfgs_ts: ``device = ...`` never
read; prepare() would move the model to the GPU while the inputs and the LSTM's
``torch.zeros(...)`` states stayed on the CPU, so the first forward would raise on a CUDA machine)."""

from __future__ import annotations

from regcomp_lint.codemod import convert_source

SCRIPT = """\
import torch


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(4, 1)

    def forward(self, x):
        state = torch.zeros(x.size(0), 1, dtype=torch.float)
        return self.linear(x) + state


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    x = torch.randn(32, 4)
    y = torch.randn(32, 1)
    model = Net()
    PLACE
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(5):
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    main()
"""


def accelerator_line(text: str) -> str:
    return next(line.strip() for line in text.splitlines() if "= Accelerator(" in line)


def convert(place: str):
    result = convert_source(SCRIPT.replace("PLACE", place), "train.py")
    assert result.refused is None, result.refused
    return result


def test_a_device_that_is_never_read_keeps_the_conversion_on_the_cpu():
    """Before, the word ``device`` alone stepped the check aside: Accelerator() without cpu=True."""
    result = convert("model.float()")
    assert accelerator_line(result.text) == "accelerator = Accelerator(dynamo_plugin=dynamo_plugin, cpu=True)"
    assert any(n.startswith("cpu=True: the script never moves") for n in result.notes), result.notes


def test_a_dtype_only_to_places_nothing():
    result = convert("model = model.to(torch.float32)")
    assert accelerator_line(result.text).endswith("cpu=True)")


def test_placements_keep_the_accelerators_device():
    for place in (
        "model = model.to(device)",
        "model.cuda()",
        'x = torch.randn(32, 4, device="cuda")',
        "x = torch.randn(32, 4, device=device)",
        "model = Net2(device)",
        "torch.set_default_device(device)",
        'torch.set_default_tensor_type("torch.cuda.FloatTensor")',
        "x = x.pin_memory().to(device, non_blocking=True)",
        "torch.cuda.set_device(0)",
    ):
        result = convert(place)
        assert accelerator_line(result.text) == "accelerator = Accelerator(dynamo_plugin=dynamo_plugin)", place
