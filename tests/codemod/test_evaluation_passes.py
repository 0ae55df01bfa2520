"""A loop outside training over the prepared training loader is named in a note
(codemod/evaluation_passes.py): on several processes it measures one shard."""

from __future__ import annotations

from regcomp_lint.codemod import convert_source

SCRIPT = """\
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

device = "cuda" if torch.cuda.is_available() else "cpu"
data = TensorDataset(torch.randn(64, 4), torch.randint(0, 2, (64,)))
train_loader = DataLoader(data, batch_size=8, shuffle=True)
model = nn.Linear(4, 2).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

for epoch in range(3):
    model.train()
    for x, y in train_loader:
        x, y = x.to(device), y.to(device)
        loss = nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.eval()
    with torch.no_grad():
        correct = 0
        for x, y in train_loader:
            x, y = x.to(device), y.to(device)
            MEASURE
    print(f"epoch {epoch}: train accuracy {correct / len(data):.3f}")
"""


def test_a_training_accuracy_pass_over_the_prepared_loader_is_named():
    result = convert_source(SCRIPT.replace("MEASURE", "correct += (model(x).argmax(1) == y).sum().item()"), "train.py")
    assert result.refused is None, result.refused
    assert "prepared: model, optimizer, train_loader" in result.notes
    assert any(
        note.startswith("train_loader is prepared for training, so the loop over it at line 22, which does not train")
        for note in result.notes
    ), result.notes


def test_a_pass_that_gathers_its_values_is_not_named():
    measure = "correct += accelerator.gather_for_metrics((model(x).argmax(1) == y).sum()).item()"
    result = convert_source(
        SCRIPT.replace("MEASURE", measure).replace(
            "import torch\n", "import torch\nfrom accelerate import Accelerator\naccelerator = Accelerator()\n", 1
        ),
        "train.py",
    )
    assert not any("which does not train" in note for note in result.notes), result.notes


GENERATOR_SCRIPT = """\
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def infinite(loader):
    while True:
        for batch in loader:
            yield batch


def main():
    device = "cuda" if torch.cuda.is_available() else "cpu"
    loader = DataLoader(TensorDataset(torch.randn(64, 4), torch.randn(64, 1)), batch_size=8, shuffle=True)
    model = nn.Linear(4, 1).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    batches = infinite(loader)
    for step in range(20):
        x, y = next(batches)
        loss = nn.functional.mse_loss(model(x.to(device)), y.to(device))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    main()
"""


def test_a_generator_that_yields_the_training_batches_is_not_named():
    # ``infinite(loader)`` hands the batches on to the training loop: its loop measures nothing
    result = convert_source(GENERATOR_SCRIPT, "train.py")
    assert result.refused is None, result.refused
    assert "prepared: model, optimizer, loader" in result.notes
    assert not any("which does not train" in note for note in result.notes), result.notes


def test_a_measuring_loop_beside_a_yield_elsewhere_is_still_named():
    # a yield in another function does not excuse the accuracy pass of the original script
    script = SCRIPT.replace("MEASURE", "correct += (model(x).argmax(1) == y).sum().item()") + (
        "\n\ndef unused(items):\n    for item in items:\n        yield item\n"
    )
    result = convert_source(script, "train.py")
    assert any("which does not train" in note for note in result.notes), result.notes


SWA = """\
import torch
import torch.nn as nn
from torch.optim.swa_utils import AveragedModel, SWALR
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def train():
    data = TensorDataset(torch.randn(64, 4), torch.randint(0, 2, (64,)))
    train_loader = DataLoader(data, batch_size=8, shuffle=True)
    model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Linear(8, 2)).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    swa_model = AveragedModel(model)
    swa_scheduler = SWALR(optimizer, swa_lr=5e-5)
    for epoch in range(4):
        model.train()
        for x, y in train_loader:
            x, y = x.to(device), y.to(device)
            loss = nn.functional.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        swa_model.update_parameters(model)
        swa_scheduler.step()
    UPDATE_BN
    torch.save(swa_model.module.state_dict(), "swa.pth")


if __name__ == "__main__":
    train()
"""


def test_an_swa_batchnorm_update_over_the_prepared_loader_is_named():
    """The survey's SWA facial-expression script: ``update_bn(train_loader, swa_model)`` after
    training recomputed the BatchNorm statistics over one process's shard (the saved SWA model
    carried rank 0's half), with no word of it."""
    for call in (
        "torch.optim.swa_utils.update_bn(train_loader, swa_model, device=device)",
        "from torch.optim.swa_utils import update_bn\n    update_bn(train_loader, swa_model)",
    ):
        result = convert_source(SWA.replace("UPDATE_BN", call), "train.py")
        assert result.refused is None, result.refused
        assert "prepared: model, optimizer, train_loader" in result.notes
        assert any(
            note.startswith(
                f"update_bn() at line {26 + call.count(chr(10))} recomputes swa_model's BatchNorm statistics over "
                "train_loader"
            )
            for note in result.notes
        ), result.notes
