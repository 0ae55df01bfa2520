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


KWARGS = """\
import os

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def main_worker(rank, world_size):
    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:23456", rank=rank, world_size=world_size)
    model = torch.nn.parallel.DistributedDataParallel(nn.Linear(4, 1))
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-4)
    ds = TensorDataset(torch.randn(32, 4), torch.randn(32, 1))
    sampler = DistributedSampler(ds)
    loader = DataLoader(ds, batch_size=4, sampler=sampler)
    for epoch in range(2):
        sampler.set_epoch(epoch)
        for x, y in loader:
            loss = nn.functional.mse_loss(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        if rank == 0:
            save_model_name(model, optimizer, epoch, filename=f"epoch_{epoch}")


def save_model_name(model, optimizer, epoch, filename="last", **kwargs):
    results_to_save = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch}
    results_to_save.update(**kwargs)
    torch.save(results_to_save, os.path.join("results", f"{filename}.pth"))


if __name__ == "__main__":
    mp.spawn(main_worker, nprocs=2, args=(2,))
"""


def test_a_helper_with_kwargs_binds_the_accelerator_as_its_own_parameter():
    """survey26a vqclr_simclr (`def save_model_name(args, model, optimizer, epoch, filename='last',
    **kwargs)`, `results_to_save.update(**kwargs)`): the call was handed accelerator= and the
    signature left as it was ("**kwargs already accepts accelerator="), so the body's
    `accelerator.unwrap_model(...)` raised NameError at the first save (measured, mp.spawn x1 and
    x2), and the accelerator would have landed in the saved dict. It is now a keyword-only
    parameter before **kwargs."""
    result = convert_source(KWARGS, "t.py")
    assert result.refused is None, result.refused
    assert 'def save_model_name(model, optimizer, epoch, filename="last", *, accelerator, **kwargs):' in result.text, (
        result.text
    )
    compile(result.text, "t.py", "exec")
