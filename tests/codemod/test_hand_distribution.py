"""codemod/hand_distribution.py: what a script that distributes by hand keeps and loses."""

from __future__ import annotations

from regcomp_lint.codemod import convert_source

HELPER_GROUP = """\
import torch
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from utils.distributed import setup_distributed, cleanup_distributed


def train():
    rank, world_size = setup_distributed(backend="gloo")
    model = nn.Linear(4, 1)
    if world_size > 1:
        model = DDP(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(4):
        loss = model(torch.randn(2, 4)).sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    cleanup_distributed()


if __name__ == "__main__":
    train()
"""


def test_a_ddp_wrap_whose_process_group_a_helper_sets_up_still_runs_distributed_on_the_cpu(tmp_path):
    """Survey 23b, gpt2_chakra: the process group comes from ``setup_distributed()`` of a module
    not in the file, the script wraps DDP itself. Without ``cpu=`` Accelerate, on a machine without
    CUDA, under torchrun, took each process for a single one: no gradient sync, the two ranks ended
    with different weights (replica, 2 gloo processes: 9.084585 and 9.548167, the original 9.403088
    on both)."""
    result = convert_source(HELPER_GROUP, str(tmp_path / "train.py"))
    assert result.refused is None, result.refused
    assert "Accelerator(dynamo_plugin=dynamo_plugin, cpu=not torch.cuda.is_available())" in result.text, result.text
    assert any(n.startswith("cpu=not torch.cuda.is_available()") for n in result.notes), result.notes


def test_a_dataparallel_wrap_alone_gets_no_cpu_flag(tmp_path):
    text = HELPER_GROUP.replace("DDP(model)", "nn.DataParallel(model)")
    result = convert_source(text, str(tmp_path / "train.py"))
    assert result.refused is None, result.refused
    assert "cpu=not torch.cuda.is_available()" not in result.text, result.text
