"""A function of the script that needs the accelerator but is never called in it (codemod/rewrites.py).

Survey 26a: a point-cloud generator trainer under mp.spawn defines ``validate(model, loader, rank)``
reading ``model.module.compute_loss(...)`` and never calls it (its loop has no validation). The
conversion refused the whole script: "validate() needs the accelerator but is never called in
this file". A function nobody calls in the file runs none of the training: it takes the
accelerator as a new parameter like any other helper, and a note says a caller elsewhere must
hand it in."""

from regcomp_lint.codemod import convert_source

SOURCE = """\
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 1)

    def forward(self, x):
        return self.fc(x)

    def compute_loss(self, x):
        return self(x).pow(2).mean()


def train_epoch(model, loader, optimizer):
    for (x,) in loader:
        optimizer.zero_grad()
        loss = model(x).pow(2).mean()
        loss.backward()
        optimizer.step()


def validate(model, loader, rank):
    model.eval()
    total = 0.0
    with torch.no_grad():
        for (x,) in loader:
            total += model.module.compute_loss(x.to(rank)).item()
    return total


def main():
    dist.init_process_group("gloo")
    model = DDP(Net())
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    ds = TensorDataset(torch.randn(32, 4))
    loader = DataLoader(ds, batch_size=4, sampler=DistributedSampler(ds))
    for epoch in range(2):
        train_epoch(model, loader, optimizer)


if __name__ == "__main__":
    main()
"""


def test_a_helper_never_called_takes_the_accelerator_and_the_script_converts():
    result = convert_source(SOURCE, "t.py")
    assert result.refused is None, result.refused
    assert "def validate(model, loader, rank, accelerator):" in result.text, result.text
    assert "accelerator.unwrap_model(model, keep_torch_compile=False).compute_loss(" in result.text, result.text
    assert any(
        n.startswith("validate() is never called in this file: it takes the accelerator as a new parameter")
        for n in result.notes
    ), result.notes


def test_a_helper_used_other_than_by_a_call_still_refuses():
    source = SOURCE.replace("    for epoch in range(2):\n", "    hooks = [validate]\n    for epoch in range(2):\n")
    result = convert_source(source, "t.py")
    assert result.refused is not None
    assert "validate() needs the accelerator but is used other than by a call" in result.refused, result.refused
