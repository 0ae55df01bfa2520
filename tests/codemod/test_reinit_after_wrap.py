"""Weights drawn again after the script's own DDP wrap (survey 24d's VanilaGAN: ``netG =
DDP(netG)`` then ``netG.apply(weights_init)``, unseeded). DDP copies process 0's weights only when
it wraps the model, so in the original each process re-draws its own and the replicas train apart
(measured on a 2-process gloo replica: the ranks' weight sums differ by the same 0.727 at the
first and the last step; two runs of the original differ too). Converted, prepare() wraps after
the draw and every process trains from process 0's weights, what DDP assumes: converted, with a
note naming the draw and the wrap."""

from regcomp_lint.codemod import convert_source

SCRIPT = """\
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def weights_init(m):
    if isinstance(m, nn.Linear):
        nn.init.normal_(m.weight, 0.0, 0.02)


def train():
    dist.init_process_group("gloo")
    data = TensorDataset(torch.randn(32, 4), torch.randn(32, 1))
    loader = DataLoader(data, batch_size=4, sampler=DistributedSampler(data))
    net = nn.Linear(4, 1)
    if dist.is_available():
        net = DDP(net)
    net.apply(weights_init)
    optimizer = torch.optim.Adam(net.parameters(), lr=1e-3)
    for x, y in loader:
        loss = nn.functional.mse_loss(net(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    train()
"""


def _note(result) -> str | None:
    return next((n for n in result.notes if "after its DDP wrap" in n), None)


def test_a_draw_after_the_wrap_converts_with_a_note():
    result = convert_source(SCRIPT, "train.py")
    assert result.refused is None, result.refused
    note = _note(result)
    assert note is not None, result.notes
    assert note.startswith(
        "net.apply(weights_init) at line 22 draws net's weights again after its DDP wrap (line 21)"
    ), note


def test_an_initialiser_from_a_module_not_beside_counts_by_its_name():
    script = SCRIPT.replace(
        "def weights_init(m):\n    if isinstance(m, nn.Linear):\n        nn.init.normal_(m.weight, 0.0, 0.02)\n",
        "from network.weights_init import weights_init\n",
    )
    result = convert_source(script, "train.py")
    assert result.refused is None, result.refused
    assert _note(result) is not None, result.notes


def test_a_draw_before_the_wrap_needs_no_note():
    script = SCRIPT.replace("    net.apply(weights_init)\n", "").replace(
        "    net = nn.Linear(4, 1)\n", "    net = nn.Linear(4, 1)\n    net.apply(weights_init)\n"
    )
    result = convert_source(script, "train.py")
    assert result.refused is None, result.refused
    assert _note(result) is None, result.notes
