"""codemod/distribution.py and checkpoint_writes.under_rank_test: a distributed set-up that only
runs under a constant-false flag (yolov3's ``milti_gpus = False``) leaves a one-process script.

Before, the conversion took the dead ``DistributedDataParallel`` wrap and ``get_rank()`` for the
script's own multi-process set-up: it kept ``if local_rank == 0:`` (``local_rank = 0`` on the path
that runs) as the guard of the checkpoint writes, so launched on 2 processes both wrote every file
(yolov3 replica: epoch_2.pth and epoch_4.pth written by rank 0 and rank 1), left the factory's
loader unsharded on the evidence of a ``set_epoch()`` that never runs, and noted `module.`-prefixed
checkpoints the original never wrote."""

from __future__ import annotations

from regcomp_lint.codemod import ConvertOptions, convert_source

SCRIPT = """
import shutil
import torch
from torch import nn


def save_checkpoint(state, filename):
    torch.save(state, filename)
    shutil.copyfile(filename, "last.pth")


def main(flag_value):
    multi_gpus = FLAG
    if multi_gpus:
        torch.distributed.init_process_group(backend="nccl")
        local_rank = torch.distributed.get_rank()
    else:
        local_rank = 0
    model = nn.Linear(4, 1)
    if multi_gpus:
        model = nn.parallel.DistributedDataParallel(model, device_ids=[local_rank])
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    data = torch.utils.data.TensorDataset(torch.randn(32, 4), torch.randn(32, 1))
    loader = torch.utils.data.DataLoader(data, batch_size=8, shuffle=True)
    for epoch in range(3):
        for x, y in loader:
            loss = nn.functional.mse_loss(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        if local_rank == 0:
            save_checkpoint({"model": model.state_dict()}, "ckpt.pth")


if __name__ == "__main__":
    main(False)
"""


def convert(flag: str) -> tuple[str, list[str]]:
    result = convert_source(SCRIPT.replace("FLAG", flag), "train.py", ConvertOptions())
    assert result.refused is None, result.refused
    return result.text, result.notes


def test_a_rank_test_on_a_constant_rank_no_longer_guards_the_write():
    out, _ = convert("False")
    assert (
        "        if local_rank == 0:\n            if accelerator.is_main_process:\n                save_checkpoint("
        in out
    )


def test_the_dead_set_up_is_not_taken_for_the_scripts_own_processes():
    out, notes = convert("False")
    assert 'torch.distributed.init_process_group(backend="nccl")' in out  # dead: left as it was
    assert "is_initialized" not in out
    assert not any("DDP wrap" in note or "`module.`" in note for note in notes)


def test_a_flag_that_can_be_true_keeps_the_set_up_and_its_rank_test():
    out, notes = convert("flag_value")
    assert "if not torch.distributed.is_initialized():" in out
    assert "is_main_process:" not in out
    assert any("removed 1 DDP wrap(s)" in note for note in notes)


def test_a_rank_from_the_environment_stays_a_rank_test():
    source = SCRIPT.replace("FLAG", "False").replace("local_rank = 0", 'local_rank = int(os.environ["RANK"])')
    result = convert_source("import os\n" + source, "train.py", ConvertOptions())
    assert result.refused is None
    assert "is_main_process:" not in result.text
