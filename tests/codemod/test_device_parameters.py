"""A training function handed its device by its caller follows accelerator.device
(codemod/device_parameters.py)."""

from __future__ import annotations

from regcomp_lint.codemod import convert_source

SCRIPT = """\
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def train(model, device, epochs, lr):
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    loader = DataLoader(TensorDataset(torch.randn(64, 4), torch.randn(64, 1)), batch_size=8)
    for epoch in range(epochs):
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            loss = nn.functional.mse_loss(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()


if __name__ == "__main__":
    CHOICE
    net = nn.Linear(4, 1)
    net.to(device=device)
    train(net, device, 2, 0.1)
"""


def _convert(choice: str):
    result = convert_source(SCRIPT.replace("CHOICE", choice), "train.py")
    assert result.refused is None, result.refused
    return result


def test_a_handed_cuda_device_becomes_the_accelerators():
    """milesial's UNet: every process would move its batches to the first GPU."""
    result = _convert('device = torch.device("cuda" if torch.cuda.is_available() else "cpu")')
    assert (
        "    accelerator = Accelerator(dynamo_plugin=dynamo_plugin)\n    device = accelerator.device\n" in result.text
    )
    assert "    net.to(device=device)\n" not in result.text  # prepare() places the handed model
    assert any("train()'s device, which its caller fills with a CUDA device" in n for n in result.notes)


def test_the_accelerator_comes_before_the_first_read_of_the_device():
    text = SCRIPT.replace(
        "    optimizer = torch.optim.SGD(", "    model.to(device)\n    optimizer = torch.optim.SGD(", 1
    ).replace("CHOICE", 'device = "cuda"')
    result = convert_source(text, "train.py")
    assert result.text.index("device = accelerator.device") < result.text.index("    model.to(device)")


def test_a_device_chosen_by_the_scripts_own_flag_keeps_its_cpu_choice():
    """pytorch/examples' vision_transformer: --no-cuda chose the CPU; dropped, it trained on the GPU."""
    result = _convert(
        'use_cuda = torch.cuda.is_available() and not NO_CUDA\n    device = torch.device("cuda" if use_cuda else "cpu")'
    )
    assert (
        '    accelerator = Accelerator(dynamo_plugin=dynamo_plugin, cpu=torch.device(device).type == "cpu")\n'
        "    device = accelerator.device\n"
    ) in result.text
    assert any("chosen with use_cuda" in n and "keeps that choice of the CPU" in n for n in result.notes), result.notes


TRAINER_SCRIPT = """\
import argparse
import torch
import torch.nn as nn


class Trainer:
    def __init__(self, model, loader, optimizer, device):
        self.model = model
        self.loader = loader
        self.optimizer = optimizer
        self.device = device

    def train(self):
        for x, y in self.loader:
            x, y = x.to(self.device), y.to(self.device)
            loss = nn.functional.mse_loss(self.model(x), y)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--no-cuda", action="store_true")
    args = parser.parse_args()
    CHOICE
    model = nn.Linear(4, 2).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    data = torch.utils.data.TensorDataset(torch.randn(32, 4), torch.randn(32, 2))
    Trainer(model, torch.utils.data.DataLoader(data, batch_size=8), optimizer, device).train()


if __name__ == "__main__":
    main()
"""


def test_a_trainer_class_handed_a_flag_chosen_device_keeps_its_cpu_choice():
    """ViT's TrainEval(..., device): self.device becomes the accelerator's, and --no-cuda must still
    choose the CPU (it trained on the GPU, and crashed where the model read args.no_cuda itself)."""
    choice = 'use_cuda = not args.no_cuda and torch.cuda.is_available()\n    device = torch.device("cuda" if use_cuda else "cpu")'
    result = convert_source(TRAINER_SCRIPT.replace("CHOICE", choice), "train.py")
    assert result.refused is None, result.refused
    assert (
        'self.accelerator = Accelerator(dynamo_plugin=dynamo_plugin, cpu=torch.device(device).type == "cpu")'
        in result.text
    )
    assert "        self.device = self.accelerator.device\n" in result.text
    assert any("Trainer is handed its device (device) by its builder, chosen with use_cuda" in n for n in result.notes)


def test_a_trainer_class_handed_accelerates_own_choice_gets_no_cpu_keyword():
    """``"cuda" if torch.cuda.is_available() else "cpu"`` is the choice Accelerate makes itself."""
    choice = 'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")'
    result = convert_source(TRAINER_SCRIPT.replace("CHOICE", choice), "train.py")
    assert result.refused is None, result.refused
    assert "self.accelerator = Accelerator(dynamo_plugin=dynamo_plugin)\n" in result.text


D2L = """\
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def get_device(i=0):
    if torch.cuda.is_available() and torch.cuda.device_count() >= i + 1:
        return torch.device(f"cuda:{i}")
    return torch.device("cpu")


def train(net, train_iter, num_epochs, lr, device):
    net.to(device)
    optimizer = torch.optim.SGD(net.parameters(), lr=lr)
    loss = nn.CrossEntropyLoss()
    for epoch in range(num_epochs):
        for X, y in train_iter:
            optimizer.zero_grad()
            X, y = X.to(device), y.to(device)
            l = loss(net(X), y)
            l.backward()
            optimizer.step()


if __name__ == "__main__":
    net = nn.Sequential(nn.Flatten(), nn.Linear(16, 4))
    data = TensorDataset(torch.randn(64, 16), torch.randint(0, 4, (64,)))
    device = get_device()
    train(net, DataLoader(data, batch_size=8), 2, 0.1, device)
"""


def test_a_device_from_a_helper_that_returns_cuda_0_follows_the_accelerator():
    """survey 20e d2l_densenet: ``train_ch6(..., device)`` with ``device = get_device()``, which
    returns ``cuda:0`` when there is a GPU. The conversion left ``X.to(device)``: on 2 GPUs rank
    1's batches would go to GPU 0 beside its model on GPU 1. The helper's returns are read like a
    device written at the call (``"cuda:0" if torch.cuda.is_available() else "cpu"`` converted)."""
    result = convert_source(D2L, "train.py")
    assert result.refused is None, result.refused
    assert (
        "    accelerator = Accelerator(dynamo_plugin=dynamo_plugin)\n    device = accelerator.device\n" in result.text
    )
    assert any("is set to accelerator.device" in note for note in result.notes), result.notes
