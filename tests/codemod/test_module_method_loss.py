"""A loss the original computes through ``model.module.method(...)`` of its own DDP wrap: the
method runs outside DDP's forward, so neither the original nor the conversion averages its
gradients across processes. The conversion keeps that (it trains as the original) and says so
(codemod/hand_distribution.py). survey 19a's SST ``mp.spawn`` worker
(``auto_encoder.module.encode(x)``) and survey 18's cfm_spawn (``model.module.compute_loss``)."""

from regcomp_lint.codemod import convert_source

SCRIPT = """\
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


class AutoEncoder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = torch.nn.Linear(8, 4)
        self.dec = torch.nn.Linear(4, 8)

    def forward(self, x):
        return self.dec(self.enc(x))

    def encode(self, x):
        return self.enc(x)


def main():
    dist.init_process_group("gloo")
    model = DDP(AutoEncoder())
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for step in range(10):
        x = torch.randn(16, 8)
        LOSS_LINE
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
"""


def test_a_loss_through_the_wrapped_models_own_method_is_named():
    result = convert_source(SCRIPT.replace("LOSS_LINE", "loss = model.module.encode(x).pow(2).mean()"), "train.py")
    assert result.refused is None, result.refused
    assert "loss = accelerator.unwrap_model(model, keep_torch_compile=False).encode(x).pow(2).mean()" in result.text
    note = next((n for n in result.notes if "outside DDP's forward" in n), None)
    assert note is not None, result.notes
    assert note.startswith("model.module.encode(...) at line 27 feeds the loss outside DDP's forward")


def test_a_loss_through_forward_needs_no_such_note():
    result = convert_source(SCRIPT.replace("LOSS_LINE", "loss = (model(x) - x).pow(2).mean()"), "train.py")
    assert result.refused is None, result.refused
    assert not any("outside DDP's forward" in n for n in result.notes), result.notes


def test_a_loss_through_the_wrapped_module_called_directly_is_named():
    """survey 19c's trades_ddp trains through ``ddp_model.module(x)``: the inner module's forward,
    outside DDP's (no gradient sync; replica per-rank weight norms 2.588683 / 2.629191). Kept, and
    now said, as for a method of the inner module."""
    result = convert_source(SCRIPT.replace("LOSS_LINE", "loss = model.module(x).pow(2).mean()"), "train.py")
    assert result.refused is None, result.refused
    assert "loss = accelerator.unwrap_model(model, keep_torch_compile=False)(x).pow(2).mean()" in result.text
    note = next((n for n in result.notes if "outside DDP's forward" in n), None)
    assert note is not None, result.notes
    assert note.startswith("model.module(...) at line 27 feeds the loss outside DDP's forward"), note
    assert "call model(...) instead" in note, note
