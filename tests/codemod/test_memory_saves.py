"""A ``torch.save`` into memory (``buf = io.BytesIO(); torch.save(model.state_dict(), buf)``, to
broadcast or hash the weights, or a per-process temporary file) stays ``torch.save``: every
process must fill its own buffer. ``accelerator.save`` writes on the main process only, so under
2 processes rank 1's buffer stayed empty (0 bytes). The state is still read from the unwrapped
model, so its keys carry no ``module.``/``_orig_mod.`` prefix. Saves to a path still become
``accelerator.save``."""

from __future__ import annotations

import pytest

from regcomp_lint.codemod import convert_source

SCRIPT = """\
import hashlib
import io
import os
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("gloo")
    rank = int(os.environ["RANK"])
    torch.manual_seed(0)
    model = DDP(nn.Linear(8, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(16, 8), torch.randn(16, 1)
    for step in range(4):
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
{save}    torch.save(model.module.state_dict(), "final.pt")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
"""

SAVES = {
    "BytesIO name": (
        "    buf = io.BytesIO()\n"
        "    torch.save(model.module.state_dict(), buf)\n"
        "    digest = hashlib.sha256(buf.getvalue()).hexdigest()\n",
        "    torch.save(accelerator.unwrap_model(model, keep_torch_compile=False).state_dict(), buf)\n",
    ),
    "BytesIO with": (
        "    with io.BytesIO() as buf:\n"
        "        torch.save(model.module.state_dict(), buf)\n"
        "        digest = hashlib.sha256(buf.getvalue()).hexdigest()\n",
        "        torch.save(accelerator.unwrap_model(model, keep_torch_compile=False).state_dict(), buf)\n",
    ),
    "BytesIO keyword": (
        "    buf = io.BytesIO()\n"
        "    torch.save(obj=model.module.state_dict(), f=buf)\n"
        "    objs = [buf.getvalue()]\n"
        "    dist.broadcast_object_list(objs, src=0)\n",
        "    torch.save(obj=accelerator.unwrap_model(model, keep_torch_compile=False).state_dict(), f=buf)\n",
    ),
    "state dict name": (
        "    state = {'model': model.module.state_dict(), 'step': 4}\n"
        "    buffer = io.BytesIO()\n"
        "    torch.save(state, buffer)\n"
        "    size = len(buffer.getvalue())\n",
        "    torch.save(state, buffer)\n",
    ),
    "temporary file": (
        "    with tempfile.TemporaryFile() as tmp:\n"
        "        torch.save(model.module.state_dict(), tmp)\n"
        "        size = tmp.tell()\n",
        "        torch.save(accelerator.unwrap_model(model, keep_torch_compile=False).state_dict(), tmp)\n",
    ),
    "whole model": (
        "    buf = io.BytesIO()\n    torch.save(model.module, buf)\n    size = len(buf.getvalue())\n",
        "    torch.save(accelerator.unwrap_model(model, keep_torch_compile=False), buf)\n",
    ),
}


@pytest.mark.parametrize("style", sorted(SAVES))
def test_a_save_into_memory_stays_torch_save_of_the_unwrapped_state(style):
    save, expected = SAVES[style]
    result = convert_source(SCRIPT.format(save=save), "train.py")
    assert result.refused is None, result.refused
    assert "model, optimizer = accelerator.prepare(model, optimizer)\n" in result.text, result.text
    assert expected in result.text, result.text
    # the save to a path is still written once, by the main process
    assert (
        'accelerator.save(accelerator.unwrap_model(model, keep_torch_compile=False).state_dict(), "final.pt")\n'
        in result.text
    ), result.text
    assert result.text.count("accelerator.save(") == 1, result.text
    assert any("into memory" in n and "every process" in n for n in result.notes), result.notes


def test_a_buffer_rebound_to_a_path_is_not_taken_for_memory():
    """A name that may hold a path on some branch is not an in-memory target."""
    save = "    buf = io.BytesIO() if rank else 'weights.pt'\n    torch.save(model.module.state_dict(), buf)\n"
    result = convert_source(SCRIPT.format(save=save), "train.py")
    assert result.refused is None, result.refused
    assert result.text.count("accelerator.save(") == 2, result.text


HELPER = """\
import io

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def save_model_to_s3(model, key, *, bucket, client):
    buffer = io.BytesIO()
    torch.save(model.state_dict(), buffer)
    buffer.seek(0)
    client.put_object(Bucket=bucket, Key=key, Body=buffer)


def train_model(client, epochs=2):
    loader = DataLoader(TensorDataset(torch.randn(64, 8), torch.randn(64, 1)), batch_size=8, shuffle=True)
    model = nn.Linear(8, 1)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(epochs):
        for x, y in loader:
            optimizer.zero_grad()
            loss = nn.functional.mse_loss(model(x), y)
            loss.backward()
            optimizer.step()
    save_model_to_s3(model, "models/m.pt", bucket="b", client=client)
"""


def test_a_helper_that_uploads_an_in_memory_save_runs_on_the_main_process_without_a_barrier():
    """Survey 18 (a churn trainer saving to S3 through a BytesIO): the helper's call goes under
    `if accelerator.is_main_process:` (one upload), its torch.save stays, and no
    `wait_for_everyone()` is put in it: the helper runs on the main process only, so a barrier
    there would wait for ever (the conversion before this fix wrote accelerator.save + a barrier
    inside the guarded helper)."""
    result = convert_source(HELPER, "train.py")
    assert result.refused is None, result.refused
    assert (
        "    if accelerator.is_main_process:\n"
        '        save_model_to_s3(model, "models/m.pt", bucket="b", client=client, accelerator=accelerator)\n'
    ) in result.text, result.text
    assert "torch.save(accelerator.unwrap_model(model, keep_torch_compile=False).state_dict(), buffer)\n" in result.text
    assert "wait_for_everyone" not in result.text, result.text
    assert "accelerator.save(" not in result.text, result.text
