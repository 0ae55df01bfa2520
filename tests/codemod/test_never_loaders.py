"""Iterables of the training loop that are never data loaders (codemod/never_loaders.py).

Survey 25b: a one-shot NAS supernet trainer (mp.spawn) samples a few architectures each step,
``rand_arch = cand_sampler.TBS_sampling()`` (a method of the script's own ``Sampling`` class that
returns a list), broadcasts them as ``rand_arch = torch.tensor(rand_arch).cuda(gpu)`` and runs one
backward per architecture, ``for r_a in rand_arch: ...; loss.backward()``. The list was taken for a
loader of unknown origin, so the fixer refused: "rand_arch is built anew in each pass of the loop
... one prepare() cannot serve every pass", naming an object that is no loader."""

from regcomp_lint.codemod import convert_source

SAMPLED = """\
import random

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.paths = nn.ModuleList([nn.Linear(4, 2), nn.Linear(4, 2)])

    def forward(self, x, arch):
        return self.paths[arch](x)


class Sampling:
    def __init__(self, n):
        self.n = n

    def sample(self):
        output = []
        for i in range(self.n):
            output.append(random.randint(0, 1))
        return output


def do_train(model):
    ds = TensorDataset(torch.randn(32, 4), torch.randint(0, 2, (32,)))
    loader = DataLoader(ds, batch_size=8, shuffle=True)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    sampler = Sampling(2)
    for x, y in loader:
        archs = sampler.sample()
        optimizer.zero_grad()
        for a in archs:
            loss = nn.functional.cross_entropy(model(x, a), y)
            loss.backward()
        optimizer.step()


if __name__ == "__main__":
    do_train(Net())
"""

AS_TENSOR = SAMPLED.replace(
    "        archs = sampler.sample()\n",
    "        archs = sampler.sample()\n        archs = torch.tensor(archs).long()\n",
)

LOCAL_FUNCTION = SAMPLED.replace("sampler.sample()", "pick([0, 1])").replace(
    "def do_train(model):",
    "def pick(choices):\n    return [random.choice(choices) for _ in range(2)]\n\n\ndef do_train(model):",
)

FROM_A_HELPER = SAMPLED.replace("sampler.sample()", "get_batches(ds)").replace(
    "import random\n", "import random\n\nfrom helpers import get_batches\n"
)


def _converted(source: str) -> str:
    result = convert_source(source, "t.py")
    assert result.refused is None, result.refused
    return result.text


def test_a_list_of_the_scripts_own_sampler_is_not_prepared():
    text = _converted(SAMPLED)
    assert "model, optimizer, loader = accelerator.prepare(model, optimizer, loader)" in text, text
    assert "archs = sampler.sample()\n" in text, text


def test_a_tensor_made_from_it_is_not_prepared():
    text = _converted(AS_TENSOR)
    assert "model, optimizer, loader = accelerator.prepare(model, optimizer, loader)" in text, text
    assert "archs = torch.tensor(archs).long()\n" in text, text


def test_a_list_a_function_of_the_script_returns_is_not_prepared():
    text = _converted(LOCAL_FUNCTION)
    assert "model, optimizer, loader = accelerator.prepare(model, optimizer, loader)" in text, text


def test_a_call_into_another_module_still_counts_as_a_loader():
    result = convert_source(FROM_A_HELPER, "t.py")
    # what get_batches() returns cannot be read: still taken for a possible loader, built anew each pass
    assert result.refused is not None and "archs" in result.refused, result.text


LOGGED = """\
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

from utils import MetricLogger


def main():
    model = nn.Linear(4, 1)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-4)
    loader = DataLoader(TensorDataset(torch.randn(32, 4), torch.randn(32, 1)), batch_size=4, shuffle=True)
    for epoch in range(2):
        metric_logger = MetricLogger(delimiter="  ")
        header = 'Epoch: [{}]'.format(epoch)
        for i, (x, y) in enumerate(metric_logger.log_every(loader, 10, header)):
            loss = nn.functional.mse_loss(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()


if __name__ == "__main__":
    main()
"""


def test_a_string_handed_to_the_loop_s_logger_is_not_a_loader():
    """survey26a vqclr_simclr (MoCo/DeiT-style `metric_logger.log_every(train_loader, print_freq,
    header)` with `header = 'Epoch: [{}]'.format(epoch)` in the epoch loop): the header string was
    taken for a loader built anew each epoch and the script refused ("header is built anew in each
    pass of the loop")."""
    result = convert_source(LOGGED, "train.py")
    assert result.refused is None, result.refused
    assert "header" not in " ".join(result.notes), result.notes
    assert "accelerator.prepare(model, optimizer, loader)" in result.text, result.text
