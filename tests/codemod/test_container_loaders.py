"""A training loop over ``dataloaders[phase]`` (the classic fine-tuning phase loop, survey 19b):
``prepare()`` would rebind ``train_loader`` but not the dict's entry, so every process would go on
training on all the data. It was converted that way, with a note blaming "the script's own code"
for the batches; now it is refused, naming the loop, the dict and the loader."""

from regcomp_lint.codemod import convert_source

SCRIPT = """\
import torch
from torch.utils.data import DataLoader, TensorDataset


def train_model(model, criterion, optimizer, dataloaders, num_epochs):
    for epoch in range(num_epochs):
        for phase in ["train", "val"]:
            model.train(phase == "train")
            for inputs, labels in {iterated}:
                optimizer.zero_grad()
                with torch.set_grad_enabled(phase == "train"):
                    loss = criterion(model(inputs), labels)
                    if phase == "train":
                        loss.backward()
                        optimizer.step()
    return model


if __name__ == "__main__":
    model = torch.nn.Linear(4, 1)
    train_loader = DataLoader(TensorDataset(torch.randn(64, 4), torch.randn(64, 1)), batch_size=8, shuffle=True)
    val_loader = DataLoader(TensorDataset(torch.randn(32, 4), torch.randn(32, 1)), batch_size=8)
    dataloaders = {{"train": train_loader, "val": val_loader}}
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model = train_model(model, torch.nn.MSELoss(), optimizer, dataloaders, num_epochs=2)
    torch.save(model.state_dict(), "m.pt")
"""


def test_a_training_loop_over_a_dict_of_loaders_is_refused_with_the_dict_and_loader_named():
    for iterated in ("dataloaders[phase]", "enumerate(dataloaders[phase])"):
        source = SCRIPT.format(iterated=iterated)
        if iterated.startswith("enumerate"):
            source = source.replace("for inputs, labels in enumerate(", "for i, (inputs, labels) in enumerate(")
        result = convert_source(source, "finetune.py")
        assert result.refused is not None, result.text
        assert "line 9" in result.refused and "dataloaders[phase]" in result.refused, result.refused
        assert "train_loader" in result.refused and "line 23" in result.refused, result.refused


def test_a_dict_of_values_that_are_no_loaders_converts():
    source = SCRIPT.format(iterated="dataloaders[phase]").replace(
        '{"train": train_loader, "val": val_loader}', '{"train": [(torch.randn(2, 4), torch.randn(2, 1))], "val": []}'
    )
    result = convert_source(source, "finetune.py")
    assert result.refused is None, result.refused
