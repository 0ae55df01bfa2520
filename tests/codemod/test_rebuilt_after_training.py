"""A model built again after training, in a loop of its own, to load the saved weights.

Survey 25b: a k-fold audio classifier (SAM optimizer, EMA state) trains inside ``for fold in
folds:`` and then, for its ensemble, loops over the folds again building ``model = Net(...)``,
loading each fold's best checkpoint and predicting. That second binding was counted as an
object training uses (it sits in a loop), so the script was refused for a false reason: "a call
into the training code (train_one_epoch_sam) runs at line 514, before the last object to prepare
(model, line 568) is created", naming the inference model. A binding after the last training
step is a new, unprepared model unless a loop around it also trains (then the next pass trains
it)."""

from regcomp_lint.codemod import convert_source

HEAD = """\
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        return self.fc(x)


def train_one_epoch(model, loader, optimizer):
    model.train()
    for x, y in loader:
        loss = nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    ds = TensorDataset(torch.randn(32, 4), torch.randint(0, 2, (32,)))
    loader = DataLoader(ds, batch_size=8, shuffle=True)
"""

TRAIN_ONCE = """\
    model = Net()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        train_one_epoch(model, loader, optimizer)
    torch.save(model.state_dict(), "best.pt")
"""

PREDICT_IN_A_LOOP = """\

    for fold in [0, 1]:
        model = Net()
        model.load_state_dict(torch.load("best.pt"))
        model.eval()
        with torch.no_grad():
            print(model(torch.randn(2, 4)))
"""

PER_FOLD = """\
    for fold in [0, 1]:
        model = Net()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for epoch in range(2):
            train_one_epoch(model, loader, optimizer)
        torch.save(model.state_dict(), f"best{fold}.pt")
"""

REBUILT_EACH_EPOCH = """\
    model = Net()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        train_one_epoch(model, loader, optimizer)
        model = Net()
"""


def test_an_inference_model_built_in_a_later_loop_is_not_prepared():
    result = convert_source(HEAD + TRAIN_ONCE + PREDICT_IN_A_LOOP, "t.py")
    assert result.refused is None, result.refused
    assert "model, optimizer, loader = accelerator.prepare(model, optimizer, loader)" in result.text, result.text
    # the rebuilt model loads the file the main process wrote, as a plain model
    assert "    accelerator.wait_for_everyone()\n    for fold in [0, 1]:\n        model = Net()\n" in result.text
    assert '        model.load_state_dict(torch.load("best.pt"))\n' in result.text, result.text


def test_folds_then_an_inference_loop_name_the_fold_loop():
    result = convert_source(HEAD + PER_FOLD + PREDICT_IN_A_LOOP, "t.py")
    assert result.refused is not None, result.text
    assert "built anew in each pass of the loop at line 27" in result.refused, result.refused
    assert "line 35" not in result.refused, result.refused


def test_a_model_built_again_in_the_training_loop_still_counts():
    result = convert_source(HEAD + REBUILT_EACH_EPOCH, "t.py")
    # the next epoch trains the new model: still one of the objects training uses
    assert result.refused is not None, result.text
    assert "model" in result.refused, result.refused
