"""A loader sharded where the fixer cannot see it at first glance is left unprepared: prepared,
each rank would see 1/N of its 1/N (survey 14 D2). A factory of a sibling module that builds a
DistributedSampler (codemod/sharded_factories.py), a sampler class deriving from
DistributedSampler or built with num_replicas=/rank= (analysis/distributed_samplers.py)."""

from __future__ import annotations

from regcomp_lint.codemod import convert_source

DATA = """\
import torch
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def get_dataloaders(batch_size, distributed):
    tr = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
    sampler = DistributedSampler(tr, shuffle=True) if distributed else None
    loader = DataLoader(tr, batch_size=batch_size, sampler=sampler, shuffle=sampler is None)
    return loader, len(loader)
"""

TORCHRUN = """\
import os
import torch
import torch.distributed as dist
import torch.nn as nn
from data import get_dataloaders
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group(backend="gloo")
    tr_loader, steps_per_epoch = get_dataloaders(batch_size=4, distributed=True)
    model = DDP(nn.Linear(4, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        for x, y in tr_loader:
            loss = nn.functional.mse_loss(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
"""


def test_a_sibling_factory_that_builds_a_distributed_sampler_keeps_its_loader_unprepared(tmp_path):
    (tmp_path / "data.py").write_text(DATA)
    result = convert_source(TORCHRUN, str(tmp_path / "train.py"))
    assert result.refused is None, result.refused
    assert "model, optimizer = accelerator.prepare(model, optimizer)\n" in result.text, result.text
    assert any(
        n.startswith("tr_loader (from get_dataloaders(), line 11) is built by get_dataloaders() of data.py")
        and "DistributedSampler" in n
        for n in result.notes
    ), result.notes


def test_a_sibling_factory_without_a_distributed_sampler_is_still_prepared(tmp_path):
    (tmp_path / "data.py").write_text(DATA.replace("DistributedSampler(tr, shuffle=True)", "None"))
    result = convert_source(TORCHRUN, str(tmp_path / "train.py"))
    assert result.refused is None, result.refused
    assert "accelerator.prepare(model, optimizer, tr_loader)" in result.text


def test_an_unreadable_factory_told_it_is_distributed_keeps_its_loader_unprepared(tmp_path):
    """data.py is not there: the script distributes by hand and tells the factory so; whatever
    the factory does, the unprepared loader gives each rank what it had in the original."""
    result = convert_source(TORCHRUN, str(tmp_path / "train.py"))
    assert result.refused is None, result.refused
    assert "model, optimizer = accelerator.prepare(model, optimizer)\n" in result.text, result.text
    assert any(
        n.startswith("tr_loader (from get_dataloaders(), line 11) comes from a factory told distributed=True")
        for n in result.notes
    ), result.notes


def test_an_unreadable_factory_of_a_single_process_script_is_still_prepared(tmp_path):
    text = TORCHRUN.replace('    dist.init_process_group(backend="gloo")\n', "").replace(
        "    dist.destroy_process_group()\n", ""
    )
    text = text.replace("DDP(nn.Linear(4, 1))", "nn.Linear(4, 1)").replace("distributed=True", "distributed=False")
    result = convert_source(text, str(tmp_path / "train.py"))
    assert result.refused is None, result.refused
    assert "accelerator.prepare(model, optimizer, tr_loader)" in result.text


def test_an_unreadable_factory_that_hands_back_the_sampler_it_shards_with_keeps_its_loader_unprepared(tmp_path):
    """Survey 15's adversarial ImageNet trainer: ``train_loader, val_loader, train_sampler,
    val_sampler = get_loaders(root, bs, workers, rank, world_size)`` from a module not there, and
    ``train_sampler.set_epoch(epoch)``: prepared, each rank saw 16 of its 32 samples (2 gloo processes)."""
    text = TORCHRUN.replace(
        "tr_loader, steps_per_epoch = get_dataloaders(batch_size=4, distributed=True)",
        "tr_loader, tr_sampler = get_dataloaders(4, rank, world_size)",
    ).replace("    for epoch in range(2):\n", "    for epoch in range(2):\n        tr_sampler.set_epoch(epoch)\n")
    # the ranks come from a helper of that module too: nothing says they are ranks
    text = text.replace(
        '    dist.init_process_group(backend="gloo")\n',
        '    dist.init_process_group(backend="gloo")\n    rank, world_size = init_distributed()\n',
    ).replace("from data import get_dataloaders", "from data import get_dataloaders, init_distributed")
    result = convert_source(text, str(tmp_path / "train.py"))
    assert result.refused is None, result.refused
    assert "model, optimizer = accelerator.prepare(model, optimizer)\n" in result.text, result.text
    assert any(
        n.startswith("tr_loader (from get_dataloaders(), line 12) comes from get_dataloaders(), which cannot be read")
        and "hands back tr_sampler too, whose set_epoch()" in n
        for n in result.notes
    ), result.notes


