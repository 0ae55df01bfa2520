"""A loader of a library's own DataLoader class (PyG's ``torch_geometric.loader.DataLoader``,
MONAI's ``monai.data.DataLoader``: subclasses of torch's) handed a ``DistributedSampler`` is
sharded per rank already. Its origin is unknown to the roles, so it used to be prepared as "a
loader of unknown origin" and sharded a second time (survey 21d, the ALIGNN materials GNN under
torchrun: each of 2 ranks trained on 16 samples an epoch where the original trained on 32). It
stays unprepared now, as a torch DataLoader given the same sampler does; without a sampler such a
loader is still prepared."""

from __future__ import annotations

import pytest

from regcomp_lint.codemod import convert_source

SCRIPT = """\
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data.distributed import DistributedSampler
{import_line}


def setup_ddp():
    dist.init_process_group(backend="gloo")
    return int(os.environ["LOCAL_RANK"])


def train():
    local_rank = setup_ddp()
    world_size = dist.get_world_size()
    data = [(torch.randn(4), torch.randn(1)) for _ in range(32)]
{loader}    model = DDP(torch.nn.Linear(4, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(3):
        train_sampler.set_epoch(epoch)
        for batch in train_loader:
            optimizer.zero_grad()
            loss = model(batch[0]).sum()
            loss.backward()
            optimizer.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    train()
"""

LIBRARIES = {
    "pyg": "from torch_geometric.loader import DataLoader",
    "monai": "from monai.data import DataLoader",
    "pyg module": "import torch_geometric.loader as pyg_loader",
}

SHARDED = {
    "pyg": (
        "    train_sampler = DistributedSampler(data, num_replicas=world_size, rank=local_rank, shuffle=True)\n"
        "    train_loader = DataLoader(data, batch_size=4, sampler=train_sampler, num_workers=0)\n"
    ),
    "monai": (
        "    train_sampler = DistributedSampler(data)\n"
        "    train_loader = DataLoader(data, batch_size=4, sampler=train_sampler)\n"
    ),
    "pyg module": (
        "    train_sampler = DistributedSampler(data) if world_size > 1 else None\n"
        "    train_loader = pyg_loader.DataLoader(data, batch_size=4, sampler=train_sampler)\n"
    ),
}


@pytest.mark.parametrize("library", sorted(LIBRARIES))
def test_a_library_loader_given_a_distributed_sampler_stays_unprepared(library):
    src = SCRIPT.format(import_line=LIBRARIES[library], loader=SHARDED[library])
    result = convert_source(src, "train.py")
    assert result.refused is None, result.refused
    assert "model, optimizer = accelerator.prepare(model, optimizer)\n" in result.text, result.text
    assert any(n.startswith("train_loader ") and "left unprepared" in n for n in result.notes), result.notes


def test_a_library_loader_without_a_sampler_is_still_prepared():
    loader = "    train_sampler = None\n    train_loader = DataLoader(data, batch_size=4, shuffle=True)\n"
    src = SCRIPT.format(import_line=LIBRARIES["pyg"], loader=loader).replace(
        "        train_sampler.set_epoch(epoch)\n", ""
    )
    result = convert_source(src, "train.py")
    assert result.refused is None, result.refused
    assert "model, optimizer, train_loader = accelerator.prepare(model, optimizer, train_loader)\n" in result.text
