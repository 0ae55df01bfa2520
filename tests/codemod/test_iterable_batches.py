"""codemod/iterable_batches.py: a training DataLoader over the script's own IterableDataset that
yields whole batches (``batch_size=None``) is refused. accelerate's prepare() dispatches such a
loader's batches on several processes: the main process reads one batch per process and
concatenates them, which needs every value of a batch to be a tensor of one shape past the first
dimension. Survey 20c, llama_audio (LibriSpeech batches padded to their own length, with the
audio seconds and token count as Python numbers): the conversion trained alike on one process
(replica: losses and final weight sum -3.037991 equal) and failed at the first batch on two with
``TypeError: Can only concatenate tensors but got <class 'float'>``."""

from __future__ import annotations

from regcomp_lint.codemod import ConvertOptions, convert_source

STREAM = """import torch
from torch.utils.data import DataLoader, IterableDataset


class Batches(IterableDataset):
    def __init__(self, batch_size):
        self.batch_size = batch_size

    def __iter__(self):
        while True:
            n = int(torch.randint(4, 9, ()))
            yield torch.randn(self.batch_size, n), torch.randint(0, 2, (self.batch_size,)), 0.5 * n


model = torch.nn.Linear(8, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
ds = Batches(4)
loader = iter(DataLoader(ds, batch_size=None, num_workers=0))
for step in range(10):
    x, y, seconds = next(loader)
    loss = torch.nn.functional.cross_entropy(model(torch.nn.functional.pad(x, (0, 8 - x.shape[1]))), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
"""


def convert(text: str):
    return convert_source(text, "train.py", ConvertOptions())


def test_a_stream_of_whole_batches_is_refused_naming_the_loader_and_the_dataset():
    result = convert(STREAM)
    assert result.refused is not None, result.text
    assert "the training DataLoader at line 18 reads Batches, an IterableDataset (line 5) that yields whole " in (
        result.refused
    )
    assert "batch_size=None" in result.refused


def test_a_named_loader_of_such_a_dataset_in_a_for_loop_is_refused_too():
    text = STREAM.replace(
        "loader = iter(DataLoader(ds, batch_size=None, num_workers=0))",
        "loader = DataLoader(Batches(4), batch_size=None)",
    )
    text = text.replace("for step in range(10):\n    x, y, seconds = next(loader)", "for x, y, seconds in loader:")
    result = convert(text)
    assert result.refused is not None, result.text
    assert "the training DataLoader at line 18 reads Batches, an IterableDataset (line 5)" in result.refused


def test_an_iterable_dataset_of_single_items_batched_by_the_loader_still_converts():
    text = STREAM.replace("batch_size=None", "batch_size=4")
    result = convert(text)
    assert result.refused is None, result.refused
    assert "accelerator.prepare(DataLoader(ds, batch_size=4, num_workers=0))" in result.text


def test_a_map_style_dataset_with_batch_size_none_still_converts():
    text = STREAM.replace("(IterableDataset)", "(torch.utils.data.Dataset)")
    result = convert(text)
    assert result.refused is None, result.refused
