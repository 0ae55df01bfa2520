"""A name handed to ``range(...)`` is an integer, never a loader (survey 19a, DSDN's trainer:
``initial_epoch = find_checkpoint(savedir)`` then ``for epoch in range(initial_epoch, nepoch)``).
It was taken for a loader of unknown origin the training loop iterates, and handed to
``accelerator.prepare(..., initial_epoch)`` with the note "feeds the training loop": prepare()
hands an int back unchanged, but no int belongs there (issue 12)."""

from regcomp_lint.codemod import convert_source

SCRIPT = """\
import glob
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def find_checkpoint(savedir):
    return len(glob.glob(savedir + "/model_*.pth"))


def main():
    loader = DataLoader(TensorDataset(torch.randn(8, 4)), batch_size=2)
    model = nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    initial_epoch = find_checkpoint("model")
    for epoch in range(initial_epoch, 10):
        for (x,) in loader:
            loss = model(x).sum()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()


if __name__ == "__main__":
    main()
"""


def test_a_range_bound_is_not_prepared():
    result = convert_source(SCRIPT, "train.py")
    assert result.refused is None, result.refused
    assert "model, optimizer, loader = accelerator.prepare(model, optimizer, loader)" in result.text, result.text
    assert not any("initial_epoch" in note for note in result.notes), result.notes


def test_a_loader_inside_range_len_is_still_seen():
    script = SCRIPT.replace(
        "        for (x,) in loader:\n",
        "        batches = iter(loader)\n        for _ in range(len(loader)):\n            (x,) = next(batches)\n",
    )
    result = convert_source(script, "train.py")
    assert result.refused is None, result.refused
    assert "accelerator.prepare(model, optimizer, loader)" in result.text, result.text


#: survey 21d, a skip-gram trainer: `order = rng.permutation(n)` drawn each epoch, batches sliced
#: out of it over `range(0, len(order), batch_size)`
SLICED = """\
import numpy as np
import torch
import torch.nn as nn


def main():
    data = torch.randn(32, 4)
    model = nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    rng = np.random.default_rng(0)
    for epoch in range(3):
        order = rng.permutation(len(data))
        for begin in range(0, len(order), 8):
            selected = order[begin : begin + 8]
            loss = model(data[selected]).sum()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()


if __name__ == "__main__":
    main()
"""


def test_an_index_array_sliced_into_batches_is_not_a_loader():
    """``order`` is sliced (``order[begin : begin + 8]``): an array of indices, not a loader (a
    DataLoader cannot be sliced). It used to be taken for a loader of unknown origin reached
    through ``range(0, len(order), 8)``; built in each epoch, that refused the script with "order
    is built anew in each pass of the loop ... and trained there". The script's own batches are
    left as they are, with the note that says so."""
    result = convert_source(SLICED, "train.py")
    assert result.refused is None, result.refused
    assert "model, optimizer = accelerator.prepare(model, optimizer)\n" in result.text, result.text
    assert not any(note.startswith("order ") for note in result.notes), result.notes
    assert any(note.startswith("no DataLoader feeds the training loop") for note in result.notes), result.notes


def test_an_index_array_built_once_is_not_prepared_either():
    script = SLICED.replace(
        "    for epoch in range(3):\n        order = rng.permutation(len(data))\n",
        "    order = rng.permutation(len(data))\n    for epoch in range(3):\n",
    )
    result = convert_source(script, "train.py")
    assert result.refused is None, result.refused
    assert "model, optimizer = accelerator.prepare(model, optimizer)\n" in result.text, result.text
