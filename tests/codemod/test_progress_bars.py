"""codemod/progress_bars.py: a progress bar that starts an iterator of the loader it wraps when it is
built (``tqdm.auto.tqdm``, whose ``tqdm.asyncio`` base calls ``iter(loader)`` in ``__init__``). On a
plain DataLoader that iterator draws its base seed from torch's global generator; the prepared
loader's ``__iter__`` is a generator and draws nothing there. gte_lora's replica (1 process) then
shuffled differently from step 1 (losses 0.692805 vs 0.694106); with ``from tqdm import tqdm`` both
are identical. The conversion says so, naming the line."""

from __future__ import annotations

from regcomp_lint.codemod import convert_source

SCRIPT = """\
import torch
{bar_import}
from torch.utils.data import DataLoader, TensorDataset

model = torch.nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(TensorDataset(torch.randn(64, 4), torch.randn(64, 1)), batch_size=8, shuffle=True)
for epoch in range(2):
    for x, y in {bar}(loader, desc="train"):
        loss = torch.nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
"""


def _notes(bar_import: str, bar: str) -> list[str]:
    result = convert_source(SCRIPT.format(bar_import=bar_import, bar=bar), "train.py")
    assert result.refused is None, result.refused
    return [n for n in result.notes if "draws" in n and "global generator" in n]


def test_a_tqdm_auto_bar_over_a_prepared_loader_is_noted_with_its_line():
    for bar_import, bar in (
        ("from tqdm.auto import tqdm", "tqdm"),
        ("import tqdm.auto", "tqdm.auto.tqdm"),
        ("from tqdm.asyncio import tqdm_asyncio", "tqdm_asyncio"),
    ):
        notes = _notes(bar_import, bar)
        assert notes == [
            f"{bar}(loader, ...) at line 9 starts an iterator of the plain DataLoader when it is built (tqdm.asyncio "
            "calls iter() in its __init__), which draws a seed from torch's global generator; the prepared loader "
            "draws nothing there, so the converted script's shuffle order and later random draws (dropout, "
            "augmentation) differ from the original's from the first batch on; with `from tqdm import tqdm` the two "
            "draw alike"
        ], (bar, notes)


def test_a_plain_tqdm_bar_is_not_noted():
    assert _notes("from tqdm import tqdm", "tqdm") == []
