"""A strict=False load after the script's own DataParallel wrap keeps loading the original's
``module.``-prefixed checkpoints (codemod/plain.py ``_strip_wrapper_prefix``)."""

from __future__ import annotations

from regcomp_lint.codemod import convert_source

SCRIPT = """\
import os
import torch
import torch.nn as nn

device = "cuda" if torch.cuda.is_available() else "cpu"
model = nn.Linear(4, 1).to(device)
model = nn.DataParallel(model).to(device)
if os.path.exists("ckpt.pth"):
    model.load_state_dict(torch.load("ckpt.pth", map_location=device)STRICT)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    loss = model(torch.ones(2, 4, device=device)).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
torch.save(model.state_dict(), "ckpt.pth")
"""


def test_a_lenient_load_strips_the_wrappers_prefix():
    """speech self-distillation trainers resume with strict=False: converted, the unwrapped model
    skipped every `module.` key and trained on from random weights, without a word."""
    result = convert_source(SCRIPT.replace("STRICT", ", strict=False"), "train.py")
    assert result.refused is None, result.refused
    assert (
        '.load_state_dict({k.removeprefix("module."): v for k, v in torch.load("ckpt.pth", map_location=device)'
        ".items()}, strict=False)" in result.text
    )
    assert any("loads keys without their `module.` prefix" in note for note in result.notes)


def test_a_strict_load_is_left_to_fail_loudly():
    result = convert_source(SCRIPT.replace("STRICT", ""), "train.py")
    assert result.refused is None, result.refused
    assert "removeprefix" not in result.text
