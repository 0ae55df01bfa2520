"""Writes and indexing through the prepared model reach the unwrapped one (codemod/wrapped_access.py).

DDP is not subscriptable and an attribute set on it never reaches ``forward``: a PyTorch
tutorial's LSTM tagger resets ``model.hidden`` each step, and a polynomial fit reads ``model[0]``.
"""

from __future__ import annotations

from regcomp_lint.codemod.convert import convert_source

SCRIPT = """\
import torch
import torch.nn as nn


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(4, 4)
        self.hidden = self.init_hidden()

    def init_hidden(self):
        return (torch.zeros(1, 1, 4), torch.zeros(1, 1, 4))

    def forward(self, x):
        out, self.hidden = self.lstm(x.view(len(x), 1, -1), self.hidden)
        return out


model = nn.Sequential(Tagger())
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(5):
    model.zero_grad()
    model[0].hidden = model[0].init_hidden()
    model.extra_state = epoch
    loss = model(torch.randn(5, 4)).sum()
    loss.backward()
    optimizer.step()
print(model[0].lstm.weight_hh_l0.sum().item())
"""


def _converted() -> str:
    result = convert_source(SCRIPT, "tagger.py")
    assert result.refused is None, result.refused
    return result.text


def test_indexing_after_prepare_goes_through_the_unwrapped_model():
    out = _converted()
    # the compile wrapper is not subscriptable either: indexing unwraps it too
    plain = "accelerator.unwrap_model(model, keep_torch_compile=False)"
    assert f"{plain}[0].hidden = {plain}[0].init_hidden()" in out
    assert f"print({plain}[0].lstm.weight_hh_l0.sum().item())" in out


def test_an_attribute_written_after_prepare_lands_on_the_unwrapped_model():
    """Set on the compile wrapper, it would not reach the module either."""
    assert "accelerator.unwrap_model(model, keep_torch_compile=False).extra_state = epoch" in _converted()


def test_before_prepare_the_script_s_own_model_is_left_alone():
    script = SCRIPT.replace("optimizer = torch.optim", "model[0].hidden = None\noptimizer = torch.optim")
    result = convert_source(script, "tagger.py")
    assert result.refused is None, result.refused
    assert "\nmodel[0].hidden = None\n" in result.text
    assert "model, optimizer = accelerator.prepare(model, optimizer)" in result.text


def test_the_models_own_method_reached_through_a_parameter_of_another_name():
    """The translation tutorial: ``greedy_decode(model, ...)`` is called as
    ``greedy_decode(transformer, ...)`` after training; ``model.encode`` fails through DDP."""
    from regcomp_lint.codemod import ConvertOptions, convert_source

    text = (
        "import torch\n\n\n"
        "class Seq2Seq(torch.nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n        self.lin = torch.nn.Linear(4, 4)\n\n"
        "    def forward(self, x):\n        return self.lin(x)\n\n"
        "    def encode(self, x):\n        return self.lin(x)\n\n\n"
        "def greedy_decode(model, src):\n    return model.encode(src)\n\n\n"
        "transformer = Seq2Seq()\n"
        "optimizer = torch.optim.SGD(transformer.parameters(), lr=0.1)\n"
        "for step in range(3):\n"
        "    optimizer.zero_grad()\n    transformer(torch.randn(2, 4)).sum().backward()\n    optimizer.step()\n"
        "print(greedy_decode(transformer, torch.randn(1, 4)))\n"
    )
    result = convert_source(text, "train.py", ConvertOptions())
    assert result.refused is None, result.refused
    assert "    return accelerator.unwrap_model(model, keep_torch_compile=False).encode(src)\n" in result.text


PIPELINE = """\
import torch
import torch.nn.functional as F
from diffusers import DDPMPipeline, DDPMScheduler, UNet2DModel
from torch.utils.data import DataLoader

loader = DataLoader(torch.randn(16, 1, 8, 8), batch_size=4)
model = UNet2DModel(sample_size=8, in_channels=1, out_channels=1)
noise_scheduler = DDPMScheduler(num_train_timesteps=10)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
for epoch in range(2):
    for clean in loader:
        noise = torch.randn_like(clean)
        t = torch.randint(0, 10, (clean.shape[0],))
        loss = F.mse_loss(model(noise_scheduler.add_noise(clean, noise, t), t).sample, noise)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    pipeline = DDPMPipeline(unet=model, scheduler=noise_scheduler)
    images = pipeline(batch_size=2, num_inference_steps=2).images
"""


def test_a_model_handed_to_a_diffusers_pipeline_after_prepare_is_the_unwrapped_one():
    """Handed the prepared model, DDPMPipeline raised "'DistributedDataParallel' object has no
    attribute 'config'" on 2 processes (survey 15, diffusers 0.42.1)."""
    result = convert_source(PIPELINE, "ddpm.py")
    assert result.refused is None, result.refused
    assert (
        "DDPMPipeline(unet=accelerator.unwrap_model(model, keep_torch_compile=False), scheduler=noise_scheduler)"
        in result.text
    )
    assert any("handed to a diffusers pipeline" in n for n in result.notes), result.notes


def test_a_pipeline_already_handed_the_unwrapped_model_is_left_as_it_is():
    text = PIPELINE.replace("DDPMPipeline(unet=model,", "DDPMPipeline(unet=unwrap(model),")
    result = convert_source(text, "ddpm.py")
    assert result.refused is None, result.refused
    assert "DDPMPipeline(unet=unwrap(model), scheduler=noise_scheduler)" in result.text
