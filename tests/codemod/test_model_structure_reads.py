"""Reads that walk the prepared model's structure, and add_graph of it, go through the plain model
(codemod/wrapped_access.py, codemod/model_inspection.py).

weiaicunzai's pytorch-cifar100: ``writer.add_graph(net, input_tensor)`` of the compiled model
raised "Detected that you are using FX to torch.jit.trace a dynamo-optimized function" on one
process; ``list(net.children())[-1]`` was the whole model (the compile wrapper's only child) and
``named_parameters()`` names gained ``_orig_mod.`` (``module.`` under DDP), so the logged layer
and tags changed. ``parameters()`` yields the same tensors through the wrappers: left alone."""

from regcomp_lint.api import lint_source
from regcomp_lint.codemod import convert_source
from regcomp_lint.lint.config import Settings

SCRIPT = """\
import torch
import torch.nn as nn
import torch.optim as optim
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.tensorboard import SummaryWriter


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Linear(12, 16)
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        return self.fc(torch.relu(self.features(x)))


def grad_logging(net, n_iter):
    last_layer = list(net.children())[-1]
    for name, param in last_layer.named_parameters():
        writer.add_scalar(name, param.grad.norm(), n_iter)


def train(net, epoch):
    net.train()
    for batch_index, (images, labels) in enumerate(training_loader):
        optimizer.zero_grad()
        loss = loss_function(net(images), labels)
        loss.backward()
        optimizer.step()
        grad_logging(net, batch_index)
    for name, param in net.named_parameters():
        writer.add_histogram(name, param, epoch)
    n = sum(p.numel() for p in net.parameters())


if __name__ == '__main__':
    net = Net()
    training_loader = DataLoader(TensorDataset(torch.randn(16, 12), torch.randint(0, 10, (16,))), batch_size=4)
    loss_function = nn.CrossEntropyLoss()
    optimizer = optim.SGD(net.parameters(), lr=0.1)
    writer = SummaryWriter(log_dir='runs')
    input_tensor = torch.Tensor(1, 12)
    writer.add_graph(net, input_tensor)
    for epoch in range(2):
        train(net, epoch)
    writer.close()
"""
PLAIN = "accelerator.unwrap_model(net, keep_torch_compile=False)"


def _converted() -> str:
    result = convert_source(SCRIPT, "train.py")
    assert result.refused is None, result.refused
    return result.text


def test_add_graph_gets_the_plain_model():
    assert f"    writer.add_graph({PLAIN}, input_tensor)\n" in _converted()


def test_structure_walking_reads_go_through_the_plain_model_and_parameters_stays():
    text = _converted()
    assert f"    last_layer = list({PLAIN}.children())[-1]\n" in text
    assert f"    for name, param in {PLAIN}.named_parameters():\n" in text
    assert "    for name, param in last_layer.named_parameters():\n" in text  # a submodule: no wrapper
    assert "    n = sum(p.numel() for p in net.parameters())\n" in text
    assert "    optimizer = optim.SGD(net.parameters(), lr=0.1)\n" in text  # before prepare: the plain model


def test_rc407_does_not_disagree_with_the_converted_script():
    text = _converted()
    assert [d for d in lint_source(text, "train.py", Settings(select=("RC407",)))] == []
    assert not any("RC407" in note for note in convert_source(SCRIPT, "train.py").notes)


def test_a_structure_walk_that_feeds_the_loss_is_not_refused():
    # an L1 penalty over named parameters: the same tensors, DDP's hooks still see their gradients
    text = SCRIPT.replace(
        "        loss = loss_function(net(images), labels)\n",
        "        loss = loss_function(net(images), labels)\n"
        "        loss = loss + sum(p.abs().sum() for n, p in net.named_parameters() if 'weight' in n)\n",
    )
    result = convert_source(text, "train.py")
    assert result.refused is None, result.refused


def test_a_helper_called_before_prepare_keeps_its_named_parameters():
    # the optimizer_factory fixture: make_optimizer(model) runs on the script's own model
    text = SCRIPT.replace(
        "    optimizer = optim.SGD(net.parameters(), lr=0.1)\n", "    optimizer = make_optimizer(net)\n"
    ).replace(
        "def train(net, epoch):\n",
        "def make_optimizer(model):\n"
        "    decay = [p for n, p in model.named_parameters() if 'bias' not in n]\n"
        "    return optim.SGD(decay, lr=0.1)\n\n\ndef train(net, epoch):\n",
    )
    result = convert_source(text, "train.py")
    assert result.refused is None, result.refused
    assert "    decay = [p for n, p in model.named_parameters() if 'bias' not in n]\n" in result.text
    assert f"    writer.add_graph({PLAIN}, input_tensor)\n" in result.text