def test_a_sampler_handed_back_but_never_set_to_an_epoch_is_no_evidence(tmp_path):
    text = TORCHRUN.replace(
        "tr_loader, steps_per_epoch = get_dataloaders(batch_size=4, distributed=True)",
        "tr_loader, tr_sampler = get_dataloaders(4)",
    )
    result = convert_source(text, str(tmp_path / "train.py"))
    assert result.refused is None, result.refused
    assert "accelerator.prepare(model, optimizer, tr_loader)" in result.text


BUCKET = """\
import os
import sys
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset


class DistributedBucketSampler(torch.utils.data.distributed.DistributedSampler):
    def __init__(self, dataset, batch_size, num_replicas=None, rank=None, shuffle=True):
        super().__init__(dataset, num_replicas=num_replicas, rank=rank, shuffle=shuffle)
        self.batch_size = batch_size

    def __iter__(self):
        idx = list(super().__iter__())
        for i in range(0, len(idx), self.batch_size):
            yield idx[i:i + self.batch_size]


def main():
    n_gpus = int(sys.argv[1])
    os.environ["MASTER_ADDR"] = "localhost"
    os.environ["MASTER_PORT"] = "29611"
    mp.spawn(run, nprocs=n_gpus, args=(n_gpus,))


def run(rank, n_gpus):
    dist.init_process_group(backend="gloo", init_method="env://", world_size=n_gpus, rank=rank)
    train_dataset = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
    train_sampler = SAMPLER
    train_loader = DataLoader(train_dataset, num_workers=0, shuffle=False, batch_sampler=train_sampler)
    net_g = DDP(torch.nn.Linear(4, 1))
    optim_g = torch.optim.AdamW(net_g.parameters(), 1e-2)
    for epoch in range(1, 4):
        train_and_evaluate(epoch, net_g, optim_g, train_loader)


def train_and_evaluate(epoch, net_g, optim_g, train_loader):
    train_loader.batch_sampler.set_epoch(epoch)
    for x, y in train_loader:
        loss = torch.nn.functional.mse_loss(net_g(x), y)
        optim_g.zero_grad()
        loss.backward()
        optim_g.step()


if __name__ == "__main__":
    main()
"""


def _bucket(sampler: str) -> str:
    return BUCKET.replace("SAMPLER", sampler)


def test_a_distributed_sampler_subclass_as_batch_sampler_keeps_its_loader_unprepared():
    """VITS's DistributedBucketSampler: prepared, `batch_sampler.set_epoch` crashed and each
    rank trained on half its shard."""
    result = convert_source(_bucket("DistributedBucketSampler(train_dataset, 8, shuffle=True)"), "train.py")
    assert result.refused is None, result.refused
    assert "net_g, optim_g = accelerator.prepare(net_g, optim_g)\n" in result.text, result.text
    assert any(n.startswith("train_loader is sharded by its DistributedSampler") for n in result.notes), result.notes


def test_a_sampler_built_with_num_replicas_and_rank_is_sharded_whatever_its_class():
    text = _bucket("BucketSampler(train_dataset, 8, num_replicas=n_gpus, rank=rank)")
    text = text.replace("(torch.utils.data.distributed.DistributedSampler)", "").replace("BucketSampler", "Buckets")
    result = convert_source(text, "train.py")
    assert result.refused is None, result.refused
    assert "net_g, optim_g = accelerator.prepare(net_g, optim_g)\n" in result.text, result.text


def test_a_distributed_sampler_subclass_of_a_local_module(tmp_path):
    head, rest = BUCKET.split("class DistributedBucketSampler", 1)
    cls, tail = rest.split("\n\n\ndef main", 1)
    (tmp_path / "data_utils.py").write_text("import torch\n\n\nclass DistributedBucketSampler" + cls + "\n")
    text = head.replace(
        "from torch.utils.data import", "from data_utils import DistributedBucketSampler\nfrom torch.utils.data import"
    )
    text += "def main" + tail
    text = text.replace("SAMPLER", "DistributedBucketSampler(train_dataset, 8, shuffle=True)")
    result = convert_source(text, str(tmp_path / "train.py"))
    assert result.refused is None, result.refused
    assert "net_g, optim_g = accelerator.prepare(net_g, optim_g)\n" in result.text, result.text


