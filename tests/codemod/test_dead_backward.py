"""A backward in a function of the script that nothing calls (the Kaggle NBME export's
``train_fn_adv``, survey 24d): it never runs, so like a spawn in a helper nothing calls (the DDP
tutorial's ``run_demo``) it is dead code the conversion leaves as it is, with a note naming it; it
was refused ("which nothing in this file calls") although the live trainer converts."""

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


def test_a_backward_in_a_function_nothing_calls_is_left_alone_and_named():
    result = convert_source(SCRIPT, "train.py")
    assert result.refused is None, result.refused
    text = result.text
    dead = text[text.index("def train_fn_adv(") : text.index("def train_loop(")]
    assert dead == SCRIPT[SCRIPT.index("def train_fn_adv(") : SCRIPT.index("def train_loop(")], dead
    live = text[text.index("def train_fn(") : text.index("def train_fn_adv(")]
    assert "accelerator.backward(loss)" in live, live
    assert any(
        "train_fn_adv() at line 13 is called nowhere in this file" in note and "backward() at line 16" in note
        for note in result.notes
    ), result.notes


def test_a_function_passed_by_name_is_not_dead():
    script = SCRIPT.replace(
        "    train_fn(loader, model, optimizer)\n",
        "    (train_fn_adv if fold else train_fn)(loader, model, optimizer)\n",
    )
    result = convert_source(script, "train.py")
    assert result.refused is None or "nothing in this file calls" not in result.refused, result.refused
    assert not any("called nowhere" in note for note in result.notes), result.notes


SCALED_DEAD = SCRIPT.replace(
    "def train_fn_adv(loader, model, optimizer):\n",
    "def train_fn_adv(loader, model, optimizer):\n    scaler = torch.cuda.amp.GradScaler(enabled=False)\n",
)


def test_a_grad_scaler_in_a_function_nothing_calls_does_not_set_mixed_precision():
    """nbme_fold (leftalone25): the dead ``train_fn_adv`` builds a GradScaler it never uses; it gave
    the Accelerator ``mixed_precision="no"`` and a note about "its own GradScaler (line 14)", dead code."""
    result = convert_source(SCALED_DEAD, "train.py")
    assert result.refused is None, result.refused
    assert "mixed_precision" not in result.text, result.text
    assert not any("GradScaler" in note for note in result.notes), result.notes


def test_a_grad_scaler_in_the_live_trainer_still_sets_mixed_precision():
    script = SCALED_DEAD.replace(
        "def train_fn(loader, model, optimizer):\n",
        "def train_fn(loader, model, optimizer):\n    scaler = torch.cuda.amp.GradScaler(enabled=False)\n",
    )
    result = convert_source(script, "train.py")
    assert 'mixed_precision="no"' in result.text, result.text
    assert any("own GradScaler (line 6)" in note for note in result.notes), result.notes
