"""An epoch progress bar over a range (``trange``) is not a batch source (codemod/plain.py,
knowledge.training_libraries.PROGRESS_RANGES).

graph2text's trainer iterates ``epoch_bar = trange(1, epochs + 1)`` in the loop that calls its
training step: the conversion handed the bar to ``prepare()`` as a possible loader ("feeds the
training loop: prepared too"), which gives it back unchanged but says the wrong thing."""

from regcomp_lint.codemod import convert_source

SCRIPT = """\
import torch
from torch.utils.data import DataLoader, TensorDataset
from tqdm import trange


def train_one_epoch(model, loader, optimizer):
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return loss.item()


def main():
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(TensorDataset(torch.randn(32, 4), torch.randn(32, 1)), batch_size=8)
    epoch_bar = trange(1, 4, desc="Epoch")
    for epoch in epoch_bar:
        loss = train_one_epoch(model, loader, optimizer)
        epoch_bar.set_postfix(loss=loss)


if __name__ == "__main__":
    main()
"""


def test_a_trange_epoch_bar_is_not_prepared_as_a_loader():
    result = convert_source(SCRIPT, "train.py")
    assert result.refused is None, result.refused
    assert "model, optimizer, loader = accelerator.prepare(model, optimizer, loader)" in result.text
    assert not any("epoch_bar" in note for note in result.notes), result.notes


def test_the_same_through_tqdm_of_a_range():
    text = SCRIPT.replace("from tqdm import trange", "from tqdm import tqdm").replace(
        'trange(1, 4, desc="Epoch")', 'tqdm(range(1, 4), desc="Epoch")'
    )
    result = convert_source(text, "train.py")
    assert result.refused is None, result.refused
    assert "model, optimizer, loader = accelerator.prepare(model, optimizer, loader)" in result.text
