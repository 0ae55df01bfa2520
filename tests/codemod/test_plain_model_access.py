"""codemod/plain_model_access.py: adding the plugin to an Accelerate script, every ``unwrap_model``
still hands the script the plain model, and a script that resumes by loading a
clean state dict into the prepared model (through ``unwrap_model``, lucidrains' ``Trainer.load``, or
directly) loads it into ``unwrap_model(..., keep_torch_compile=False)``: the compiled wrapper's keys
start with ``_orig_mod.``, so the resume raised on 1 and 2 processes (survey 15)."""

from regcomp_lint.codemod import convert_source

SCRIPT = """\
import torch
from accelerate import Accelerator


def main(resume=None):
    accelerator = Accelerator()
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model.load_state_dict(torch.load("init.pt"))
    model, optimizer = accelerator.prepare(model, optimizer)
    if resume == "a":
        accelerator.unwrap_model(model).load_state_dict(torch.load("a.pt"))
    elif resume == "b":
        raw = accelerator.unwrap_model(model)
        raw.load_state_dict(torch.load("a.pt"))
    elif resume == "c":
        model.load_state_dict(torch.load("a.pt"))
        optimizer.load_state_dict(torch.load("o.pt"))
    for step in range(3):
        loss = model(torch.randn(8, 4)).pow(2).mean()
        accelerator.backward(loss)
        optimizer.step()
        optimizer.zero_grad()
    torch.save(accelerator.unwrap_model(model).state_dict(), "a.pt")
"""

TRAINER = """\
import torch
from accelerate import Accelerator


class Trainer:
    def __init__(self, model):
        self.accelerator = Accelerator()
        self.model = model
        self.opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        self.model, self.opt = self.accelerator.prepare(self.model, self.opt)

    def save(self):
        torch.save({"model": self.accelerator.get_state_dict(self.model)}, "m.pt")

    def load(self):
        data = torch.load("m.pt")
        model = self.accelerator.unwrap_model(self.model)
        model.load_state_dict(data["model"])

    def train(self):
        for step in range(3):
            loss = self.model(torch.randn(8, 4)).pow(2).mean()
            self.accelerator.backward(loss)
            self.opt.step()
            self.opt.zero_grad()
"""


def test_loads_into_the_prepared_model_go_into_the_uncompiled_module():
    result = convert_source(SCRIPT, "train.py")
    assert result.refused is None, result.refused
    text = result.text
    assert (
        '        accelerator.unwrap_model(model, keep_torch_compile=False).load_state_dict(torch.load("a.pt"))\n'
        in text
    )
    assert "        raw = accelerator.unwrap_model(model, keep_torch_compile=False)\n" in text
    # the prepared model itself: the module the compile wraps (DDP's wrapper on several processes)
    assert '        getattr(model, "_orig_mod", model).load_state_dict(torch.load("a.pt"))\n' in text
    assert '    model.load_state_dict(torch.load("init.pt"))\n' in text  # before prepare(): the plain model
    assert '        optimizer.load_state_dict(torch.load("o.pt"))\n' in text  # not a model
    assert any("load_state_dict() at line 17 loads into the model the compile wraps" in n for n in result.notes)
    assert any(
        n.startswith("unwrap_model() at lines 12, 14, 24 -> unwrap_model(..., keep_torch_compile=False)")
        for n in result.notes
    ), result.notes


def test_a_trainer_method_loading_through_unwrap_model():
    result = convert_source(TRAINER, "train.py")
    assert result.refused is None, result.refused
    assert "        model = self.accelerator.unwrap_model(self.model, keep_torch_compile=False)\n" in result.text


def test_an_existing_plugin_leaves_the_loads_as_they_were():
    """The script compiled already: it saved and loaded `_orig_mod.` keys before the conversion too."""
    text = SCRIPT.replace(
        "from accelerate import Accelerator\n",
        "from accelerate import Accelerator\nfrom accelerate.utils import TorchDynamoPlugin\n",
    ).replace("Accelerator()", 'Accelerator(dynamo_plugin=TorchDynamoPlugin(backend="inductor", mode="max-autotune"))')
    result = convert_source(text, "train.py")
    assert "keep_torch_compile" not in result.text


