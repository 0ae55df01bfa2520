"""A training DataLoader a local data function of the script builds with a DistributedSampler on
its distributed branch and a plain shuffled one on the other, handed back (alone or in a tuple)
to the training scope (survey 19c: a TRADES fine-tune's ``prepare_data(world_size, args)``).
On several processes the loader is sharded by its own sampler already: it stays unprepared.
Prepared, it was sharded twice and lost the sampler the script calls ``set_epoch()`` on:
``'SequentialSampler' object has no attribute 'set_epoch'`` on 2 processes."""

from regcomp_lint.codemod import convert_source

FACTORY = """\
import os
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def make_loaders(world_size):
    ds = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
    if world_size > 1:
        train_loader = DataLoader(ds, batch_size=4, sampler={distributed})
    else:
        train_loader = DataLoader(ds, batch_size=4, shuffle=True)
    return {returned}


def main():
    world_size = int(os.environ.get("WORLD_SIZE", 1))
    dist.init_process_group("gloo")
    {unpacked} = make_loaders(world_size)
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        if world_size > 1:
            train_loader.sampler.set_epoch(epoch)
        for x, y in train_loader:
            loss = torch.nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()


if __name__ == "__main__":
    main()
"""

SHAPES = (("train_loader", "train_loader"), ("train_loader, None", "train_loader, _"))


def test_a_factory_loader_sharded_on_its_distributed_branch_stays_unprepared():
    for returned, unpacked in SHAPES:
        source = FACTORY.format(distributed="DistributedSampler(ds)", returned=returned, unpacked=unpacked)
        result = convert_source(source, "trades.py")
        assert result.refused is None, result.refused
        assert "model, opt = accelerator.prepare(model, opt)" in result.text, result.text
        assert "prepared: model, opt" in result.notes, result.notes
        assert any(
            n.startswith("train_loader is sharded by its DistributedSampler") and "make_loaders()" in n
            for n in result.notes
        ), result.notes


def test_a_factory_loader_with_no_sharding_sampler_on_any_branch_is_still_prepared():
    for returned, unpacked in SHAPES:
        source = FACTORY.format(distributed="None", returned=returned, unpacked=unpacked)
        result = convert_source(source, "trades.py")
        assert result.refused is None, result.refused
        assert "model, opt, train_loader = accelerator.prepare(model, opt, train_loader)" in result.text, result.text
