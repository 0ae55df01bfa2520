"""A transformers fine-tuning script as the tutorials write it, without Accelerate: the library's
scheduler factory is a scheduler, not a second optimizer (codemod/optimizers.py through
analysis/optimizer_sources.py), and ``model.save_pretrained`` writes from the main process only
(codemod/wrapped_access.py)."""

from __future__ import annotations

from regcomp_lint.codemod.convert import convert_source

SCRIPT = """\
import torch
from torch.optim import AdamW
from torch.utils.data import DataLoader, TensorDataset
from transformers import BertConfig, BertForSequenceClassification, get_linear_schedule_with_warmup

data = TensorDataset(torch.randint(0, 100, (64, 16)), torch.randint(0, 2, (64,)))
loader = DataLoader(data, batch_size=8, shuffle=True)
model = BertForSequenceClassification(BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2))
optimizer = AdamW(model.parameters(), lr=2e-5)
scheduler = get_linear_schedule_with_warmup(optimizer, num_warmup_steps=0, num_training_steps=len(loader) * 2)
for epoch in range(2):
    for ids, labels in loader:
        model.zero_grad()
        loss = model(ids, labels=labels).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
model.save_pretrained("out")
"""


def _convert(text: str = SCRIPT):
    result = convert_source(text, "train.py")
    assert result.refused is None, result.refused
    return result


def test_a_library_scheduler_fed_the_optimizer_is_a_per_step_scheduler_not_an_optimizer():
    result = _convert()
    assert (
        "model, optimizer, loader, scheduler = accelerator.prepare(model, optimizer, loader, scheduler)" in result.text
    )
    # one optimizer: the clip goes through the accelerator (unscaled under fp16), not left with a "2 optimizers" note
    assert "        accelerator.clip_grad_norm_(model.parameters(), 1.0)\n" in result.text
    assert not any("2 optimizers" in note for note in result.notes), result.notes


def test_a_library_scheduler_stepped_per_epoch_stays_unprepared():
    text = SCRIPT.replace("        scheduler.step()\n", "    scheduler.step()\n")
    result = _convert(text)
    assert "model, optimizer, loader = accelerator.prepare(model, optimizer, loader)" in result.text


def test_save_pretrained_of_the_prepared_model_writes_from_the_main_process_only():
    result = _convert()
    assert '.save_pretrained("out", is_main_process=accelerator.is_main_process)\n' in result.text
    assert any("model.save_pretrained() at line 19 gets is_main_process" in note for note in result.notes)


def test_save_pretrained_that_already_says_where_it_runs_is_left_alone():
    for call in (
        'model.save_pretrained("out", is_main_process=rank == 0)',
        'model.save_pretrained("out", True)',
        'model.save_pretrained("out", **save_kwargs)',
    ):
        result = _convert(SCRIPT.replace('model.save_pretrained("out")', call))
        assert "is_main_process=accelerator.is_main_process" not in result.text, call


def test_swa_s_swalr_stepped_per_epoch_is_a_scheduler_left_unprepared():
    """SWALR is fed the optimizer and stepped: taken for a second optimizer, it was prepared and
    stepped once per process each epoch."""
    text = (
        "import torch\nfrom torch.optim.swa_utils import AveragedModel, SWALR\n"
        "from torch.utils.data import DataLoader, TensorDataset\n\n"
        "model = torch.nn.Linear(8, 2)\n"
        "loader = DataLoader(TensorDataset(torch.randn(64, 8), torch.randint(0, 2, (64,))), batch_size=8)\n"
        "optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "swa_model = AveragedModel(model)\nswa_scheduler = SWALR(optimizer, swa_lr=0.05)\n"
        "for epoch in range(10):\n"
        "    for x, y in loader:\n"
        "        optimizer.zero_grad()\n"
        "        torch.nn.functional.cross_entropy(model(x), y).backward()\n"
        "        optimizer.step()\n"
        "    if epoch > 5:\n        swa_model.update_parameters(model)\n        swa_scheduler.step()\n"
    )
    result = _convert(text)
    assert "model, optimizer, loader = accelerator.prepare(model, optimizer, loader)" in result.text
    assert any("swa_scheduler steps once per epoch" in note for note in result.notes), result.notes
