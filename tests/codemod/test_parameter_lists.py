"""An optimizer built from a list of the model's parameters is traced back to the model, by a
local factory too: ``build_optimizer(list(model.parameters()), lr=...)``, ``params =
list(model.parameters())`` then ``build_optimizer(params)`` or ``torch.optim.X(params)``, a
``tuple(...)``, ``filter(lambda p: p.requires_grad, ...)`` or a generator over them. The script
was refused ("built from parameters whose model cannot be traced") though its optimizer holds
the model's own parameter objects, the ones ``prepare`` wraps."""

from __future__ import annotations

import pytest

from regcomp_lint.api import lint_source
from regcomp_lint.codemod import convert_source
from regcomp_lint.lint.config import Settings

SCRIPT = """\
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def build_optimizer(params, lr, weight_decay=0.01):
    return torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay)


def build_grouped(parameters, lr):
    decay = [p for p in parameters if p.ndim >= 2]
    no_decay = [p for p in parameters if p.ndim < 2]
    groups = [{"params": decay, "weight_decay": 0.01}, {"params": no_decay, "weight_decay": 0.0}]
    optimizer = torch.optim.AdamW(groups, lr=lr)
    return optimizer


def build_by_loop(parameters, lr):
    # tinygpt_ddp (survey25a): the groups are filled by a loop over the parameters handed in
    params_grad = [p for p in parameters if p.requires_grad]
    p_decay = []
    p_no_decay = []
    for p in params_grad:
        if p.dim() >= 2:
            p_decay.append(p)
        else:
            p_no_decay.append(p)
    param_groups = [{"weight_decay": 0.1, "params": p_decay}, {"weight_decay": 0.0, "params": p_no_decay}]
    optim = torch.optim.AdamW(params=param_groups, lr=lr)
    return optim


def split_groups(model):
    # ijepa_ddp (survey25a): two generators over the model's parameters, unpacked by the caller
    decay = (p for n, p in model.named_parameters() if p.dim() >= 2)
    no_decay = (p for n, p in model.named_parameters() if p.dim() < 2)
    return decay, no_decay


def main():
    model = nn.Linear(8, 1)
{build}    loader = DataLoader(TensorDataset(torch.randn(64, 8), torch.randn(64, 1)), batch_size=8)
    for epoch in range(2):
        for x, y in loader:
            optimizer.zero_grad()
            loss = nn.functional.mse_loss(model(x), y)
            loss.backward()
            optimizer.step()


if __name__ == "__main__":
    main()
"""

BUILDS = {
    "factory of list": "    optimizer = build_optimizer(list(model.parameters()), lr=1e-3)\n",
    "factory of model.parameters()": "    optimizer = build_optimizer(model.parameters(), 1e-3)\n",
    "factory of a list name": "    params = list(model.parameters())\n    optimizer = build_optimizer(params, lr=1e-3)\n",
    "factory of a tuple": "    optimizer = build_optimizer(tuple(model.parameters()), lr=1e-3)\n",
    "factory of a filter": (
        "    optimizer = build_optimizer(filter(lambda p: p.requires_grad, model.parameters()), lr=1e-3)\n"
    ),
    "factory of a generator": (
        "    optimizer = build_optimizer((p for p in model.parameters() if p.requires_grad), lr=1e-3)\n"
    ),
    "factory of a comprehension name": (
        "    params = [p for p in model.parameters() if p.requires_grad]\n"
        "    optimizer = build_optimizer(params=params, lr=1e-3)\n"
    ),
    "grouping factory": "    optimizer = build_grouped(list(model.parameters()), 1e-3)\n",
    "factory filling groups in a loop": "    optimizer = build_by_loop(model.parameters(), 1e-3)\n",
    "groups of a helper's unpacked generators": (
        "    decay, no_decay = split_groups(model)\n"
        "    groups = [{'params': decay}, {'params': no_decay, 'weight_decay': 0.0}]\n"
        "    optimizer = torch.optim.AdamW(groups, lr=1e-3)\n"
    ),
    "torch.optim of a list name": "    params = list(model.parameters())\n    optimizer = torch.optim.SGD(params, lr=1e-3)\n",
}


