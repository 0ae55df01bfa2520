"""A training loader whose batches are taken into a list once (survey 21f remind_ema:
``train_loader_list = list(train_loader)``, iterated every epoch). ``list(loader)`` was not
followed to the loader, so nothing was prepared and every process trained on all the data (only a
note said so). Prepared before the list is built it is exact (measured: the same batches, losses
and weights as the original on 1 process, a disjoint half each on 2); a list taken before the
place prepare() goes is refused, naming the call and its line (codemod/listed_loaders.py)."""

from __future__ import annotations

import pytest

from regcomp_lint.codemod import convert_source

SCRIPT = """\
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def train_model(epochs=3):
    ds = TensorDataset(torch.randn(40, 4), torch.randn(40, 1))
    train_loader = DataLoader(ds, batch_size=4, shuffle=True, drop_last=True)
EARLY    model = nn.Linear(4, 1).cuda()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
LATE    for epoch in range(epochs):
        for step, (x, y) in enumerate(batches):
            loss = nn.functional.mse_loss(model(x.cuda()), y.cuda())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    torch.save(model.state_dict(), "m.pt")


train_model()
"""


def _source(taken: str, early: bool) -> str:
    line = f"    batches = {taken}(train_loader)\n"
    return SCRIPT.replace("EARLY", line if early else "").replace("LATE", "" if early else line)


@pytest.mark.parametrize("taken", ["list", "tuple"])
def test_a_loader_listed_after_the_set_up_is_prepared_before_the_list(taken):
    result = convert_source(_source(taken, early=False), "train.py")
    assert result.refused is None, result.refused
    text = result.text
    prepare = "model, optimizer, train_loader = accelerator.prepare(model, optimizer, train_loader)\n"
    assert prepare in text
    assert text.index(prepare) < text.index(f"batches = {taken}(train_loader)")
    assert not any(n.startswith("no DataLoader feeds the training loop") for n in result.notes)
    note = next(n for n in result.notes if f"{taken}(train_loader)" in n)
    assert "line 11" in note and "its own share" in note and "accelerator.device" in note


@pytest.mark.parametrize("taken", ["list", "tuple", "iter"])
def test_a_loader_listed_before_prepare_is_refused_naming_the_call(taken):
    result = convert_source(_source(taken, early=True), "train.py")
    assert result.refused is not None
    assert f"{taken}(train_loader) at line 9" in result.refused
    assert "before prepare()" in result.refused and "train_loader" in result.refused


def test_a_peek_at_one_batch_before_prepare_converts():
    """survey 21f pusht_state_dp: ``batch = next(iter(dataloader))`` prints the shapes before the
    model is built; it keeps nothing the training iterates."""
    source = SCRIPT.replace("EARLY", "    batch = next(iter(train_loader))\n").replace("LATE", "")
    source = source.replace("enumerate(batches)", "enumerate(train_loader)")
    result = convert_source(source, "train.py")
    assert result.refused is None, result.refused
    assert "model, optimizer, train_loader = accelerator.prepare(model, optimizer, train_loader)\n" in result.text


def test_a_training_loop_over_an_inline_list_of_the_loader_prepares_it_first():
    """``for x, y in enumerate(list(train_loader))``: the list is taken anew each epoch, from the
    prepared loader (each process its share), so nothing is held across epochs: no refusal, no note."""
    source = SCRIPT.replace("EARLY", "").replace("LATE", "")
    source = source.replace("enumerate(batches)", "enumerate(list(train_loader))")
    result = convert_source(source, "train.py")
    assert result.refused is None, result.refused
    text = result.text
    prepare = "model, optimizer, train_loader = accelerator.prepare(model, optimizer, train_loader)\n"
    assert prepare in text and text.index(prepare) < text.index("enumerate(list(train_loader))")


def test_an_inline_list_of_the_loader_consumed_before_prepare_converts():
    """``for x, _ in list(train_loader): ...`` before the model is built (leftalone22's candidate):
    the loop runs out there, over the whole unsharded loader, in every process as in the one-process
    original, and keeps nothing the training iterates (that goes through the prepared loader): exact,
    so not refused as ``batches = list(train_loader)`` is (that list is what the training iterates)."""
    early = "    total = 0.0\n    for x, _ in list(train_loader):\n        total += x.sum().item()\n"
    source = SCRIPT.replace("EARLY", early).replace("LATE", "").replace("enumerate(batches)", "enumerate(train_loader)")
    result = convert_source(source, "train.py")
    assert result.refused is None, result.refused
    assert "model, optimizer, train_loader = accelerator.prepare(model, optimizer, train_loader)\n" in result.text
