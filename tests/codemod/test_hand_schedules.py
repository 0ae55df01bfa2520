"""A learning rate set by hand in the training loop is named once the loader is prepared
(codemod/hand_schedules.py)."""

from __future__ import annotations

from regcomp_lint.codemod import ConvertOptions, convert_source

SCRIPT = """\
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

device = "cuda" if torch.cuda.is_available() else "cpu"
LOADER
model = nn.Linear(4, 1).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
burn_in = 20
for epoch in range(3):
    for batch_i, (x, y) in enumerate(BATCHES):
        batches_done = len(BATCHES) * epoch + batch_i
        for g in optimizer.param_groups:
            g["lr"] = 0.1 * min(1.0, batches_done / burn_in)
        loss = nn.functional.mse_loss(model(x.to(device)), y.to(device))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
"""


def test_a_burn_in_counted_in_batches_of_a_prepared_loader_is_named():
    """YOLOv3's trainer: on N processes the burn-in ends after N times the data."""
    text = SCRIPT.replace(
        "LOADER", "loader = DataLoader(TensorDataset(torch.randn(64, 4), torch.randn(64, 1)), batch_size=8)"
    )
    result = convert_source(text.replace("BATCHES", "loader"), "train.py")
    assert result.refused is None, result.refused
    assert any(n.startswith("the learning rate is set by hand at line 14: with loader prepared") for n in result.notes)


def test_batches_the_script_draws_itself_are_not_sharded_so_nothing_is_named():
    text = SCRIPT.replace("LOADER", "batches = [(torch.randn(8, 4), torch.randn(8, 1)) for _ in range(8)]")
    result = convert_source(text.replace("BATCHES", "batches"), "train.py")
    assert result.refused is None, result.refused
    assert not any("set by hand" in n for n in result.notes)


ADALORA = """\
import torch
from torch.utils.data import DataLoader, TensorDataset
from transformers import get_linear_schedule_with_warmup

model = build_adalora_model()
loader = DataLoader(TensorDataset(torch.randn(64, 4), torch.randn(64, 1)), batch_size=8)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
lr_scheduler = get_linear_schedule_with_warmup(optimizer, 0, len(loader) * 2)
model.base_model.peft_config.total_step = len(loader) * 2
global_step = 0
for epoch in range(2):
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        lr_scheduler.step()
        model.base_model.update_and_allocate(global_step)
        optimizer.zero_grad()
        global_step += 1
"""


def test_adalora_budget_counted_in_steps_is_named():
    """PEFT's AdaLoRA example (survey 22c, adalora_s2s) calls
    ``model.base_model.update_and_allocate(global_step)`` against ``total_step = len(loader) *
    num_epochs`` counted before prepare(). On 2 processes each counts half the steps: the prepared
    LR scheduler keeps its pace, the rank budget does not (replica, tiny BART, init_r=12,
    target_r=2: 12 of 72 ranks kept by the original and by the conversion on 1 process, 72 of 72
    on 2; 12 of 72 once total_step is counted per process)."""
    from regcomp_lint.codemod import convert_source

    result = convert_source(ADALORA, "train.py")
    assert result.refused is None, result.refused
    assert any(
        n.startswith("update_and_allocate(global_step) at line 17 counts AdaLoRA's rank budget in optimizer steps")
        for n in result.notes
    ), result.notes


# A scheduler stepped with a value inside the loop over a prepared training loader (the DeLA
# point-cloud trainer's ``scheduler.step(scheduler_step)`` of timm's CosineLRScheduler, survey 26b):
# left unprepared, its note says that on N processes the count of batches reaches each point
# after N times the data; one stepped with a value per epoch moves exactly as in the original.

VALUED_SCRIPT = """
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset
from timm.scheduler.cosine_lr import CosineLRScheduler

loader = DataLoader(TensorDataset(torch.randn(32, 4), torch.randn(32, 1)), batch_size=4, shuffle=True)
steps_per_epoch = len(loader)
model = nn.Linear(4, 1)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
scheduler = CosineLRScheduler(optimizer, t_initial=10 * steps_per_epoch, warmup_t=steps_per_epoch)
scheduler_step = 0
for epoch in range(10):
    for x, y in loader:
{batch_step}
        loss = nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
{epoch_step}
"""


def valued_notes(batch_step: str = "", epoch_step: str = "") -> list[str]:
    source = VALUED_SCRIPT.replace("{batch_step}", batch_step).replace("{epoch_step}", epoch_step)
    result = convert_source(source, "train.py", ConvertOptions())
    assert result.refused is None, result.refused
    return [n for n in result.notes if "scheduler" in n]


def test_a_value_counted_in_batches_is_named_for_its_pace_on_several_processes():
    found = valued_notes(batch_step="        scheduler.step(scheduler_step)\n        scheduler_step += 1")
    assert any("line 15" in n and "N times the data" in n and "loader" in n for n in found), found
    assert not any("exactly as in the original" in n for n in found), found


def test_a_value_stepped_once_per_epoch_still_moves_exactly_as_in_the_original():
    found = valued_notes(epoch_step="    scheduler.step(epoch + 1)")
    assert any("exactly as in the original" in n for n in found), found


def test_a_fraction_of_the_prepared_loader_s_length_keeps_its_note():
    """NNI's SAM trainer: ``iters = len(trainloader)`` after prepare(), ``scheduler.step(epoch +
    batch_idx / iters)``: each process's fraction of its own share keeps the pace."""
    found = valued_notes(batch_step="        scheduler.step(epoch + scheduler_step / len(loader))")
    assert any("exactly as in the original" in n for n in found), found
