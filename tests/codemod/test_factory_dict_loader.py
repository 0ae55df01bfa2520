"""A training loader taken by key out of the dict another module's factory returns
(``loaders = get_dataloaders(cfg); train_loader = loaders["train"]``, survey 19c's Hydra VAE):
prepared as ``train_loader = get_dataloaders(cfg)`` and ``train_loader, val_loader = ...`` are,
so a DataLoader is sharded across processes. It was left whole with the note that the batches
"come from the script's own code" (they come from the factory)."""

from regcomp_lint.codemod import convert_source

SCRIPT = """\
import torch

from data import get_dataloaders


def main(cfg):
    torch.manual_seed(cfg.seed)
    loaders = get_dataloaders(cfg)
    train_loader = loaders[{key}]
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    for epoch in range(cfg.epochs):
        for xb, yb in train_loader:
            optimizer.zero_grad()
            loss = torch.nn.functional.mse_loss(model(xb), yb)
            loss.backward()
            optimizer.step()


if __name__ == "__main__":
    main(None)
"""


def test_a_loader_taken_by_key_from_another_modules_factory_is_prepared():
    for key in ('"train"', "0"):
        result = convert_source(SCRIPT.format(key=key), "train.py")
        assert result.refused is None, result.refused
        assert "model, optimizer, train_loader = accelerator.prepare(model, optimizer, train_loader)" in result.text, (
            result.text
        )
        assert any(
            n.startswith("train_loader (from get_dataloaders(), line 8) feeds the training loop") for n in result.notes
        ), result.notes
        assert not any("come from the script's own code" in n for n in result.notes), result.notes
