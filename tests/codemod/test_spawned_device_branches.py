"""A worker started by mp.spawn that sets its device in both branches of its own process-group
set-up (IDDM's ``if args.distributed: dist.init_process_group(...); device = device_initializer(rank)
else: device = device_initializer(args.use_gpu)``, survey 22c). The Accelerator can only be made
after the process group exists, so after that ``if``; the device the branches chose is then set
again from it, as a ``device = ...`` line of its own is (codemod/plain.py ``_place_accelerator``)."""

from regcomp_lint.codemod import convert_source

SCRIPT = """\
import argparse

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn


def train(rank=None, args=None):
    if args.distributed:
        distributed = True
        dist.init_process_group(backend="gloo", rank=rank, world_size=args.world_size)
        device = torch.device("cuda", rank)
        dist.barrier()
    else:
        distributed = False
        device = torch.device("cuda", args.use_gpu)
    model = nn.Linear(4, 1).to(device)
    if distributed:
        model = nn.parallel.DistributedDataParallel(model, device_ids=[device])
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(5):
        loss = model(torch.randn(8, 4, device=device)).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--distributed", action="store_true")
    parser.add_argument("--world_size", type=int, default=2)
    parser.add_argument("--use_gpu", type=int, default=0)
    args = parser.parse_args()
    if args.distributed:
        mp.spawn(train, args=(args,), nprocs=args.world_size)
    else:
        train(args=args)
"""


def test_the_device_chosen_in_the_process_group_branches_is_set_again_after_the_accelerator():
    result = convert_source(SCRIPT, "train.py")
    assert result.refused is None, result.refused
    assert '        device = torch.device("cuda", rank)\n' in result.text
    assert '        device = torch.device("cuda", args.use_gpu)\n' in result.text
    assert result.text.count("    device = accelerator.device\n") == 1, result.text
    assert result.text.index("    accelerator = Accelerator(") > result.text.index("        distributed = False\n")
