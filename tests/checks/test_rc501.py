"""RC501 behaviour beyond the examples: fix levels and round trips, the Accelerate data flow
(plugin variable, later `use_regional_compilation` assignments, enum backends), spans."""

from __future__ import annotations

import ast

from regcomp_lint.api import fix_source, lint_source
from regcomp_lint.diagnostics import Applicability, Location
from regcomp_lint.files.source import apply_edits
from regcomp_lint.lint.config import Settings

GPT = (
    "import torch\nfrom torch import nn\n\n"
    "class GPT(nn.Module):\n    def __init__(self, n_layer=12):\n        super().__init__()\n"
    "        self.h = nn.ModuleList([Block() for _ in range(12)])\n\n"
)
ACC = "from accelerate import Accelerator\nfrom accelerate.utils import TorchDynamoPlugin\nfrom transformers import AutoModel\n"
MODEL = "model = AutoModel.from_pretrained('bert-base-uncased')\n"


def rc501(src: str):
    return [d for d in lint_source(src, "train.py") if d.code == "RC501"]


def plugin_reported(setup: str) -> bool:
    return bool(rc501(ACC + MODEL + setup))


def test_torch_compile_span_and_message():
    [diag] = rc501(GPT + "model = torch.compile(GPT())\n")
    assert (diag.location, diag.end_location) == (Location(9, 9), Location(9, 29))
    assert diag.message == (
        "whole-model `torch.compile` of a model with repeated blocks (`Block` ×12): use `compile_regions`"
    )
    assert diag.fix.applicability is Applicability.UNSAFE


def test_unsafe_fix_needs_opt_in_and_round_trips():
    src = GPT + "model = GPT()\nmodel = torch.compile(model, mode='max-autotune', **extra)\n"
    assert fix_source(src)[0] == src
    fixed, remaining = fix_source(src, unsafe=True)
    assert "model = compile_regions(model, mode='max-autotune', **extra)\n" in fixed
    assert "from accelerate.utils import compile_regions\n" in fixed
    assert [d for d in remaining if d.code == "RC501"] == []
    assert fix_source(fixed, unsafe=True)[0] == fixed


def test_existing_compile_regions_alias_is_used_and_a_foreign_one_blocks_the_fix():
    src = "from accelerate.utils import compile_regions as cr\n" + GPT + "m = torch.compile(GPT())\n"
    assert fix_source(src, unsafe=True)[0].endswith("m = cr(GPT())\n")
    src = "from mylib import compile_regions\n" + GPT + "m = torch.compile(GPT())\n"
    [diag] = rc501(src)
    assert diag.fix is None


def test_legacy_backend_is_fixed_to_a_regional_plugin_together_with_rc105():
    src = (
        "from accelerate import Accelerator\nfrom transformers import AutoModel\n"
        + MODEL
        + ("accelerator = Accelerator(dynamo_backend='inductor')\nmodel = accelerator.prepare(model)\n")
    )
    fixed, remaining = fix_source(src, config=Settings(select=("RC105", "RC501")), unsafe=True)
    assert "Accelerator(dynamo_plugin=TorchDynamoPlugin(backend='inductor', use_regional_compilation=True))" in fixed
    assert fixed.count("import TorchDynamoPlugin") == 1
    assert remaining == []


def test_plugin_regional_none_or_false_is_replaced():
    for value in ("None", "False"):
        src = (
            ACC
            + MODEL
            + f"acc = Accelerator(dynamo_plugin=TorchDynamoPlugin(backend='eager', use_regional_compilation={value}))\nmodel = acc.prepare(model)\n"
        )
        fixed, _ = fix_source(src, unsafe=True)
        assert "TorchDynamoPlugin(backend='eager', use_regional_compilation=True)" in fixed


def test_plugin_cases_reported():
    assert plugin_reported(
        "acc = Accelerator(dynamo_plugin=TorchDynamoPlugin(backend='inductor'))\nmodel = acc.prepare(model)\n"
    )
    assert plugin_reported("model = Accelerator(dynamo_plugin=TorchDynamoPlugin(backend='eager')).prepare(model)\n")
    assert plugin_reported(
        "from accelerate.utils import DynamoBackend\n"
        "acc = Accelerator(dynamo_plugin=TorchDynamoPlugin(backend=DynamoBackend.INDUCTOR))\nmodel = acc.prepare(model)\n"
    )
    assert plugin_reported(
        "def main():\n    plugin = TorchDynamoPlugin(backend='inductor')\n    acc = Accelerator(dynamo_plugin=plugin)\n"
        "    net = model.to(acc.device)\n    net, opt, dl = acc.prepare(net, opt, dl)\n"
    )


