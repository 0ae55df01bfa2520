"""A method that needs the accelerator in a class that does not hold one (codemod/rewrites.py).

Survey 25b: YOLOv5's ``ModelEMA`` calls ``de_parallel(model)`` in ``__init__`` and ``update``;
``de_parallel`` reads ``model.module``, which the conversion reaches through
``accelerator.unwrap_model``, so it must be handed the accelerator, and so must its callers. The
refusal said only "method __init__() needs the accelerator but its class does not hold one": no
class, no line, no call. It now names the method with its class and line and the call that needs
the accelerator."""

from regcomp_lint.codemod import convert_source

SOURCE = """\
from copy import deepcopy

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def de_parallel(model):
    return model.module if type(model) is DDP else model


class ModelEMA:
    def __init__(self, model):
        self.ema = deepcopy(de_parallel(model)).eval()

    def update(self, model):
        msd = de_parallel(model).state_dict()
        for k, v in self.ema.state_dict().items():
            if v.dtype.is_floating_point:
                v.mul_(0.9).add_(msd[k].detach(), alpha=0.1)


def main():
    dist.init_process_group("gloo")
    model = DDP(nn.Linear(4, 2))
    ema = ModelEMA(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    ds = TensorDataset(torch.randn(32, 4), torch.randint(0, 2, (32,)))
    loader = DataLoader(ds, batch_size=4, sampler=DistributedSampler(ds))
    for x, y in loader:
        loss = nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        ema.update(model)


if __name__ == "__main__":
    main()
"""


def test_the_refusal_names_the_class_the_line_and_the_call():
    result = convert_source(SOURCE, "t.py")
    assert result.refused is not None, result.text
    assert "ModelEMA.__init__() (line 16)" in result.refused, result.refused
    assert "de_parallel() at line 17" in result.refused, result.refused
