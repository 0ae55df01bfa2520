"""codemod/wrapped_access.py: the script's own unwrap of the compile it made, ``model._orig_mod``,
read after prepare() is the plain model, ``accelerator.unwrap_model(model, keep_torch_compile=False)``.
Before, it became ``accelerator.unwrap_model(unet, keep_torch_compile=False)._orig_mod``: the plain
model has no ``_orig_mod`` (survey 20c, bedrock_diff: six compiled models saved as
``unet._orig_mod.state_dict()``; the replica's conversion raised ``AttributeError: 'Linear' object
has no attribute '_orig_mod'`` at its first save, where the original saved ``weight``, ``bias``)."""

from __future__ import annotations

from regcomp_lint.codemod import ConvertOptions, convert_source

SAVES = """import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


def train(save_path, max_epochs=2):
    loader = DataLoader(TensorDataset(torch.randn(32, 6), torch.randn(32, 4)), batch_size=4)
    encoder = torch.compile(torch.nn.Linear(6, 8))
    unet = torch.nn.Linear(8, 4)
    unet = torch.compile(unet)
    optimizer = torch.optim.AdamW(list(encoder.parameters()) + list(unet.parameters()), lr=1e-2)
    for epoch in range(max_epochs):
        for x, y in loader:
            loss = F.mse_loss(unet(encoder(x)), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        torch.save({"unet": unet._orig_mod.state_dict(), "encoder": encoder._orig_mod.state_dict()}, save_path)


train("out.mdl")
"""


def convert(text: str):
    return convert_source(text, "train.py", ConvertOptions())


def test_the_scripts_own_compile_unwrap_is_the_unwrapped_model():
    result = convert(SAVES)
    assert result.refused is None, result.refused
    out = result.text
    assert "._orig_mod" not in out
    assert '"unet": accelerator.unwrap_model(unet, keep_torch_compile=False).state_dict()' in out
    assert '"encoder": accelerator.unwrap_model(encoder, keep_torch_compile=False).state_dict()' in out


def test_a_guarded_own_unwrap_is_the_unwrapped_model_too():
    text = SAVES.replace(
        '{"unet": unet._orig_mod.state_dict(), ',
        '{"unet": (unet._orig_mod if hasattr(unet, "_orig_mod") else unet).state_dict(), ',
    )
    result = convert(text)
    assert result.refused is None, result.refused
    assert '"unet": (accelerator.unwrap_model(unet, keep_torch_compile=False)).state_dict()' in result.text


TWO_CALLS_DOWN = """import argparse

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def get_raw_state_dict(model):
    raw = model._orig_mod if hasattr(model, "_orig_mod") else model
    return raw.state_dict()


def build_checkpoint(net, epoch):
    return {"net": get_raw_state_dict(net), "epoch": epoch}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--compile", action="store_true")
    args = parser.parse_args()
    loader = DataLoader(TensorDataset(torch.randn(64, 8), torch.randn(64, 1)), batch_size=8)
    net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
    if args.compile:
        net = torch.compile(net)
    optimizer = torch.optim.SGD(net.parameters(), lr=0.05)
    for epoch in range(2):
        for x, y in loader:
            loss = nn.functional.mse_loss(net(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        ckpt = build_checkpoint(net, epoch)
        torch.save(ckpt, "last.pt")


if __name__ == "__main__":
    main()
"""


def test_an_own_unwrap_two_calls_below_the_training_function_is_the_unwrapped_model():
    """A galaxy-diffusion trainer (survey 21e): ``build_checkpoint(unet, ...)`` calls
    ``get_raw_state_dict(unet)``, whose ``model._orig_mod if hasattr(model, "_orig_mod") else model``
    was left as it was: on 2 processes the prepared model is the DDP wrapper, with no ``_orig_mod``,
    and the checkpoint held ``module.0.weight`` keys that no longer load into the model (measured
    under accelerate launch and torchrun with 2 gloo processes; 1 process saved ``0.weight``)."""
    result = convert(TWO_CALLS_DOWN)
    assert result.refused is None, result.refused
    out = result.text
    assert "_orig_mod" not in out, out
    assert "raw = accelerator.unwrap_model(model, keep_torch_compile=False)" in out, out