def test_plugin_cases_not_reported():
    prepare = "acc = Accelerator(dynamo_plugin=plugin)\nmodel = acc.prepare(model)\n"
    for plugin in [
        "TorchDynamoPlugin()",  # backend from the environment: maybe "no"
        "TorchDynamoPlugin(backend='NO')",
        "TorchDynamoPlugin(backend=DynamoBackend.NO)",
        "TorchDynamoPlugin(backend='inductor', disable=True)",
        "TorchDynamoPlugin(backend='inductor', use_regional_compilation=flag)",
        "TorchDynamoPlugin(backend='inductor', **settings)",
        "make_plugin()",
    ]:
        src = "from accelerate.utils import DynamoBackend\n" + f"plugin = {plugin}\n" + prepare
        assert not plugin_reported(src), plugin
    assert not plugin_reported(
        "plugin = TorchDynamoPlugin(backend='inductor')\nplugin.use_regional_compilation = True\n" + prepare
    )
    assert not plugin_reported(
        "plugin = TorchDynamoPlugin(backend='inductor')\n"
        + prepare
        + "acc.state.dynamo_plugin.use_regional_compilation = True\n"
    )
    # the accelerator never prepares the model, or prepares something else
    assert not plugin_reported("acc = Accelerator(dynamo_plugin=TorchDynamoPlugin(backend='inductor'))\n")
    assert not plugin_reported(
        "acc = Accelerator(dynamo_plugin=TorchDynamoPlugin(backend='inductor'))\nopt = acc.prepare(opt)\n"
    )
    assert not plugin_reported(
        "acc = Accelerator(dynamo_plugin=TorchDynamoPlugin(backend='inductor'))\nm = acc.prepare(*things)\n"
    )


def test_one_plugin_shared_by_two_accelerators_is_reported_once():
    src = (
        ACC
        + MODEL
        + (
            "plugin = TorchDynamoPlugin(backend='inductor')\n"
            "a = Accelerator(dynamo_plugin=plugin)\nb = Accelerator(dynamo_plugin=plugin, cpu=True)\n"
            "model = a.prepare(model)\nmodel2 = b.prepare(model)\n"
        )
    )
    [diag] = rc501(src)
    assert diag.location.row == 5


def test_both_keywords_is_left_to_rc106():
    src = (
        ACC
        + MODEL
        + "acc = Accelerator(dynamo_backend='eager', dynamo_plugin=TorchDynamoPlugin(backend='eager'))\nmodel = acc.prepare(model)\n"
    )
    assert rc501(src) == []


def test_module_compile_is_display_only():
    src = GPT + "model = GPT().cuda()\nmodel.compile(fullgraph=True)\n"
    [diag] = rc501(src)
    assert diag.fix.applicability is Applicability.DISPLAY
    shown = apply_edits(src, list(diag.fix.edits))
    ast.parse(shown)
    assert shown.endswith("model = compile_regions(model, fullgraph=True)\n")
    assert fix_source(src, unsafe=True)[0] == src


def test_module_compile_inside_an_expression_has_no_suggested_edit():
    [diag] = rc501(GPT + "model = GPT()\nok = model.compile() or True\n")
    assert diag.fix is None


def test_not_reported_for_blocks_compiled_one_by_one():
    src = GPT + "model = GPT()\nfor i, block in enumerate(model.h):\n    model.h[i] = torch.compile(block)\n"
    assert rc501(src) == []


def test_keras_style_compile_on_unknown_objects_is_ignored():
    assert rc501("import keras\nmodel = keras.Sequential([])\nmodel.compile(optimizer='adam')\n") == []


def test_triggers_let_a_plugin_only_script_through():
    src = (
        ACC
        + MODEL
        + "acc = Accelerator(dynamo_plugin=TorchDynamoPlugin(backend='eager'))\nmodel = acc.prepare(model)\n"
    )
    assert "compile" not in src
    assert len(rc501(src)) == 1
    src = (
        "from accelerate import Accelerator\nfrom transformers import AutoModel\n"
        + MODEL
        + ("acc = Accelerator(dynamo_backend='eager')\nmodel = acc.prepare(model)\n")
    )
    assert "compile" not in src and "DynamoPlugin" not in src
    assert len(rc501(src)) == 1


def test_module_compile_suggestion_with_spaces_before_the_parenthesis():
    src = GPT + "model = GPT()\nmodel.compile (\n    mode='max-autotune',\n)\n"
    [diag] = rc501(src)
    assert apply_edits(src, list(diag.fix.edits)).endswith("model = compile_regions(model, mode='max-autotune',)\n")
