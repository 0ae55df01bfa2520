"""A backward in a function of the script that nothing calls (the Kaggle NBME export's
``train_fn_adv``, survey 24d): the refusal names the function and says nothing calls it, so the
user knows deleting it lets the script convert."""

from regcomp_lint.codemod import convert_source

SCRIPT = """\
import torch
import torch.nn as nn


def train_fn(loader, model, optimizer):
    for x, y in loader:
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()


def train_fn_adv(loader, model, optimizer):
    for x, y in loader:
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()


def train_loop(fold):
    model = nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(8, 4), torch.randn(8, 1)))
    train_fn(loader, model, optimizer)


if __name__ == "__main__":
    for fold in range(2):
        train_loop(fold)
"""


def test_a_backward_in_a_function_nothing_calls_is_named_as_such():
    result = convert_source(SCRIPT, "train.py")
    assert result.refused is not None
    assert "the backward() at line 16 (in train_fn_adv(), which nothing in this file calls)" in result.refused, (
        result.refused
    )