def test_a_legacy_dynamo_backend_leaves_the_loads_as_they_were():
    text = SCRIPT.replace("Accelerator()", 'Accelerator(dynamo_backend="inductor")')
    result = convert_source(text, "train.py")
    assert result.refused is None, result.refused
    assert "dynamo_plugin" in result.text and "keep_torch_compile" not in result.text


PREFIXED = """\
import torch
from accelerate import Accelerator


def maybe_wrap(x, num_processes):  # DDP's "module." prefix, added by hand
    return x if num_processes == 1 else {f"module.{k}": v for k, v in x.items()}


class Trainer:
    def __init__(self, model):
        self.accelerator = Accelerator()
        self.model = self.accelerator.prepare(model)
        self.optimizer = self.accelerator.prepare(torch.optim.SGD(self.model.parameters(), lr=0.1))

    def load_checkpoint(self, checkpoint):
        self.model.load_state_dict(maybe_wrap(checkpoint["state_dict"], self.accelerator.num_processes))
        self.optimizer.load_state_dict(checkpoint["optimizer_state_dict"])

    def train(self):
        for step in range(3):
            loss = self.model(torch.randn(8, 4)).pow(2).mean()
            self.optimizer.zero_grad()
            self.accelerator.backward(loss)
            self.optimizer.step()
"""


def test_a_prepared_model_bound_to_another_name_loads_into_what_the_compile_wraps():
    """``self.model = accelerator.prepare(model)``: the load keeps the DDP wrapper (the script adds
    ``module.`` itself on several processes) and skips only the compile (checked on 1 and 2 gloo
    processes, whole and regional: the same losses after resume as the original)."""
    result = convert_source(PREFIXED, "train.py")
    assert result.refused is None, result.refused
    assert '        getattr(self.model, "_orig_mod", self.model).load_state_dict(maybe_wrap(' in result.text
    assert '        self.optimizer.load_state_dict(checkpoint["optimizer_state_dict"])\n' in result.text


EMA_COPY = """\
import copy

import torch
from accelerate import Accelerator


def main():
    accelerator = Accelerator()
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model, optimizer = accelerator.prepare(model, optimizer)
    ema = copy.deepcopy(accelerator.unwrap_model(model)).eval()
    for step in range(3):
        loss = model(torch.randn(8, 4)).pow(2).mean()
        accelerator.backward(loss)
        optimizer.step()
        optimizer.zero_grad()
    torch.save(ema.state_dict(), "ema.pt")
"""


def test_an_ema_copied_from_the_unwrapped_model_stays_a_copy_of_the_plain_model():
    """survey 15: the deep copy of the compile wrapper saved `_orig_mod.0.weight` keys that did not
    load into the model (1 and 2 gloo processes)."""
    result = convert_source(EMA_COPY, "train.py")
    assert result.refused is None, result.refused
    assert "    ema = copy.deepcopy(accelerator.unwrap_model(model, keep_torch_compile=False)).eval()\n" in result.text


UNWRAP_HELPER = """\
import torch
from accelerate import Accelerator
from diffusers.utils.torch_utils import is_compiled_module
from transformers import AutoModelForCausalLM


def main():
    accelerator = Accelerator()
    model = AutoModelForCausalLM.from_pretrained("gpt2")
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    model, optimizer = accelerator.prepare(model, optimizer)

    def unwrap_model(model):
        model = accelerator.unwrap_model(model)
        model = model._orig_mod if is_compiled_module(model) else model
        return model

    for step in range(3):
        loss = model(torch.randint(0, 10, (2, 8))).loss
        accelerator.backward(loss)
        optimizer.step()
    unwrap_model(model).save_pretrained("out")
"""


def test_diffusers_unwrap_helper_reaches_the_plain_model_under_a_regional_plugin():
    """diffusers' and newer no_trainer scripts' `unwrap_model` helper strips only an
    OptimizedModule: with the regional plugin its `save_pretrained` raised ("shared tensors",
    GPT-2 on CPU, eager backend); with `keep_torch_compile=False` it saves and reloads."""
    result = convert_source(UNWRAP_HELPER, "train.py")
    assert result.refused is None, result.refused
    assert "use_regional_compilation=True" in result.text
    assert "        model = accelerator.unwrap_model(model, keep_torch_compile=False)\n" in result.text


