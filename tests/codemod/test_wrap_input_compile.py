"""A compile of the model a DDP wrap under another name takes (``model = torch.compile(model)``
then ``ddp_model = DDP(model)``, the optimizer built from ``ddp_model.parameters()``, survey26d
speedrun_optuna's layout): the conversion prepares ``ddp_model``, so the hand-written compile of
``model`` must fold into the plugin like any compile of the trained model. Before, it was not seen:
the script's compile stayed and the plugin compiled again around it, and under a flag
(``if compile: model = torch.compile(model)``) the converted script compiled when the flag was off.
The regional-compilation pick follows the wrap to the model it takes, so a second run of the fixer
on its own output changes nothing (it used to add ``use_regional_compilation=True`` then)."""

from __future__ import annotations

from regcomp_lint.codemod.convert import convert_source

SCRIPT = """\
import os
import torch
import torch.nn as nn
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        return self.fc(x)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.h = nn.ModuleList([Block() for _ in range(4)])

    def forward(self, x):
        for b in self.h:
            x = b(x)
        return x


def main(compile=True):
    dist.init_process_group(backend="gloo")
    local_rank = int(os.environ["LOCAL_RANK"])
    model = Net()
{compile}
    ddp_model = DDP(model)
    optimizer = torch.optim.AdamW(ddp_model.parameters(), lr=1e-3)
    for step in range(10):
        loss = ddp_model(torch.randn(4, 8)).pow(2).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
"""


def _convert(compile_lines: str) -> str:
    result = convert_source(SCRIPT.format(compile=compile_lines), "train.py")
    assert result.refused is None, result.refused
    return result.text


def test_the_compile_of_the_wrapped_model_folds_into_the_plugin():
    text = _convert("    model = torch.compile(model)")
    assert "torch.compile(" not in text, text
    assert "use_regional_compilation=True" in text, text
    assert "ddp_model, optimizer = accelerator.prepare(ddp_model, optimizer)" in text, text


def test_a_flagged_compile_of_the_wrapped_model_keeps_its_flag():
    text = _convert("    if compile:\n        model = torch.compile(model)")
    assert "torch.compile(" not in text, text
    assert 'backend="inductor" if compile else "no"' in text, text


def test_the_conversion_is_idempotent():
    text = _convert("    model = torch.compile(model)")
    again = convert_source(text, "train.py")
    assert not again.changed and again.text == text, (again.notes, again.text)