def test_a_plain_batch_sampler_is_still_prepared():
    text = _bucket("torch.utils.data.BatchSampler(torch.utils.data.RandomSampler(train_dataset), 8, False)")
    text = text.replace("    train_loader.batch_sampler.set_epoch(epoch)\n", "")
    result = convert_source(text, "train.py")
    assert result.refused is None, result.refused
    assert "accelerator.prepare(net_g, optim_g, train_loader)" in result.text, result.text


PLAIN_DATA = """\
import torch
from torch.utils.data import DataLoader, TensorDataset


def build_plain_loader(n):
    ds = TensorDataset(torch.randn(n, 4), torch.randn(n, 1))
    return DataLoader(ds, batch_size=4, shuffle=True)
"""

BRANCHES = """\
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def train(kind, steps):
    dist.init_process_group("gloo")
    rank, world_size = dist.get_rank(), dist.get_world_size()
    model = DDP(nn.Linear(4, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    if kind == "sharded":
        from data import get_dataloaders
        loader, n = get_dataloaders(batch_size=4, distributed=True)
    elif kind == "plain":
        from plain_data import build_plain_loader
        loader = build_plain_loader(64)
    data_iter = iter(loader)
    for step in range(steps):
        try:
            x, y = next(data_iter)
        except StopIteration:
            data_iter = iter(loader)
            x, y = next(data_iter)
        loss = nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    dist.destroy_process_group()
"""


SHARDED_BRANCH = """\
    if kind == "sharded":
        from data import get_dataloaders
        loader, n = get_dataloaders(batch_size=4, distributed=True)
"""
PLAIN_BRANCH = """\
    elif kind == "plain":
        from plain_data import build_plain_loader
        loader = build_plain_loader(64)
"""


def _branches_swapped(source: str) -> str:
    """The plain branch first, the sharded one last."""
    assert SHARDED_BRANCH + PLAIN_BRANCH in source
    first = PLAIN_BRANCH.replace("    elif", "    if", 1)
    return source.replace(SHARDED_BRANCH + PLAIN_BRANCH, first + SHARDED_BRANCH.replace("    if", "    elif", 1))


def test_a_loader_sharded_by_its_factory_on_one_branch_stays_unprepared_whatever_the_other_branch(tmp_path):
    """drift_dit (survey 21a): `loader = build_imagenet_loader(cfg, rank=rank, world_size=...)` on one
    branch, `loader = build_robotics_loader(cfg)` on the next. Only the last binding was read, so the
    loader was prepared and the first branch's shard sharded again: on 2 ranks each saw every other
    batch of its shard (4 distinct batches of 8, weights -0.988441 against the original's -1.472633)."""
    (tmp_path / "data.py").write_text(DATA)
    (tmp_path / "plain_data.py").write_text(PLAIN_DATA)
    for source in (BRANCHES, _branches_swapped(BRANCHES)):
        result = convert_source(source, str(tmp_path / "train.py"))
        assert result.refused is None, result.refused
        assert "model, optimizer = accelerator.prepare(model, optimizer)\n" in result.text, result.text
        assert any(
            n.startswith("loader (from get_dataloaders(), line ") and "DistributedSampler" in n for n in result.notes
        ), result.notes


def test_a_loader_unsharded_on_every_branch_is_still_prepared(tmp_path):
    (tmp_path / "data.py").write_text(DATA.replace("DistributedSampler(tr, shuffle=True)", "None"))
    (tmp_path / "plain_data.py").write_text(PLAIN_DATA)
    result = convert_source(BRANCHES, str(tmp_path / "train.py"))
    assert result.refused is None, result.refused
    assert "model, optimizer, loader = accelerator.prepare(model, optimizer, loader)" in result.text, result.text