COPIES = """\
import copy

import torch
from accelerate import Accelerator
from ema_pytorch import EMA


def main():
    accelerator = Accelerator()
    model = torch.nn.Linear(4, 1)
    early = copy.deepcopy(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model, optimizer = accelerator.prepare(model, optimizer)
    ema = EMA(model, beta=0.99)
    best = copy.deepcopy(model)
    for step in range(3):
        loss = model(torch.randn(8, 4)).pow(2).mean()
        accelerator.backward(loss)
        optimizer.step()
        ema.update()
    torch.save(ema.ema_model.state_dict(), "ema.pt")
    torch.save(best.state_dict(), "best.pt")
"""


def test_copies_of_the_prepared_model_are_made_of_the_module_the_compile_wraps():
    """survey 15: `EMA(model)` / `copy.deepcopy(model)` after prepare() copied the compile wrapper
    and saved `_orig_mod.0.weight` keys on one process (the original's loaded into the model);
    `getattr(model, "_orig_mod", model)` keeps DDP's wrapper on several processes, as the original."""
    result = convert_source(COPIES, "train.py")
    assert result.refused is None, result.refused
    assert '    ema = EMA(getattr(model, "_orig_mod", model), beta=0.99)\n' in result.text
    assert '    best = copy.deepcopy(getattr(model, "_orig_mod", model))\n' in result.text
    assert "    early = copy.deepcopy(model)\n" in result.text  # before prepare(): the plain model
    assert any(n.startswith("lines 14, 15: the copy (deepcopy, EMA)") for n in result.notes), result.notes


#: survey 25d, a torch-compile benchmark of Accelerate's translation example: the script compiled
#: through ``Accelerator(dynamo_backend=...)`` and generated through ``accelerator.unwrap_model(model)``
LEGACY_BACKEND = """\
import torch
from accelerate import Accelerator
from transformers import AutoModelForSeq2SeqLM


def main(backend="no"):
    accelerator = Accelerator(dynamo_backend=backend)
    model = AutoModelForSeq2SeqLM.from_pretrained("t5-small")
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-5)
    model, optimizer = accelerator.prepare(model, optimizer)
    for step in range(3):
        loss = model(input_ids=torch.ones(2, 4, dtype=torch.long), labels=torch.ones(2, 4, dtype=torch.long)).loss
        accelerator.backward(loss)
        optimizer.step()
        optimizer.zero_grad()
    generated = accelerator.unwrap_model(model).generate(torch.ones(2, 4, dtype=torch.long), max_length=8)
    return generated
"""


def test_a_regional_plugin_in_place_of_a_whole_compile_unwraps_to_the_plain_model():
    """The original's whole-model compile (``dynamo_backend=``) made ``unwrap_model(model)`` a
    compile wrapper that reads ``generate`` through; with the regional plugin, under DDP it hands
    back a compiled copy of the DDP wrapper ("'DistributedDataParallel' object has no attribute
    'generate'" on 2 gloo processes, survey 25d). ``keep_torch_compile=False`` hands the model, as
    the original's wrapper did for every attribute."""
    result = convert_source(LEGACY_BACKEND, "train.py")
    assert result.refused is None, result.refused
    assert "use_regional_compilation=True" in result.text, result.text
    assert (
        "accelerator.unwrap_model(model, keep_torch_compile=False).generate(torch.ones(2, 4, dtype=torch.long), max_length=8)"
        in result.text
    ), result.text


def test_a_whole_model_plugin_leaves_the_unwrap_as_it_was():
    """Without regional compilation the unwrap keeps handing the compile wrapper, as before."""
    src = LEGACY_BACKEND.replace('from_pretrained("t5-small")', "from_pretrained('t5-small')").replace(
        "    model = AutoModelForSeq2SeqLM.from_pretrained('t5-small')\n", "    model = torch.nn.Linear(4, 4)\n"
    )
    result = convert_source(src, "train.py")
    assert result.refused is None, result.refused
    assert "use_regional_compilation" not in result.text, result.text
    assert "accelerator.unwrap_model(model).generate(" in result.text, result.text
