"""A training loop that turns its batches into NumPy arrays before moving them itself (survey
19b, a SimCLR pre-training script: ``for (batch,) in loader: x = batch.numpy()``, augmented in
NumPy, then ``torch.tensor(x1).to(device)``). A prepared loader places each batch on
``accelerator.device``, where ``.numpy()`` of a CUDA tensor raises; so that loader is prepared
with ``device_placement=False`` (still sharded), and its batches stay on the CPU as before."""

from regcomp_lint.codemod import convert_source

SCRIPT = """\
import numpy as np
import torch
from torch.utils.data import DataLoader, TensorDataset


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    loader = DataLoader(TensorDataset(torch.randn(16, 4)), batch_size=4, shuffle=True)
    model = torch.nn.Linear(4, 2).to(device)
    optim = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(2):
        for {target} in loader:
            x = {host}
            x1 = torch.tensor(x + np.random.normal(0, 1e-3, size=x.shape), dtype=torch.float32).to(device)
            loss = model(x1).pow(2).mean()
            optim.zero_grad()
            loss.backward()
            optim.step()


if __name__ == "__main__":
    main()
"""


def test_a_loader_whose_batches_become_numpy_arrays_is_prepared_without_placement():
    for target, host in (("(batch,)", "batch.numpy()"), ("batch", "batch[0].numpy()")):
        result = convert_source(SCRIPT.format(target=target, host=host), "simclr.py")
        assert result.refused is None, result.refused
        flat = "".join(result.text.split())
        assert "accelerator.prepare(model,optim,loader,device_placement=[True,True,False])" in flat, result.text
        assert any("device_placement" in n and "numpy" in n for n in result.notes), result.notes


def test_a_loader_whose_batches_are_moved_as_tensors_keeps_its_placement():
    result = convert_source(SCRIPT.format(target="(batch,)", host="batch.cpu().clone()"), "simclr.py")
    assert result.refused is None, result.refused
    assert "accelerator.prepare(model, optim, loader)" in result.text, result.text
