"""Objects a helper binds to module globals (``global optimizer`` in ``prepare()``) that the
training function reads through its own ``global`` declarations: NNI's CIFAR trainer (survey23g)."""

from __future__ import annotations

from regcomp_lint.codemod import convert_source

SCRIPT = """
import torch
from torch.utils.data import DataLoader, TensorDataset

from sam import SAM

loader = None
net = None
optimizer = None


def prepare():
    global loader
    global net
    global optimizer
    global scheduler
    loader = DataLoader(TensorDataset(torch.randn(8, 4), torch.randn(8, 2)), batch_size=4)
    net = torch.nn.Linear(4, 2)
    optimizer = SAM(net.parameters(), torch.optim.SGD, lr=0.1, momentum=0.9)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(optimizer, 1, 2)


def train(epoch):
    global loader, net, optimizer, scheduler
    iters = len(loader)
    for i, (x, y) in enumerate(loader):
        loss = torch.nn.functional.mse_loss(net(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.first_step(zero_grad=True)
        torch.nn.functional.mse_loss(net(x), y).backward()
        optimizer.second_step()
        scheduler.step(epoch + i / iters)


if __name__ == "__main__":
    prepare()
    for epoch in range(3):
        train(epoch)
"""


def test_an_optimizer_bound_to_a_global_in_another_function_is_the_one_the_training_loop_steps():
    """nni_sam: SAM built in prepare() under `global optimizer`, zeroed in train() through its own
    `global optimizer`. The bindings kept prepare()'s assignment local to prepare(), so train()'s
    optimizer was the module's `optimizer = None` and the refusal said SAM "is fed model parameters
    but is not used as an optimizer". The true reason: built in prepare(), which does not run the
    loop, and handed to train() through module globals."""
    result = convert_source(SCRIPT, "main.py")
    assert result.refused is not None
    assert "not used as an optimizer" not in result.refused
    assert "built in prepare(), which does not run the training loop" in result.refused, result.refused
    assert "global" in result.refused and "train()" in result.refused, result.refused


def test_a_local_of_the_same_name_is_not_the_global():
    """Without the `global` declaration in prepare(), its optimizer is its own local: the module's
    None is what train() reads, as before."""
    local = SCRIPT.replace("    global optimizer\n", "", 1)
    result = convert_source(local, "main.py")
    assert result.refused is not None
    assert "not used as an optimizer" in result.refused, result.refused
