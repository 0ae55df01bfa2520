"""Copies of a model the original made after wrapping it in DDP (codemod/wrapped_copies.py)."""

from __future__ import annotations

import pytest

from regcomp_lint.codemod.convert import convert_source

#: survey 26f's DDPM trainer: `ema_model = AveragedModel(model)` of the DDP-wrapped model, sampled
#: through `ema_model.module.module` in a training function it is handed to
AVERAGED = """\
import os
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn


def train(model, ema_model, optimizer, loader):
    for x, y in loader:
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        ema_model.update_parameters(model)
    print(ema_model.module.module.weight.sum().item())
    if int(os.environ["RANK"]) == 0:
        torch.save(ema_model.module.state_dict(), "ema.pt")


def main():
    dist.init_process_group("gloo")
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(8, 4), torch.randn(8, 1)))
    model = DDP(torch.nn.Linear(4, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    ema_model = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(0.999))
    train(model, ema_model, optimizer, loader)


if __name__ == "__main__":
    main()
"""


def test_a_copy_of_the_ddp_wrapper_is_read_one_module_less():
    """The conversion drops the DDP wrap, so the average is of the plain module: the original's
    ``ema_model.module.module`` (AveragedModel -> DDP -> Linear) is ``ema_model.module`` there; kept
    as it was it raised AttributeError ('Linear' object has no attribute 'module') after the first
    epoch, on 1 process and on 2 (survey 26f, replica)."""
    result = convert_source(AVERAGED)
    assert result.refused is None, result.refused
    assert "ema_model.module.module" not in result.text
    assert "print(ema_model.module.weight.sum().item())" in result.text
    # one `.module` is AveragedModel's own: the saved keys lose the DDP wrap's `module.` prefix
    assert 'torch.save(ema_model.module.state_dict(), "ema.pt")' in result.text
    assert any("AveragedModel(model" in n and "module." in n for n in result.notes), result.notes


@pytest.mark.parametrize(
    ("copy", "read", "becomes"),
    [
        ("copy.deepcopy(model)", "ema_model.module.weight", "ema_model.weight"),
        ("EMA(model)", "ema_model.ema_model.module.weight", "ema_model.ema_model.weight"),
    ],
)
def test_other_copies_lose_the_wraps_module(copy, read, becomes):
    source = (
        AVERAGED.replace("AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(0.999))", copy)
        .replace("ema_model.module.module.weight", read)
        .replace("import os\n", "import os\nimport copy\nfrom ema_pytorch import EMA\n")
        .replace("ema_model.update_parameters(model)", "pass")
    )
    result = convert_source(source)
    assert result.refused is None, result.refused
    assert f"print({becomes}.sum().item())" in result.text


def test_a_copy_made_before_the_wrap_is_left_alone():
    source = AVERAGED.replace(
        "    model = DDP(torch.nn.Linear(4, 1))\n    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "    ema_model = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(0.999))\n",
        "    model = torch.nn.Linear(4, 1)\n    ema_model = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(0.999))\n"
        "    model = DDP(model)\n    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n",
    ).replace("ema_model.module.module.weight", "ema_model.module.weight")
    result = convert_source(source)
    assert result.refused is None, result.refused
    assert "print(ema_model.module.weight.sum().item())" in result.text
