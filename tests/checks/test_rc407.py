"""RC407 behaviour beyond the examples: what counts as the prepared model, fix levels."""

from __future__ import annotations

from regcomp_lint.api import fix_source, lint_source
from regcomp_lint.diagnostics import Applicability
from regcomp_lint.lint.config import Settings

ONLY = Settings(select=("RC407",))
ACC = (
    "import torch\nfrom accelerate import Accelerator\nfrom transformers import AutoModelForCausalLM\n"
    "accelerator = Accelerator()\nmodel = AutoModelForCausalLM.from_pretrained('gpt2')\n"
    "model, optimizer = accelerator.prepare(model, optimizer)\n"
)


def rc407(src: str):
    return [d for d in lint_source(src, "train.py", ONLY) if d.code == "RC407"]


def test_a_field_read_is_a_safe_fix_and_a_method_call_an_unsafe_one():
    found = rc407(ACC + "n = model.config.n_layer\nout = model.generate(x)\n")
    assert [(d.location.row, d.fix.applicability) for d in found] == [
        (7, Applicability.SAFE),
        (8, Applicability.UNSAFE),
    ]
    fixed, _ = fix_source(ACC + "n = model.config.n_layer\n", config=ONLY)
    assert fixed.endswith("n = accelerator.unwrap_model(model).config.n_layer\n")


def test_an_attribute_set_on_the_wrapper_is_reported_too():
    """It lands on the DDP wrapper, never on the model."""
    assert [d.location.row for d in rc407(ACC + "model.gradient_checkpointing = True\n")] == [7]


def test_a_name_rebound_to_the_unwrapped_model_is_not_reported():
    assert rc407(ACC + "model = accelerator.unwrap_model(model)\nout = model.generate(x)\n") == []


def test_the_module_api_ddp_attributes_and_private_names_are_not_reported():
    src = (
        ACC
        + "model.train()\nd = model.device\nm = model.module\nwith model.no_sync():\n    pass\nk = model._orig_mod\n"
    )
    assert rc407(src) == []


def test_before_prepare_and_without_an_accelerator_nothing_is_reported():
    before = (
        "from accelerate import Accelerator\nfrom transformers import AutoModelForCausalLM\n"
        "accelerator = Accelerator()\nmodel = AutoModelForCausalLM.from_pretrained('gpt2')\n"
        "model.gradient_checkpointing_enable()\nmodel = accelerator.prepare(model)\n"
    )
    assert rc407(before) == []
    plain = "import torch\nmodel = torch.nn.Linear(2, 2)\nmodel = torch.compile(model)\nmodel.reset_parameters()\n"
    assert rc407(plain) == []


def test_a_read_in_a_comprehension_before_prepare_is_the_plain_model():
    """transformers' run_glue_no_trainer.py reads `model.config.label2id` in a dict comprehension
    before `prepare()`: a comprehension runs where it is written, so `model` there is the one bound
    above it, not the prepared one (survey 15); a lambda still sees the latest binding."""
    src = (
        "import torch\nfrom accelerate import Accelerator\nfrom transformers import AutoModelForCausalLM\n"
        "def main():\n    accelerator = Accelerator()\n    model = AutoModelForCausalLM.from_pretrained('gpt2')\n"
        "    ids = {k: v for k, v in model.config.label2id.items()}\n"
        "    later = lambda: model.config.n_layer\n"
        "    model, optimizer = accelerator.prepare(model, optimizer)\n"
        "    n = [model.config.n_layer for _ in range(2)]\n"
    )
    assert [d.location.row for d in rc407(src)] == [8, 10]
