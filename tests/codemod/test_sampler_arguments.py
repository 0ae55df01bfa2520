"""A loader handed a DistributedSampler on one branch only (``s = DistributedSampler(ds) if
args.distributed else None``) is sharded already whenever the script runs distributed: prepared,
each of 2 processes would see 1/2 of its 1/2. The converter leaves it unprepared, as it does an
unconditional one, however the sampler reaches ``DataLoader``: by keyword, through a name bound
on either branch, positionally (``DataLoader(ds, 8, False, sampler)``), or inside the
``**kwargs`` dict real scripts build (``dict(...)``, a dict display, ``kwargs["sampler"] = s``,
``kwargs.update(sampler=s)``). RC402 asks for none of these loaders."""

from __future__ import annotations

import pytest

from regcomp_lint.api import lint_source
from regcomp_lint.codemod import convert_source
from regcomp_lint.lint.config import Settings

SCRIPT = """\
import argparse
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=2)
    args = parser.parse_args()
    args.distributed = int(os.environ.get("WORLD_SIZE", "1")) > 1
    if args.distributed:
        dist.init_process_group("gloo")
    torch.manual_seed(0)
    ds = TensorDataset(torch.randn(64, 8), torch.randn(64, 1))
    model = nn.Linear(8, 1)
    if args.distributed:
        model = DDP(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
{loader}    for epoch in range(args.epochs):
        if args.distributed:
            train_sampler.set_epoch(epoch)
        for x, y in loader:
            optimizer.zero_grad()
            loss = nn.functional.mse_loss(model(x), y)
            loss.backward()
            optimizer.step()
    if args.distributed:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
"""

LOADERS = {
    "conditional expression": (
        "    train_sampler = DistributedSampler(ds) if args.distributed else None\n"
        "    loader = DataLoader(ds, batch_size=8, sampler=train_sampler, shuffle=(train_sampler is None))\n"
    ),
    "if/else statement": (
        "    if args.distributed:\n"
        "        train_sampler = DistributedSampler(ds)\n"
        "    else:\n"
        "        train_sampler = None\n"
        "    loader = DataLoader(ds, batch_size=8, sampler=train_sampler, shuffle=(train_sampler is None))\n"
    ),
    "None then if": (
        "    train_sampler = None\n"
        "    if args.distributed:\n"
        "        train_sampler = DistributedSampler(ds)\n"
        "    loader = DataLoader(ds, batch_size=8, sampler=train_sampler, shuffle=(train_sampler is None))\n"
    ),
    # the survey's tooth segmentation script: the loader itself bound on each branch
    "loader on each branch, sampler first": (
        "    if args.distributed:\n"
        "        train_sampler = DistributedSampler(ds)\n"
        "        loader = DataLoader(ds, batch_size=8, sampler=train_sampler)\n"
        "    else:\n"
        "        loader = DataLoader(ds, batch_size=8, shuffle=True)\n"
    ),
    "loader on each branch, sampler second": (
        "    if not args.distributed:\n"
        "        loader = DataLoader(ds, batch_size=8, shuffle=True)\n"
        "    else:\n"
        "        train_sampler = DistributedSampler(ds)\n"
        "        loader = DataLoader(ds, batch_size=8, sampler=train_sampler)\n"
    ),
    "positional": (
        "    train_sampler = DistributedSampler(ds) if args.distributed else None\n"
        "    loader = DataLoader(ds, 8, train_sampler is None, train_sampler)\n"
    ),
    "dict() kwargs": (
        "    train_sampler = DistributedSampler(ds) if args.distributed else None\n"
        "    loader_kwargs = dict(batch_size=8, sampler=train_sampler, shuffle=(train_sampler is None))\n"
        "    loader = DataLoader(ds, **loader_kwargs)\n"
    ),
    "dict display kwargs": (
        "    train_sampler = DistributedSampler(ds) if args.distributed else None\n"
        "    loader_kwargs = {'batch_size': 8, 'sampler': train_sampler}\n"
        "    loader = DataLoader(ds, shuffle=(train_sampler is None), **loader_kwargs)\n"
    ),
    "kwargs item set": (
        "    train_sampler = DistributedSampler(ds) if args.distributed else None\n"
        "    loader_kwargs = {'batch_size': 8}\n"
        "    loader_kwargs['sampler'] = train_sampler\n"
        "    loader = DataLoader(ds, **loader_kwargs)\n"
    ),
    "kwargs update": (
        "    train_sampler = DistributedSampler(ds) if args.distributed else None\n"
        "    loader_kwargs = {'batch_size': 8}\n"
        "    loader_kwargs.update({'sampler': train_sampler, 'shuffle': train_sampler is None})\n"
        "    loader = DataLoader(ds, **loader_kwargs)\n"
    ),
}


@pytest.mark.parametrize("style", sorted(LOADERS))
def test_a_loader_given_a_distributed_sampler_on_one_branch_stays_unprepared(style):
    src = SCRIPT.format(loader=LOADERS[style])
    result = convert_source(src, "train.py")
    assert result.refused is None, result.refused
    assert "model, optimizer = accelerator.prepare(model, optimizer)\n" in result.text, result.text
    assert "loader is sharded by its DistributedSampler: left unprepared" in "\n".join(result.notes), result.notes
    # what the converter left on purpose is not reported by our own lint
    converted = lint_source(result.text, "train.py", Settings(select=("RC402",)))
    assert [d for d in converted if d.code == "RC402"] == []


@pytest.mark.parametrize("style", sorted(LOADERS))
def test_rc402_does_not_ask_to_prepare_a_loader_sharded_on_one_branch(style):
    src = (
        SCRIPT.format(loader=LOADERS[style])
        .replace(
            "    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n",
            "    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
            "    accelerator = Accelerator()\n"
            "    model, optimizer = accelerator.prepare(model, optimizer)\n",
        )
        .replace("import torch\n", "import torch\nfrom accelerate import Accelerator\n", 1)
    )
    assert [d for d in lint_source(src, "train.py", Settings(select=("RC402",))) if d.code == "RC402"] == []


def test_a_loader_whose_kwargs_hold_no_sampler_is_still_prepared():
    """The kwargs dict is read, not guessed: without a sampler in it the loader is sharded by
    prepare() as before (and RC402 asks for it in an Accelerate script)."""
    loader = (
        "    train_sampler = None\n"
        "    loader_kwargs = {'batch_size': 8, 'shuffle': True}\n"
        "    loader = DataLoader(ds, **loader_kwargs)\n"
    )
    src = SCRIPT.format(loader=loader).replace("train_sampler.set_epoch(epoch)", "pass")
    result = convert_source(src, "train.py")
    assert result.refused is None, result.refused
    assert "model, optimizer, loader = accelerator.prepare(model, optimizer, loader)\n" in result.text, result.text
