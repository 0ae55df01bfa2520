"""codemod/checkpoint_writes.py (save_wrapper_states_once): a helper that saves
``model.module.state_dict()`` of the script's DataParallel/DDP model writes from the main process
only once converted.

the MV-softmax face trainer's ``train_one_epoch(data_loader, model, ...)`` saves
``{'state_dict': model.module.state_dict(), ...}`` with ``torch.save`` at the end of every epoch;
the conversion removes the DataParallel wrap and reads ``model.module`` through
``accelerator.unwrap_model``, but left the ``torch.save``: launched on 2 processes, both wrote every
checkpoint file (measured: 12 of 12 files written by rank 0 and rank 1)."""

from __future__ import annotations

from regcomp_lint.codemod import ConvertOptions, convert_source

SCRIPT = """
import io
import torch
from torch import nn


def train_one_epoch(loader, model, optimizer, epoch):
    for x, y in loader:
        loss = nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    SAVE


def main():
    model = nn.Linear(4, 1)
    model = torch.nn.DataParallel(model).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    data = torch.utils.data.TensorDataset(torch.randn(32, 4), torch.randn(32, 1))
    loader = torch.utils.data.DataLoader(data, batch_size=8, shuffle=True)
    for epoch in range(3):
        train_one_epoch(loader, model, optimizer, epoch)


if __name__ == "__main__":
    main()
"""


def convert(save: str) -> tuple[str, list[str]]:
    result = convert_source(SCRIPT.replace("SAVE", save), "train.py", ConvertOptions())
    assert result.refused is None, result.refused
    return result.text, result.notes


def test_a_state_dict_in_a_saved_dict_is_written_once():
    out, notes = convert(
        'state = {"state_dict": model.module.state_dict(), "epoch": epoch}\n    torch.save(state, "ckpt_%d.pt" % epoch)'
    )
    assert 'accelerator.save(state, "ckpt_%d.pt" % epoch)' in out
    assert "torch.save(" not in out
    assert '"state_dict": accelerator.unwrap_model(model, keep_torch_compile=False).state_dict()' in out
    assert any("torch.save() at line 14 -> accelerator.save()" in note for note in notes)


def test_a_state_dict_saved_directly_is_written_once():
    out, _ = convert('torch.save(model.module.state_dict(), "last.pt")')
    assert 'accelerator.save(accelerator.unwrap_model(model, keep_torch_compile=False).state_dict(), "last.pt")' in out


def test_a_save_into_memory_stays_per_process():
    out, _ = convert("buffer = io.BytesIO()\n    torch.save(model.module.state_dict(), buffer)")
    assert "torch.save(accelerator.unwrap_model(model, keep_torch_compile=False).state_dict(), buffer)" in out


def test_a_save_under_a_rank_test_is_left_under_it():
    out, _ = convert('if torch.distributed.get_rank() == 0:\n        torch.save(model.module.state_dict(), "last.pt")')
    assert "get_rank() == 0:" in out
    assert "is_main_process:" not in out
