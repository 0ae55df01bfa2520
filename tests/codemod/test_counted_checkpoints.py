"""Checkpoints scheduled by the optimizer steps counted before ``prepare()`` (survey 25c babylm_gpt2:
``checkpoint_steps = set(log_spaced_steps(total_steps))`` from ``len(dataset)``, then ``if
global_step in checkpoint_steps: model.save_pretrained(...)``). On N processes each process takes
1/N of the steps: ``checkpoint-k`` holds the original's state after N·k steps (the same samples and
LR: the prepared scheduler steps N times), and the checkpoints past 1/N of the run are never
written (replica rep_babylm, 2 processes). Exact on one process; the conversion names the test."""

from __future__ import annotations

from regcomp_lint.codemod import convert_source

SCRIPT = """\
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def main():
    data = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
    loader = DataLoader(data, batch_size=8, shuffle=True)
    model = nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    total_steps = len(data) // 8 * 2
    checkpoint_steps = {1, 2, 4, total_steps}
    global_step = 0
    for epoch in range(2):
        for x, y in loader:
            loss = nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            global_step += 1
            if TEST:
                torch.save(model.state_dict(), f"checkpoint-{global_step}.pt")


if __name__ == "__main__":
    main()
"""


def _notes(test: str) -> list[str]:
    result = convert_source(SCRIPT.replace("TEST", test), "train.py")
    assert result.refused is None, result.refused
    return [n for n in result.notes if "checkpoint" in n and "line 21" in n]


def test_a_checkpoint_at_steps_counted_before_prepare_is_named():
    notes = _notes("global_step in checkpoint_steps")
    assert len(notes) == 1, notes
    assert "global_step in checkpoint_steps" in notes[0] and "1/N" in notes[0], notes


def test_a_checkpoint_at_the_last_counted_step_is_named():
    assert len(_notes("global_step == total_steps")) == 1


def test_a_checkpoint_each_epoch_end_is_not_named():
    assert _notes("epoch == 1") == []
