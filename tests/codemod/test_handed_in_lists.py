"""Objects handed to a training helper inside a list (VITS's ``train_and_evaluate(rank, epoch,
hps, [net_g, net_d], [optim_g, optim_d], [scheduler_g, scheduler_d], scaler, [train_loader,
eval_loader], ...)``, unpacked there) are followed into it: a scheduler stepped once per epoch by
the caller stays unprepared, and a loader the helper iterates trains (survey 14 D7, B1)."""

from __future__ import annotations

from regcomp_lint.codemod import convert_source

SCRIPT = """\
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def run():
    ds = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
    train_loader = DataLoader(ds, batch_size=8, shuffle=True)
    eval_loader = DataLoader(ds, batch_size=8)
    net_g = nn.Linear(4, 1)
    net_d = nn.Linear(1, 1)
    optim_g = torch.optim.AdamW(net_g.parameters(), 1e-2)
    optim_d = torch.optim.AdamW(net_d.parameters(), 1e-2)
    scheduler_g = torch.optim.lr_scheduler.ExponentialLR(optim_g, gamma=0.5)
    scheduler_d = torch.optim.lr_scheduler.ExponentialLR(optim_d, gamma=0.5)
    for epoch in range(1, 4):
        train_and_evaluate(epoch, [net_g, net_d], [optim_g, optim_d], [scheduler_g, scheduler_d], LOADERS)
        scheduler_g.step()
        scheduler_d.step()


def train_and_evaluate(epoch, nets, optims, schedulers, loaders):
    net_g, net_d = nets
    optim_g, optim_d = optims
    scheduler_g, scheduler_d = schedulers
    train_loader, eval_loader = loaders
    for x, y in train_loader:
        loss_d = net_d(net_g(x).detach()).pow(2).mean()
        optim_d.zero_grad()
        loss_d.backward()
        optim_d.step()
        loss_g = nn.functional.mse_loss(net_g(x), y)
        optim_g.zero_grad()
        loss_g.backward()
        optim_g.step()


if __name__ == "__main__":
    run()
"""


def test_per_epoch_schedulers_handed_in_a_list_stay_unprepared():
    result = convert_source(SCRIPT.replace("LOADERS", "[train_loader, eval_loader]"), "train.py")
    assert result.refused is None, result.refused
    prepared = next(n for n in result.notes if n.startswith("prepared: "))
    assert "scheduler_g" not in prepared and "scheduler_d" not in prepared, result.notes
    assert any(n.startswith("scheduler_g steps once per epoch (line 18)") for n in result.notes), result.notes
    assert not any("steps once per optimizer step" in n for n in result.notes), result.notes


def test_a_loader_handed_in_a_list_and_iterated_there_trains():
    result = convert_source(SCRIPT.replace("LOADERS", "[train_loader, eval_loader]"), "train.py")
    assert result.refused is None, result.refused
    assert "prepared: net_g, net_d, optim_g, optim_d, train_loader" in result.notes, result.notes
    assert not any(n.startswith("train_loader is not iterated") for n in result.notes), result.notes
    assert any(n.startswith("eval_loader is not iterated") for n in result.notes), result.notes


def test_the_same_schedulers_handed_one_by_one_stay_unprepared_too():
    text = SCRIPT.replace("[scheduler_g, scheduler_d]", "scheduler_g, scheduler_d").replace(
        "def train_and_evaluate(epoch, nets, optims, schedulers, loaders):",
        "def train_and_evaluate(epoch, nets, optims, scheduler_g, scheduler_d, loaders):",
    )
    text = text.replace("    scheduler_g, scheduler_d = schedulers\n", "")
    result = convert_source(text.replace("LOADERS", "[train_loader, eval_loader]"), "train.py")
    assert result.refused is None, result.refused
    prepared = next(n for n in result.notes if n.startswith("prepared: "))
    assert "scheduler_g" not in prepared, result.notes
    assert any(n.startswith("scheduler_g steps once per epoch (line 18)") for n in result.notes), result.notes


def test_a_per_epoch_scheduler_in_a_list_beside_a_loader_handed_alone_stays_unprepared():
    """The survey's repro: the loader handed by itself is prepared, and the schedulers in their
    list were prepared with it: on 2 processes the LR decayed twice per epoch."""
    text = (
        SCRIPT.replace("LOADERS", "train_loader")
        .replace("schedulers, loaders):", "schedulers, train_loader):")
        .replace("    train_loader, eval_loader = loaders\n", "")
    )
    result = convert_source(text, "train.py")
    assert result.refused is None, result.refused
    assert "prepared: net_g, net_d, optim_g, optim_d, train_loader" in result.notes, result.notes
    assert any(n.startswith("scheduler_d steps once per epoch (line 19)") for n in result.notes), result.notes


def test_a_scheduler_on_an_optimizer_rebound_by_a_checkpoint_load_and_stepped_by_a_scaler():
    """The real VITS: `net_g, optim_g, lr, epoch_str = utils.load_checkpoint(path, net_g, optim_g)`
    in a try, then `scaler.step(optim_g)` in the helper that unpacks `optims`."""
    text = SCRIPT.replace("LOADERS", "[train_loader, eval_loader]").replace(
        "    scheduler_g = torch.optim",
        "    try:\n        net_g, optim_g, epoch_str = utils.load_checkpoint('g.pth', net_g, optim_g)\n"
        "    except Exception:\n        epoch_str = 1\n    scheduler_g = torch.optim",
    )
    text = text.replace("import torch.nn as nn\n", "import torch.nn as nn\nimport utils\n")
    text = text.replace("        optim_g.step()", "        scaler.step(optim_g)\n        scaler.update()")
    text = text.replace(
        "    for x, y in train_loader:",
        "    scaler = torch.amp.GradScaler(enabled=False)\n    for x, y in train_loader:",
    )
    result = convert_source(text, "train.py")
    assert result.refused is None, result.refused
    assert any(n.startswith("scheduler_g steps once per epoch") for n in result.notes), result.notes
