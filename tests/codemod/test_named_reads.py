"""codemod/named_reads.py: adding the plugin to an Accelerate script whose EMA update matches the
prepared model's parameters by name (DiT's ``name.replace("module.", "")``) hands that helper the
unwrapped model; the compiled model's names start with ``_orig_mod.`` (KeyError on the first
step, on 1 and 2 processes, survey 14)."""

from regcomp_lint.codemod import convert_source

SCRIPT = """\
from collections import OrderedDict
from copy import deepcopy

import torch
from accelerate import Accelerator


@torch.no_grad()
def update_ema(ema_model, model, decay=0.9999):
    ema_params = OrderedDict(ema_model.named_parameters())
    model_params = OrderedDict(model.named_parameters())
    for name, param in model_params.items():
        name = name.replace("module.", "")
        ema_params[name].mul_(decay).add_(param.data, alpha=1 - decay)


def log_norm(model):
    return sum(p.norm().item() for p in model.parameters())


def main():
    accelerator = Accelerator()
    model = torch.nn.Linear(4, 1)
    ema = deepcopy(model)
    update_ema(ema, model, decay=0)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    model, opt = accelerator.prepare(model, opt)
    for step in range(3):
        loss = model(torch.randn(16, 4)).pow(2).mean()
        opt.zero_grad()
        accelerator.backward(loss)
        opt.step()
        update_ema(ema, model)
        print(log_norm(model))
"""


def test_a_helper_reading_the_prepared_model_by_name_gets_the_unwrapped_model():
    result = convert_source(SCRIPT, "train.py")
    assert result.refused is None, result.refused
    assert "        update_ema(ema, accelerator.unwrap_model(model, keep_torch_compile=False))\n" in result.text
    assert "    update_ema(ema, model, decay=0)\n" in result.text  # before prepare(): the plain model already
    assert "print(log_norm(model))" in result.text  # parameters() has no names
    assert any("update_ema(model=...) at line 33" in note for note in result.notes), result.notes


def test_an_existing_plugin_leaves_the_helper_as_it_was():
    """The script compiled already: its names were `_orig_mod.` ones before the conversion too."""
    text = SCRIPT.replace(
        "from accelerate import Accelerator\n",
        "from accelerate import Accelerator\nfrom accelerate.utils import TorchDynamoPlugin\n",
    ).replace("Accelerator()", 'Accelerator(dynamo_plugin=TorchDynamoPlugin(backend="inductor"))')
    result = convert_source(text, "train.py")
    assert "unwrap_model" not in result.text


HELPER = """\
from collections import OrderedDict
from copy import deepcopy

import torch
from accelerate import Accelerator


@torch.no_grad()
def update_ema(ema_model, model, decay=0.9999):
    ema_params = OrderedDict(ema_model.named_parameters())
    for name, param in model.named_parameters():
        ema_params[name.replace("module.", "")].mul_(decay).add_(param.data, alpha=1 - decay)


def train_one_epoch(accelerator, model, opt, ema):
    for step in range(3):
        loss = model(torch.randn(16, 4)).pow(2).mean()
        opt.zero_grad()
        accelerator.backward(loss)
        opt.step()
        update_ema(ema, model)


def main():
    accelerator = Accelerator()
    model = torch.nn.Linear(4, 1)
    ema = deepcopy(model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    model, opt = accelerator.prepare(model, opt)
    for epoch in range(2):
        train_one_epoch(accelerator, model, opt, ema)
    train_one_epoch(accelerator, model, opt, ema)
"""


def test_a_helper_handed_the_prepared_model_passes_on_the_module_the_compile_wraps():
    """survey 15: `train_one_epoch(model)` calling `update_ema(ema, model)` raised KeyError
    '_orig_mod.0.weight' on step 1 (1 and 2 processes); the inner call is rewritten once, however
    many times the helper is called, and keeps DDP's wrapper (the helper strips "module.")."""
    result = convert_source(HELPER, "train.py")
    assert result.refused is None, result.refused
    assert '        update_ema(ema, getattr(model, "_orig_mod", model))\n' in result.text
    assert "train_one_epoch(accelerator, model, opt, ema)" in result.text
    assert sum("update_ema(model=...) at line 21" in n for n in result.notes) == 1, result.notes
