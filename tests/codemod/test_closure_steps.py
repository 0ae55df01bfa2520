"""Training loops that step through a closure (codemod/closure_steps.py, analysis/training_loops.py).

``for ub, yb in train_dl: loss = optimizer.step(closure)`` trains: the loader is a training loader
(prepared, sharded), not "not iterated by the training loop" as survey 23d's ParWH trainer was told.
An LBFGS step over that sharded data is refused: LBFGS calls the closure until the loss stops
changing, so processes with different batches can make different numbers of backward passes
(replica: one rank finished while the other was still in the closure, "Connection closed by peer").
"""

from __future__ import annotations

from regcomp_lint.codemod.convert import convert_source

SCRIPT = """\
import torch
from torch.utils.data import DataLoader, TensorDataset

net = torch.nn.Linear(3, 1)
optimizer = torch.optim.{optimizer}(net.parameters(), lr=1e-2)
train_dl = DataLoader(TensorDataset(torch.randn(32, 3), torch.randn(32, 1)), batch_size=8, shuffle=True)


def closure():
    optimizer.zero_grad()
    loss = torch.mean((yb - net(ub)) ** 2)
    loss.backward()
    return loss


for epoch in range(4):
    for ub, yb in train_dl:
        loss = optimizer.step(closure)
"""

FULL_BATCH = """\
import torch

net = torch.nn.Linear(1, 1)
optimizer = torch.optim.LBFGS(net.parameters(), lr=0.1)
x = torch.linspace(0, 1, 50).view(-1, 1)


def closure():
    optimizer.zero_grad()
    loss = torch.mean((net(x) - x**2) ** 2)
    loss.backward()
    return loss


for it in range(100):
    loss = optimizer.step(closure)
"""


def test_a_loader_iterated_around_a_closure_step_is_prepared():
    result = convert_source(SCRIPT.format(optimizer="Adam"), "closure.py")
    assert result.refused is None, result.refused
    assert "accelerator.prepare(net, optimizer, train_dl)" in result.text
    assert not any("not iterated by the training loop" in n for n in result.notes), result.notes


def test_an_lbfgs_step_over_a_sharded_loader_is_refused_naming_the_step():
    result = convert_source(SCRIPT.format(optimizer="LBFGS"), "closure.py")
    assert result.refused is not None
    assert "optimizer.step(closure) at line 18" in result.refused
    assert "built at line 5" in result.refused and "train_dl" in result.refused


def test_a_full_batch_lbfgs_converts():
    result = convert_source(FULL_BATCH, "pinn.py")
    assert result.refused is None, result.refused
    assert "loss = optimizer.optimizer.step(closure)" in result.text


def test_the_refusal_says_a_whole_set_batch_converts_with_the_loader_unprepared():
    """parwh_lbfgs (survey 23d): `DataLoader(train_ds, batch_size=batch_size)` with batch_size = 95,
    the whole set; its length comes from CSV files. If one batch is the whole set, the loader left
    unprepared gives every process all of it and LBFGS takes the same path everywhere (replica, 95
    samples in one batch, Adam 6 epochs then LBFGS 8: the same per-epoch losses and 20 closure calls
    per step on 1 process and on both ranks of 2); the converter cannot know the length, so it
    refuses, and the reason says so, naming the batch size."""
    script = SCRIPT.format(optimizer="LBFGS").replace("batch_size=8", "batch_size=batch_size")
    script = script.replace("net = torch", "batch_size = 95  # all in one batch\nnet = torch", 1)
    result = convert_source(script, "closure.py")
    assert result.refused is not None
    assert "batch_size=batch_size" in result.refused, result.refused
    assert "whole data set" in result.refused and "unprepared" in result.refused, result.refused
