"""A training loop that iterates its DataLoader under another name: ``with tqdm(loader) as
tepoch: for batch in tepoch`` (survey 19b, a LoRA fine-tune's ``train()``), or the phase loop
``for phase, loader in zip(["train", "val"], [train_loader, val_loader])`` /
``for loader in [train_loader, val_loader]``. The training loader is prepared, so each process
takes its share; it was left whole ("not iterated by the training loop"), every process
iterating all of its batches, with the per-step scheduler kept unprepared to match. Under
``if phase == "train":`` the loader paired with another phase is evaluation and stays whole."""

from regcomp_lint.codemod import convert_source

IN_FUNCTION = """\
import torch
from torch.utils.data import DataLoader, TensorDataset
from tqdm import tqdm


def train(model, train_loader, val_loader, optimizer, epochs):
    for epoch in range(epochs):
        {header}
            model.train(phase == "train")
            with tqdm(loader, unit="batch") as tepoch:
                for x, y in tepoch:
                    with torch.set_grad_enabled(phase == "train"):
                        loss = torch.nn.functional.mse_loss(model(x), y)
                        if phase == "train":
                            optimizer.zero_grad()
                            loss.backward()
                            optimizer.step()


if __name__ == "__main__":
    model = torch.nn.Linear(4, 1)
    train_loader = DataLoader(TensorDataset(torch.randn(8, 4), torch.randn(8, 1)), batch_size=2, shuffle=True)
    val_loader = DataLoader(TensorDataset(torch.randn(4, 4), torch.randn(4, 1)), batch_size=2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    train(model, train_loader, val_loader, optimizer, 2)
"""

HEADERS = (
    'for phase, loader in zip(["train", "val"], [train_loader, val_loader]):',
    "for phase, loader in zip(('train', 'val'), (train_loader, val_loader)):",
)

WITH_ONLY = """\
import torch
from torch.utils.data import DataLoader, TensorDataset
from tqdm import tqdm


def train(model, train_loader, optimizer, epochs):
    for epoch in range(epochs):
        with tqdm(train_loader, unit="batch") as tepoch:
            for x, y in tepoch:
                optimizer.zero_grad()
                torch.nn.functional.mse_loss(model(x), y).backward()
                optimizer.step()


if __name__ == "__main__":
    model = torch.nn.Linear(4, 1)
    train_loader = DataLoader(TensorDataset(torch.randn(8, 4), torch.randn(8, 1)), batch_size=2, shuffle=True)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    train(model, train_loader, optimizer, 2)
"""

MODULE_LEVEL = """\
import torch
from torch.utils.data import DataLoader, TensorDataset

model = torch.nn.Linear(4, 1)
train_loader = DataLoader(TensorDataset(torch.randn(8, 4), torch.randn(8, 1)), batch_size=2, shuffle=True)
val_loader = DataLoader(TensorDataset(torch.randn(4, 4), torch.randn(4, 1)), batch_size=2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    {header}
        model.train(phase == "train")
        for x, y in loader:
            with torch.set_grad_enabled(phase == "train"):
                loss = torch.nn.functional.mse_loss(model(x), y)
                if phase == "train":
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()
"""


def _prepared(text: str) -> str:
    return text.split("accelerator.prepare(")[1].split(")")[0]


def _converted(source: str):
    result = convert_source(source, "phases.py")
    assert result.refused is None, result.refused
    assert not any("train_loader is not iterated by the training loop" in n for n in result.notes), result.notes
    return result


def test_a_loader_iterated_through_with_tqdm_as_is_prepared():
    result = _converted(WITH_ONLY)
    assert "prepared: model, optimizer, train_loader" in result.notes, result.notes


def test_a_loader_of_the_phase_loop_handed_to_the_training_function_is_prepared():
    for header in HEADERS:
        result = _converted(IN_FUNCTION.format(header=header))
        assert "train_loader" in _prepared(result.text), result.text
        assert "val_loader" not in _prepared(result.text), result.text


def test_a_loader_of_the_phase_loop_at_module_level_is_prepared():
    for header in (*HEADERS, "for phase, loader in [('train', train_loader), ('val', val_loader)]:"):
        result = _converted(MODULE_LEVEL.format(header=header))
        assert "train_loader" in _prepared(result.text), result.text
        assert "val_loader" not in _prepared(result.text), result.text


def test_every_loader_of_a_loop_that_trains_on_each_is_prepared():
    source = MODULE_LEVEL.format(header="for loader in [train_loader, val_loader]:").replace(
        'model.train(phase == "train")', "model.train()"
    )
    source = source.replace('if phase == "train":', "if True:").replace(
        'set_grad_enabled(phase == "train")', "enable_grad()"
    )
    result = _converted(source)
    assert "train_loader" in _prepared(result.text) and "val_loader" in _prepared(result.text), result.text


def test_a_with_block_over_something_else_is_no_loader():
    source = WITH_ONLY.replace('with tqdm(train_loader, unit="batch") as tepoch:', "with open('x') as tepoch:")
    result = convert_source(source, "phases.py")
    assert result.refused is None, result.refused
    assert "train_loader" not in _prepared(result.text), result.text


DICT_DISPLAY = 'for phase in ["train", "val"]:\n{indent}loader = {{"train": train_loader, "val": val_loader}}[phase]'


def test_a_loader_taken_from_a_dict_display_by_phase_is_prepared():
    """``loader = {"train": a, "val": b}[phase]`` (survey 19b, left alone): the display is built
    at each pass, after prepare(), so it holds the prepared loader; it was left whole ("not
    iterated by the training loop"), every process training on all the data."""
    for source in (
        IN_FUNCTION.format(header=DICT_DISPLAY.format(indent=" " * 12)),
        MODULE_LEVEL.format(header=DICT_DISPLAY.format(indent=" " * 8)),
    ):
        result = _converted(source)
        assert "train_loader" in _prepared(result.text), result.text
        assert "val_loader" not in _prepared(result.text), result.text
