"""A scheduler stepped by the main process alone (survey 25d pdiff: ``if accelerator.is_main_process:
scheduler.step()``): on every other process the learning rate never moves. RC402 names it (session
25); the fixer, converting such a script, said nothing. It now names the step in a note, on an
Accelerate script and on a plain DDP one, and leaves it as the original had it (the conversion
trains as the original did, defect included)."""

from __future__ import annotations

from regcomp_lint.codemod import convert_source

ACCELERATED = """\
import torch
import torch.nn as nn
from accelerate import Accelerator
from torch.utils.data import DataLoader, TensorDataset

accelerator = Accelerator()
model = nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
sched = torch.optim.lr_scheduler.StepLR(opt, 2, gamma=0.5)
loader = DataLoader(TensorDataset(torch.randn(64, 4), torch.randn(64, 1)), batch_size=8)
model, opt, loader = accelerator.prepare(model, opt, loader)
for epoch in range(2):
    for x, y in loader:
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        accelerator.backward(loss)
        opt.step()
        if TEST:
            sched.step()
"""

DDP_SCRIPT = """\
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    model = DDP(torch.compile(nn.Linear(4, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    sched = torch.optim.lr_scheduler.StepLR(opt, 2, gamma=0.5)
    data = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
    loader = DataLoader(data, batch_size=8, sampler=DistributedSampler(data))
    for epoch in range(2):
        for x, y in loader:
            loss = nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if rank == 0:
                sched.step()


if __name__ == "__main__":
    main()
"""


def _notes(source: str) -> list[str]:
    result = convert_source(source, "train.py")
    assert result.refused is None, result.refused
    return [n for n in result.notes if "sched.step()" in n and "main process alone" in n]


def test_an_accelerate_script_stepping_its_scheduler_on_the_main_process_alone_is_told():
    notes = _notes(ACCELERATED.replace("TEST", "accelerator.is_main_process"))
    assert len(notes) == 1, notes
    assert "line 19" in notes[0] and "learning rate" in notes[0], notes


def test_a_ddp_script_stepping_its_scheduler_on_rank_0_alone_is_told():
    notes = _notes(DDP_SCRIPT)
    assert len(notes) == 1 and "line 24" in notes[0], notes


def test_a_scheduler_stepped_on_every_process_is_not_named():
    assert _notes(ACCELERATED.replace("TEST", "True")) == []
    assert _notes(DDP_SCRIPT.replace("if rank == 0:", "if epoch >= 0:")) == []


def test_an_accelerate_script_left_unchanged_says_it_in_its_reason(tmp_path):
    # pdiff: its launch file passes `--dynamo_backend no`, so nothing is converted
    (tmp_path / "train.sh").write_text("accelerate launch --dynamo_backend no train.py\n")
    script = tmp_path / "train.py"
    script.write_text(ACCELERATED.replace("TEST", "accelerator.is_main_process"))
    result = convert_source(script.read_text(), str(script))
    assert result.unchanged is not None and "sched.step() at line 19 runs on the main process alone" in result.unchanged
