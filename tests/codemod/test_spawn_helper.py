"""``mp.spawn`` in a helper that is handed the worker: the PyTorch DDP tutorial's
``def run_demo(demo_fn, world_size): mp.spawn(demo_fn, ...)`` called as ``run_demo(demo_basic,
world_size)`` (survey 24d, ddp_demo). The worker is the one function of the file every call of
the helper passes; a helper nothing calls never spawns; anything else is refused as before
(codemod/hand_distribution.py ``_forwarded_worker``)."""

from regcomp_lint.codemod import convert_source

WORKER = """\
import os
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def demo_basic(rank, world_size):
    os.environ["MASTER_ADDR"] = "localhost"
    os.environ["MASTER_PORT"] = "12355"
    dist.init_process_group("gloo", rank=rank, world_size=world_size)
    ddp_model = DDP(nn.Linear(10, 5))
    optimizer = torch.optim.SGD(ddp_model.parameters(), lr=0.001)
    for _ in range(3):
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(ddp_model(torch.randn(20, 10)), torch.randn(20, 5))
        loss.backward()
        optimizer.step()
    dist.destroy_process_group()


def run_demo(demo_fn, world_size):
    mp.spawn(demo_fn, args=(world_size,), nprocs=world_size, join=True)

"""

TUTORIAL = (
    WORKER
    + """
if __name__ == "__main__":
    run_demo(demo_basic, 2)
"""
)

NEVER_CALLED = (
    WORKER
    + """
if __name__ == "__main__":
    mp.spawn(demo_basic, args=(2,), nprocs=2, join=True)
"""
)

TWO_WORKERS = (
    WORKER.replace("def run_demo", "def other(rank, world_size):\n    pass\n\n\ndef run_demo")
    + """
if __name__ == "__main__":
    run_demo(demo_basic, 2)
    run_demo(other, 2)
"""
)

_SPAWNED = "demo_basic() is started by mp.spawn"


def test_the_worker_handed_to_the_spawning_helper_is_the_one_started():
    result = convert_source(TUTORIAL, "train.py")
    assert result.refused is None, result.refused
    assert "ddp_model, optimizer = accelerator.prepare(ddp_model, optimizer)" in result.text, result.text
    assert "os.environ.update(RANK=str(dist.get_rank()), LOCAL_RANK=str(rank)" in result.text, result.text
    assert any(n.startswith(_SPAWNED) for n in result.notes), result.notes


def test_a_spawning_helper_nothing_calls_does_not_refuse_the_real_spawn():
    # the blog copy of the tutorial: run_demo() kept, its call commented out, mp.spawn(demo_basic, ...) below
    result = convert_source(NEVER_CALLED, "train.py")
    assert result.refused is None, result.refused
    assert any(n.startswith(_SPAWNED) for n in result.notes), result.notes


def test_a_helper_handed_two_workers_is_refused_at_its_spawn():
    result = convert_source(TWO_WORKERS, "train.py")
    assert result.refused is not None
    assert "mp.spawn(...) at line 28 does not start a function of this file" in result.refused, result.refused
