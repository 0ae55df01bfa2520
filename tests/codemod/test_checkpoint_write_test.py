"""A checkpoint-writing helper whose result is only the test of an ``if`` that logs
(``if atomic_save(payload, CKPT_OUT): print("saved")``, survey 19c's Quillan SFT: a temp file then
``os.replace``). Left in every process, two processes wrote the same temp file and one
``os.replace`` found it gone (FileNotFoundError in 36 of 100 saves on 2 gloo processes). The test
becomes ``accelerator.is_main_process and atomic_save(...)``: the main process writes and logs,
the others skip both. An ``if`` whose branches do more than log keeps the note."""

from regcomp_lint.codemod import convert_source

SCRIPT = """\
import os
import torch
from torch.utils.data import DataLoader, TensorDataset


def atomic_save(payload, dest):
    tmp = dest + ".tmp"
    torch.save(payload, tmp)
    os.replace(tmp, dest)
    return True


def run():
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(TensorDataset(torch.randn(8, 4), torch.randn(8, 1)), batch_size=2, shuffle=True)
    saved = 0
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if atomic_save({{"model": model.state_dict()}}, "best.pt"):
            {body}


if __name__ == "__main__":
    run()
"""


def test_a_checkpoint_write_that_only_gates_logging_runs_on_the_main_process():
    result = convert_source(SCRIPT.format(body='print("saved")'), "sft.py")
    assert result.refused is None, result.refused
    assert "if accelerator.is_main_process and atomic_save(" in result.text, result.text
    assert "unwrap_model(model, keep_torch_compile=False).state_dict()" in result.text, result.text
    assert not any("its result is used" in n for n in result.notes), result.notes


def test_a_checkpoint_write_whose_result_changes_state_keeps_the_note():
    result = convert_source(SCRIPT.format(body="saved += 1"), "sft.py")
    assert result.refused is None, result.refused
    assert "if atomic_save(" in result.text, result.text
    assert any("atomic_save() at line 23 writes a checkpoint but its result is used" in n for n in result.notes), (
        result.notes
    )
