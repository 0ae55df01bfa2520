"""A one-process script converted without ``cpu=``, launched with plain ``torchrun`` on a machine
without CUDA. Accelerate 1.15 (``PartialState._prepare_backend``) joins torchrun's processes on
CUDA (``LOCAL_RANK`` set: MULTI_GPU, nccl) but on a CPU-only machine only when ``cpu=True``
(MULTI_CPU, gloo); without it each rank trains alone (measured, 2 ranks: ``DistributedType.NO``,
``num_processes=1`` on both; with ``cpu=True``: MULTI_CPU, 2). A ``cpu=`` that maps it exactly
would move an MPS (or XPU) run to the CPU, so the conversion says it in a note instead."""

from __future__ import annotations

from regcomp_lint.codemod import convert_source

SCRIPT = """\
import torch
import torch.nn as nn

device = "cuda" if torch.cuda.is_available() else "cpu"
model = nn.Linear(4, 1).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(64, 4), torch.randn(64, 1)), batch_size=8)
for x, y in loader:
    x, y = x.to(device), y.to(device)
    loss = nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
"""


def _torchrun_notes(source: str) -> list[str]:
    result = convert_source(source, "train.py")
    assert result.refused is None, result.refused
    return [n for n in result.notes if "plain torchrun" in n]


def test_a_placed_one_process_script_without_cpu_is_told_about_plain_torchrun_on_the_cpu():
    notes = _torchrun_notes(SCRIPT)
    assert len(notes) == 1, notes
    assert "ACCELERATE_USE_CPU=1" in notes[0] and "trains alone" in notes[0], notes


def test_a_script_given_cpu_true_is_not_told():
    unplaced = SCRIPT.replace(".to(device)", "").replace("    x, y = x, y\n", "")
    assert _torchrun_notes(unplaced) == []
