"""codemod/drawn_batches.py: an iterator of a prepared training loader, drawn with next() a
number of times the script fixes from the data's whole length, is refused (on N processes each
share holds 1/N of the batches: next() raises StopIteration part-way)."""

from __future__ import annotations

from regcomp_lint.codemod import ConvertOptions, convert_source

YUNET = """\
import math
import torch
import torch.utils.data as data

batch_size = 4
net = torch.nn.Linear(8, 1)
optimizer = torch.optim.SGD(net.parameters(), lr=0.05)


def train():
    dataset = data.TensorDataset(torch.randn(40, 8), torch.randn(40, 1))
    for epoch in range(3):
        epoch_size = math.ceil(len(dataset) / batch_size)
        batch_iterator = iter(data.DataLoader(dataset, batch_size, shuffle=True))
        # for each iteration in this epoch
        for iteration in range(epoch_size):
            images, targets = next(batch_iterator)
            loss = torch.nn.functional.mse_loss(net(images), targets)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()


if __name__ == "__main__":
    train()
"""

NAMED = """\
import torch
from torch.utils.data import DataLoader, TensorDataset

dataset = TensorDataset(torch.randn(40, 8), torch.randn(40, 1))
loader = DataLoader(dataset, batch_size=4, shuffle=True)
net = torch.nn.Linear(8, 1)
optimizer = torch.optim.SGD(net.parameters(), lr=0.05)
epoch_size = len(dataset) // 4
max_iter = 3 * epoch_size
for iteration in range(max_iter):
    if iteration % COUNT == 0:
        batch_iterator = iter(loader)
    images, targets = next(batch_iterator)
    loss = torch.nn.functional.mse_loss(net(images), targets)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
"""


def convert(source: str):
    return convert_source(source, "train.py", ConvertOptions())


def test_next_drawn_a_count_of_the_whole_data_from_a_loader_prepared_where_it_is_built_is_refused():
    """Survey 23c (YuNet face detector, libfacedetection): a DataLoader built each epoch,
    ``batch_iterator = iter(DataLoader(...))``, drawn ``math.ceil(len(dataset) / batch_size)``
    times. Converted, the loader was prepared inline; a replica on 2 gloo processes
    (accelerate launch and torchrun) raised StopIteration after 5 of its 10 steps per epoch."""
    result = convert(YUNET)
    assert result.refused is not None
    assert (
        "next(batch_iterator) at line 17 draws from an iterator of the prepared training DataLoader "
        "(`batch_iterator = iter(...)`, line 14) as many times as `for iteration in range(epoch_size):` (line 16) "
        "says, counted from the whole data's len(dataset) (line 13)"
    ) in result.refused, result.refused
    assert "StopIteration" in result.refused


def test_an_iterator_started_again_every_count_of_the_whole_data_is_refused():
    """ssd.pytorch's ``if iteration % epoch_size == 0: batch_iterator = iter(data_loader)`` with
    ``epoch_size = len(dataset) // batch_size``: each share runs out before it is started again."""
    result = convert(NAMED.replace("COUNT", "epoch_size"))
    assert result.refused is not None
    assert (
        "next(batch_iterator) at line 13 draws from an iterator of the prepared loader loader (`batch_iterator = "
        "iter(...)`, line 12) as many times as `for iteration in range(max_iter):` (line 10) says, counted from the "
        "whole data's len(dataset) (line 8)"
    ) in result.refused, result.refused


def test_an_iterator_started_again_every_count_of_the_whole_data_in_a_loop_of_fixed_length_is_refused():
    result = convert(NAMED.replace("COUNT", "epoch_size").replace("max_iter = 3 * epoch_size", "max_iter = 30"))
    assert result.refused is not None
    assert "counted from the whole data's len(dataset) (line 8)" in result.refused, result.refused


def test_an_iterator_started_again_every_len_of_the_prepared_loader_converts():
    result = convert(NAMED.replace("COUNT", "len(loader)"))
    assert result.refused is None, result.refused


def test_steps_counted_by_the_prepared_loader_s_length_convert():
    source = YUNET.replace(
        "        batch_iterator = iter(data.DataLoader(dataset, batch_size, shuffle=True))\n"
        "        # for each iteration in this epoch\n"
        "        for iteration in range(epoch_size):\n",
        "        loader = data.DataLoader(dataset, batch_size, shuffle=True)\n"
        "        batch_iterator = iter(loader)\n"
        "        for iteration in range(len(loader)):\n",
    )
    result = convert(source)
    assert result.refused is None, result.refused


def test_a_count_the_script_sets_over_a_stream_converts():
    """``for step in range(10): next(it)``: no length of the data in the count (an endless
    IterableDataset, survey 20c's LibriSpeech): left to convert."""
    result = convert(NAMED.replace("COUNT", "10").replace("max_iter = 3 * epoch_size", "max_iter = 30"))
    assert result.refused is None, result.refused


def test_an_iterator_started_again_on_stop_iteration_converts():
    source = YUNET.replace(
        "            images, targets = next(batch_iterator)\n",
        "            try:\n"
        "                images, targets = next(batch_iterator)\n"
        "            except StopIteration:\n"
        "                break\n",
    )
    result = convert(source)
    assert result.refused is None, result.refused
