"""``utils.is_main_process()`` -- the DeiT / torchvision-references helper, ``get_rank() == 0`` --
is a main-process test like ``rank == 0`` (analysis/checkpoints.is_main_process_test). Before, a
write under ``if utils.is_main_process():`` got a second ``if accelerator.is_main_process:`` and the
note "every process appended the same lines to the file", and a SummaryWriter started there was
said to log from every process (survey 21a, sdgformer_cls: false on the original, whose log file
had one line per epoch on 2 processes)."""

from __future__ import annotations

from regcomp_lint.codemod import convert_source

SCRIPT = """\
import torch
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.tensorboard import SummaryWriter

import utils


def main(args):
    utils.init_distributed_mode(args)
    model = DDP(nn.Linear(4, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    writer = None
    if utils.is_main_process():
        writer = SummaryWriter("runs")
    for epoch in range(2):
        x, y = torch.randn(8, 4), torch.randn(8, 1)
        loss = nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        GUARD
            writer.add_scalar("loss", loss.item(), epoch)
            with open("log.txt", "a") as f:
                f.write(f"{epoch} {loss.item()}\\n")
"""


def _notes_and_text(source: str) -> tuple[list[str], str]:
    result = convert_source(source, "train.py")
    assert result.refused is None, result.refused
    return result.notes, result.text


def test_a_write_under_the_helper_is_left_as_the_script_guards_it():
    notes, text = _notes_and_text(SCRIPT.replace("GUARD", "if utils.is_main_process():"))
    assert "if accelerator.is_main_process:" not in text, text
    assert not any("every process" in n for n in notes), notes


def test_a_write_after_the_others_leave_through_the_helper_is_left_too():
    early_exit = (
        SCRIPT.replace(
            "        GUARD\n            writer",
            "        if not utils.is_main_process():\n            continue\n        writer",
        )
        .replace("            with open", "        with open")
        .replace("                f.write", "            f.write")
    )
    notes, text = _notes_and_text(early_exit)
    assert "if accelerator.is_main_process:" not in text, text
    assert not any("every process" in n for n in notes), notes


def test_a_helper_asking_about_another_group_is_no_main_process_test():
    _, text = _notes_and_text(SCRIPT.replace("GUARD", "if utils.is_main_process(group):"))
    assert "if accelerator.is_main_process:" in text


RANK0_HELPER = """\
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def is_rank0():
    return not dist.is_available() or not dist.is_initialized() or dist.get_rank() == 0


def save_ckpt(path, model, optimizer):
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()}, path)


def main():
    dist.init_process_group("gloo")
    model = DDP(nn.Linear(4, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    best = 1e9
    for epoch in range(2):
        x, y = torch.randn(8, 4), torch.randn(8, 1)
        loss = nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if is_rank0() and loss.item() < best:
            best = loss.item()
            save_ckpt("best.pt", model, optimizer)
    if is_rank0():
        save_ckpt("last.pt", model, optimizer)


if __name__ == "__main__":
    main()
"""


def test_a_helper_or_ing_not_distributed_with_the_rank_is_a_main_process_test():
    """survey 23c psma_segresnet: ``is_rank0()`` returns ``not dist.is_available() or not
    dist.is_initialized() or dist.get_rank() == 0``, true on the main process alone once
    Accelerate has set up the group (and on a single process). Before, both ``save_ckpt()`` calls
    under it got a second ``if accelerator.is_main_process:``."""
    _, text = _notes_and_text(RANK0_HELPER)
    assert "if accelerator.is_main_process:" not in text, text
    assert "if is_rank0() and loss.item() < best:" in text


def test_a_helper_or_ing_something_else_with_the_rank_guards_nothing():
    _, text = _notes_and_text(RANK0_HELPER.replace("not dist.is_initialized() or", "os.environ.get('X') or"))
    assert text.count("if accelerator.is_main_process:") == 2, text