@pytest.mark.parametrize("style", sorted(BUILDS))
def test_an_optimizer_built_from_a_list_of_the_parameters_converts(style):
    result = convert_source(SCRIPT.replace("{build}", BUILDS[style]), "train.py")
    assert result.refused is None, result.refused
    assert "model, optimizer, loader = accelerator.prepare(model, optimizer, loader)\n" in result.text, result.text


@pytest.mark.parametrize("style", sorted(BUILDS))
def test_rc402_sees_the_same_optimizer(style):
    """The lint reads the same roles: in an Accelerate script that prepares only the model and
    loader, the optimizer is reported as unprepared."""
    src = (
        SCRIPT.replace("{build}", BUILDS[style])
        .replace("import torch\n", "import torch\nfrom accelerate import Accelerator\n", 1)
        .replace(
            "    loader = DataLoader(TensorDataset(torch.randn(64, 8), torch.randn(64, 1)), batch_size=8)\n",
            "    loader = DataLoader(TensorDataset(torch.randn(64, 8), torch.randn(64, 1)), batch_size=8)\n"
            "    accelerator = Accelerator()\n"
            "    model, loader = accelerator.prepare(model, loader)\n",
        )
    )
    found = [d for d in lint_source(src, "train.py", Settings(select=("RC402",))) if d.code == "RC402"]
    assert [d.message.split("`")[1] for d in found] == ["optimizer"], found


def test_a_factory_handed_no_parameters_of_a_model_is_still_refused():
    """``build_optimizer(other_params)`` where the list holds no model's parameters (a fresh
    tensor) is not taken for the model's optimizer."""
    build = "    extra = [torch.zeros(3, requires_grad=True)]\n    optimizer = build_optimizer(extra, lr=1e-3)\n"
    result = convert_source(SCRIPT.replace("{build}", build), "train.py")
    assert result.refused is not None
    assert "cannot be traced" in result.refused, result.refused


def test_a_factory_fed_two_models_parameter_lists_holds_both():
    """``build_optimizer(list(model.parameters()) + list(head.parameters()), ...)`` (common in
    real trainers with a separate head): both models are the optimizer's and both are prepared."""
    src = (
        SCRIPT.replace("{build}", "")
        .replace(
            "    model = nn.Linear(8, 1)\n",
            "    model = nn.Linear(8, 4)\n    head = nn.Linear(4, 1)\n"
            "    optimizer = build_optimizer(list(model.parameters()) + list(head.parameters()), lr=1e-3)\n",
        )
        .replace("model(x)", "head(model(x))")
    )
    result = convert_source(src, "train.py")
    assert result.refused is None, result.refused
    assert "model, head, optimizer, loader = accelerator.prepare(model, head, optimizer, loader)\n" in result.text


# sweep15's coconut_muon: groups filled in loops over two submodules of one model; the model was
# prepared twice (`prepare(model, model, optimizer)`) under some hash seeds
FILLED = """\
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([nn.Linear(4, 4) for _ in range(2)])
        self.head = nn.Linear(4, 1)
        self.emb = nn.Linear(4, 4)

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return self.head(self.emb(x))


def train(model):
    others = []
    for p in list(model.head.parameters()) + list(model.emb.parameters()):
        others.append(p)
    optimizer = torch.optim.AdamW([dict(params=others, lr=3e-4)])
    for step in range(4):
        loss = model(torch.randn(2, 4)).sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


model = Net()
train(model)
"""


def test_a_model_whose_groups_are_filled_from_two_of_its_submodules_is_prepared_once():
    result = convert_source(FILLED, "train.py")
    assert result.refused is None, result.refused
    prepare = [line.strip() for line in result.text.splitlines() if "accelerator.prepare(" in line]
    assert prepare == ["model, optimizer = accelerator.prepare(model, optimizer)"], prepare