def test_an_unreadable_factory_whose_loader_sampler_is_set_to_an_epoch_keeps_its_loader_unprepared(tmp_path):
    """Survey 23b, gpt2_chakra: ``train_loader, val_loader, tokenizer = get_dataloaders(...,
    use_distributed=(world_size > 1))`` from a module not there, and
    ``train_loader.sampler.set_epoch(epoch)``: the loader's own sampler has an epoch, a
    DistributedSampler. Prepared, its sampler became accelerate's SequentialSampler and the first
    ``set_epoch`` raised AttributeError on 2 processes (replica, gloo)."""
    text = TORCHRUN.replace(
        "tr_loader, steps_per_epoch = get_dataloaders(batch_size=4, distributed=True)",
        "tr_loader, steps_per_epoch = get_dataloaders(batch_size=4)",
    ).replace(
        "    for epoch in range(2):\n", "    for epoch in range(2):\n        tr_loader.sampler.set_epoch(epoch)\n"
    )
    result = convert_source(text, str(tmp_path / "train.py"))
    assert result.refused is None, result.refused
    assert "model, optimizer = accelerator.prepare(model, optimizer)\n" in result.text, result.text
    assert "tr_loader.sampler.set_epoch(epoch)" in result.text
    assert any(
        n.startswith("tr_loader (from get_dataloaders(), line 11) comes from get_dataloaders(), which cannot be read")
        and "tr_loader.sampler.set_epoch()" in n
        for n in result.notes
    ), result.notes


def test_an_unreadable_factory_told_use_distributed_keeps_its_loader_unprepared(tmp_path):
    text = TORCHRUN.replace("distributed=True", "use_distributed=True")
    result = convert_source(text, str(tmp_path / "train.py"))
    assert result.refused is None, result.refused
    assert "model, optimizer = accelerator.prepare(model, optimizer)\n" in result.text, result.text


def test_a_loader_sampler_set_to_an_epoch_in_a_single_process_script_is_still_prepared(tmp_path):
    text = TORCHRUN.replace('    dist.init_process_group(backend="gloo")\n', "").replace(
        "    dist.destroy_process_group()\n", ""
    )
    text = text.replace("DDP(nn.Linear(4, 1))", "nn.Linear(4, 1)").replace("distributed=True", "shuffle=True")
    text = text.replace(
        "    for epoch in range(2):\n", "    for epoch in range(2):\n        tr_loader.sampler.set_epoch(epoch)\n"
    )
    result = convert_source(text, str(tmp_path / "train.py"))
    assert result.refused is None, result.refused
    assert "accelerator.prepare(model, optimizer, tr_loader)" in result.text


SPAWNED_METHOD = """\
import os
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


class Dataset:
    def __init__(self, batch_size=8):
        self.x = torch.rand(64, 4)
        self.y = torch.rand(64, 1)
        self.batch_size = batch_size

    def get_dataloader(self, dtype="train"):
        if dtype == "train":
            sampler = DistributedSampler(self.x)
            return DataLoader(TensorDataset(self.x, self.y), batch_size=self.batch_size, sampler=sampler)
        return DataLoader(TensorDataset(self.x, self.y), batch_size=self.batch_size)


def demo_basic(rank, world_size):
    os.environ["MASTER_ADDR"] = "localhost"
    os.environ["MASTER_PORT"] = "12355"
    dist.init_process_group("gloo", rank=rank, world_size=world_size)
    dataset = Dataset()
    ddp_model = DDP(nn.Linear(4, 1))
    optimizer = torch.optim.SGD(ddp_model.parameters(), lr=0.001)
    train_dataloader = dataset.get_dataloader(dtype="train")
    for x, y in train_dataloader:
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(ddp_model(x), y)
        loss.backward()
        optimizer.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(demo_basic, args=(2,), nprocs=2, join=True)
"""


def test_a_method_of_the_files_own_class_that_builds_a_distributed_sampler_keeps_its_loader_unprepared():
    # survey 24d, ddp_demo (DDP blog tutorial): `train_dataloader = dataset.get_dataloader(dtype="train")`,
    # whose method builds DataLoader(..., sampler=DistributedSampler(self.X_train)). Prepared, each of
    # 2 gloo ranks ran 1 step of its 2 (replica: 1 vs 2 steps, final weights 2.22322710 vs 2.22604264).
    result = convert_source(SPAWNED_METHOD, "train.py")
    assert result.refused is None, result.refused
    assert "ddp_model, optimizer = accelerator.prepare(ddp_model, optimizer)\n" in result.text, result.text
    assert any(
        n.startswith("train_dataloader (from dataset.get_dataloader(), line 31) is built by Dataset.get_dataloader()")
        and "DistributedSampler" in n
        for n in result.notes
    ), result.notes
