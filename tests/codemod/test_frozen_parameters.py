"""requires_grad switched while training gets DDP's find_unused_parameters=True (codemod/frozen_parameters.py).

Checked by hand on two gloo processes: the converted script below fails without the handler
("Expected to have finished reduction in the prior iteration") and runs with it."""

from regcomp_lint.codemod import convert_source

SCRIPT = """\
import torch
import torch.nn as nn

model = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 1))
for p in model[0].parameters():
    p.requires_grad = False
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(4):
    model[2].bias.requires_grad = epoch < 2
    for step in range(5):
        loss = model(torch.randn(2, 4)).sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
"""
HANDLER = "kwargs_handlers=[DistributedDataParallelKwargs(find_unused_parameters=True)]"


def test_a_switch_inside_the_training_loop_asks_ddp_to_find_unused_parameters():
    result = convert_source(SCRIPT, "train.py")
    assert result.refused is None, result.refused
    assert HANDLER in result.text
    assert "from accelerate.utils import DistributedDataParallelKwargs, TorchDynamoPlugin\n" in result.text
    assert any("(line 9) switches requires_grad" in note for note in result.notes), result.notes


def test_freezing_before_training_needs_nothing():
    result = convert_source(SCRIPT.replace("    model[2].bias.requires_grad = epoch < 2\n", ""), "train.py")
    assert result.refused is None, result.refused
    assert "find_unused_parameters" not in result.text


def test_a_loop_over_a_submodule_s_parameters_and_requires_grad_underscore_count():
    thaw = "    if epoch == 2:\n        for p in model[0].parameters():\n            p.requires_grad = True\n"
    result = convert_source(SCRIPT.replace("    model[2].bias.requires_grad = epoch < 2\n", thaw), "train.py")
    assert HANDLER in result.text
    call = "    model[0].requires_grad_(epoch >= 2)\n"
    result = convert_source(SCRIPT.replace("    model[2].bias.requires_grad = epoch < 2\n", call), "train.py")
    assert HANDLER in result.text
