"""torch.load(map_location=<device>) after the device became accelerator.device
(codemod/load_locations.py)."""

from __future__ import annotations

from regcomp_lint.codemod import convert_source

TRAINER = """\
import os
import torch
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


class Trainer:
    def __init__(self, model, loader, optimizer, snapshot_path, device):
        self.model = model.to(device)
        self.loader = loader
        self.optimizer = optimizer
        self.device = device
        self.snapshot_path = snapshot_path
        self.epochs_run = 0
        if os.path.exists(snapshot_path):
            self._load_snapshot(snapshot_path)
        self.model = DDP(self.model)

    def _load_snapshot(self, snapshot_path):
        LOAD
        self.model.load_state_dict(snapshot["MODEL_STATE"])
        self.epochs_run = snapshot["EPOCHS_RUN"]

    def train(self, epochs):
        for epoch in range(self.epochs_run, epochs):
            for x, y in self.loader:
                x, y = x.to(self.device), y.to(self.device)
                loss = nn.functional.mse_loss(self.model(x), y)
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()
            torch.save({"MODEL_STATE": self.model.module.state_dict(), "EPOCHS_RUN": epoch}, self.snapshot_path)


def main():
    torch.distributed.init_process_group(backend="gloo")
    device = torch.device("cpu")
    model = nn.Linear(4, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    data = torch.utils.data.TensorDataset(torch.randn(32, 4), torch.randn(32, 2))
    Trainer(model, torch.utils.data.DataLoader(data, batch_size=8), optimizer, "snap.pt", device).train(2)


if __name__ == "__main__":
    main()
"""


def _convert(load: str) -> str:
    result = convert_source(TRAINER.replace("LOAD", load), "train.py")
    assert result.refused is None, result.refused
    return result


def test_a_location_read_from_the_converted_device_loads_onto_the_cpu_on_a_cpu_process():
    """PyTorch's multinode tutorial: ``loc = str(self.device)``; converted, a CPU resume raised
    ``don't know how to restore data location ... (tagged with cpu:0)``."""
    result = _convert("loc = str(self.device)\n        snapshot = torch.load(snapshot_path, map_location=loc)")
    assert "        self.device = self.accelerator.device\n" in result.text
    assert (
        'snapshot = torch.load(snapshot_path, map_location=loc if self.accelerator.device.type != "cpu" else "cpu")'
        in result.text
    )
    assert any("torch.load(map_location=<device>)" in note for note in result.notes)


def test_the_device_itself_as_location_is_kept_on_accelerators_too():
    result = _convert("snapshot = torch.load(snapshot_path, self.device)")
    assert 'torch.load(snapshot_path, self.device if self.accelerator.device.type != "cpu" else "cpu")' in result.text


def test_a_location_the_script_fixed_itself_is_left_alone():
    result = _convert('snapshot = torch.load(snapshot_path, map_location="cpu")')
    assert 'snapshot = torch.load(snapshot_path, map_location="cpu")\n' in result.text
    assert not any("torch.load(map_location=<device>)" in note for note in result.notes)
