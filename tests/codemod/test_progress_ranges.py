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


BAR_OVER_UNKNOWN = """\
import torch
from tqdm import tqdm

from sr.dataset import get_sr_dataset


def train():
    train_dataloader = get_sr_dataset(image_size=64, dataset_path="train", batch_size=8)
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(3):
        train_pbar = tqdm(train_dataloader)
        for i, (x, y) in enumerate(train_pbar):
            loss = torch.nn.functional.mse_loss(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()


if __name__ == "__main__":
    train()
"""


def test_a_bar_rebuilt_each_epoch_over_a_loader_of_unknown_origin_prepares_the_loader():
    """Survey 22c's IDDM trainer: ``train_pbar = tqdm(train_dataloader)`` in each epoch, over
    ``train_dataloader = get_sr_dataset(...)`` of a module not beside the script. The bar was taken
    for the loader and the script refused as one whose objects are "built anew in each pass of
    the loop"; the loader the bar wraps is what prepare() shards, the bar then iterates it."""
    result = convert_source(BAR_OVER_UNKNOWN, "train.py")
    assert result.refused is None, result.refused
    assert "model, optimizer, train_dataloader = accelerator.prepare(" in result.text, result.text
    assert "        train_pbar = tqdm(train_dataloader)\n" in result.text
