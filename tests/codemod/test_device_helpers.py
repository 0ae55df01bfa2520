"""codemod/device_helpers.py: a device chosen through a local helper that reads the script's
device setting is named in a note (survey 19c hydra_vae's ``device = get_device(cfg)``)."""

from __future__ import annotations

from regcomp_lint.codemod import convert_source

SCRIPT = """\
import torch
from torch.utils.data import DataLoader, TensorDataset


def get_device(cfg):
    if cfg.device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(cfg.device)


def main(cfg):
    device = CHOICE
    model = torch.nn.Linear(4, 1).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    loader = DataLoader(TensorDataset(torch.randn(32, 4), torch.randn(32, 1)), batch_size=4)
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        loss = torch.nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
"""


def test_a_device_chosen_by_a_helper_reading_the_setting_is_named():
    """Before, ``device = get_device(cfg)`` became ``accelerator.device`` without a word: a
    ``device: cpu`` setting was dropped (the model went to the GPU where there is one)."""
    result = convert_source(SCRIPT.replace("CHOICE", "get_device(cfg)"), "train.py")
    assert result.refused is None, result.refused
    assert "    device = accelerator.device\n" in result.text
    note = next((n for n in result.notes if "get_device(cfg) at line 12" in n), None)
    assert note is not None, result.notes
    assert "cfg.device" in note and "cpu=True" in note, note


def test_a_helper_that_reads_no_setting_is_not_named():
    text = SCRIPT.replace("CHOICE", "pick()").replace(
        "def main(cfg):",
        'def pick():\n    return torch.device("cuda" if torch.cuda.is_available() else "cpu")\n\n\ndef main(cfg):',
    )
    result = convert_source(text, "train.py")
    assert result.refused is None, result.refused
    assert not any("pick()" in n for n in result.notes), result.notes


FLAG_BY_NAME = """\
import argparse

import torch
from torch.utils.data import DataLoader, TensorDataset

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = parser.parse_args()
    DEVICE = args.device
    model = torch.nn.Linear(4, 1).to(DEVICE)
    loader = DataLoader(TensorDataset(torch.randn(32, 4), torch.randn(32, 1)), batch_size=4)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
"""


def test_a_device_flag_read_through_a_name_is_followed():
    """survey 19b llm_tools_lora: ``DEVICE = args.device`` then ``model.to(DEVICE)``; the placement
    became ``accelerator.device`` and ``--device cpu`` was dropped (``x.to(args.device)`` read
    inline gives the Accelerator ``cpu=str(args.device) == "cpu"``; through the name it did not)."""
    result = convert_source(FLAG_BY_NAME, "train.py")
    assert result.refused is None, result.refused
    assert ".to(accelerator.device)" in result.text
    assert 'cpu=str(args.device) == "cpu"' in result.text, result.text


MODEL_DEVICE = """\
import torch
from torch.utils.data import DataLoader, TensorDataset


def sample(model):
    device = next(model.parameters()).device
    return model(torch.randn(2, 4).to(device))


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = torch.nn.Linear(4, 1).to(device)
    sample(model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    for x, y in DataLoader(TensorDataset(torch.randn(32, 4), torch.randn(32, 1)), batch_size=4):
        loss = torch.nn.functional.mse_loss(model(x.to(device)), y.to(device))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    sample(model)
"""


def test_the_device_a_model_is_on_is_read_from_the_model():
    """survey 19a minimind_pt: ``device = next(model.parameters()).device`` in a sampling helper
    became ``accelerator.device``; called before prepare() with the model elsewhere (``--device
    cpu`` on a GPU machine), the prompt went to the GPU and the CPU model failed. A model's own
    device follows the model (device_choice's rule), never the accelerator."""
    result = convert_source(MODEL_DEVICE, "train.py")
    assert result.refused is None, result.refused
    assert "    device = next(model.parameters()).device\n" in result.text, result.text
    assert "    device = accelerator.device\n" in result.text
