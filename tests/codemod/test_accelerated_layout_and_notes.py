"""Scripts that already use Accelerate (codemod/accelerated.py): where the plugin goes, what a
folded compile leaves behind, and what the notes say. Each case is the shape of a public script
from bench/results/fix_survey_accelerate_session12.md."""

from __future__ import annotations

from regcomp_lint.codemod import ConversionResult, ConvertOptions, convert_source


def convert(text: str, **options) -> ConversionResult:
    result = convert_source(text, "train.py", ConvertOptions(**options))
    assert result.refused is None, result.refused
    return result


LOOP = """\
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    model, optimizer = accelerator.prepare(model, optimizer)
    for step in range(3):
        loss = model(torch.randn(2, 4)).sum()
        accelerator.backward(loss)
        optimizer.step()
"""

# accelerate/examples/nlp_example.py, cv_example.py, by_feature/*.py
IN_A_FUNCTION = (
    "import torch\nfrom accelerate import Accelerator\n\n\n"
    "def training_function(config, args):\n"
    "    lr = config['lr']\n\n"
    "    # Initialize accelerator\n"
    "    accelerator = Accelerator(cpu=args.cpu, mixed_precision=args.mixed_precision)\n" + LOOP
)


def test_the_plugin_goes_under_the_comment_that_describes_the_accelerator():
    result = convert(IN_A_FUNCTION)
    assert (
        "    lr = config['lr']\n\n"
        "    # Initialize accelerator\n"
        '    dynamo_plugin = TorchDynamoPlugin(backend="inductor")\n'
        "    accelerator = Accelerator(cpu=args.cpu, mixed_precision=args.mixed_precision, dynamo_plugin=dynamo_plugin)\n"
    ) in result.text


def test_the_plugin_goes_under_the_comment_above_an_accelerator_built_in_two_branches():
    text = IN_A_FUNCTION.replace(
        "    accelerator = Accelerator(cpu=args.cpu, mixed_precision=args.mixed_precision)\n",
        "    if args.with_tracking:\n"
        "        accelerator = Accelerator(cpu=args.cpu, log_with='all')\n"
        "    else:\n"
        "        accelerator = Accelerator(cpu=args.cpu)\n",
    )
    result = convert(text)
    assert (
        "    # Initialize accelerator\n"
        '    dynamo_plugin = TorchDynamoPlugin(backend="inductor")\n'
        "    if args.with_tracking:\n"
    ) in result.text


# lucidrains/PaLM-rlhf-pytorch train.py: helpers, two blank lines, a section comment, the accelerator
MODULE_LEVEL = """\
import torch

from accelerate import Accelerator

# helpers

def decode_tokens(tokens):
    return "".join(map(str, tokens))


# accelerator

accelerator = Accelerator()
device = accelerator.device

model = torch.nn.Linear(4, 1).to(device)
optim = torch.optim.AdamW(model.parameters(), lr=1e-4)
model, optim = accelerator.prepare(model, optim)

for step in range(3):
    loss = model(torch.randn(2, 4, device=device)).sum()
    accelerator.backward(loss)
    optim.step()
"""


def test_at_module_level_the_plugin_keeps_the_blank_lines_after_a_function_and_its_section_comment():
    result = convert(MODULE_LEVEL)
    assert (
        '    return "".join(map(str, tokens))\n'
        "\n\n"
        "# accelerator\n\n"
        'dynamo_plugin = TorchDynamoPlugin(backend="inductor")\n'
        "accelerator = Accelerator(dynamo_plugin=dynamo_plugin)\n"
    ) in result.text


def test_without_a_comment_the_plugin_takes_the_blank_lines_as_before():
    result = convert(IN_A_FUNCTION.replace("    # Initialize accelerator\n", ""))
    assert (
        "    lr = config['lr']\n\n"
        '    dynamo_plugin = TorchDynamoPlugin(backend="inductor")\n'
        "    accelerator = Accelerator("
    ) in result.text


def test_a_name_added_to_the_scripts_accelerate_utils_import_is_sorted():
    text = IN_A_FUNCTION.replace(
        "from accelerate import Accelerator\n",
        "from accelerate import Accelerator\nfrom accelerate.utils import ProjectConfiguration, set_seed\n",
    )
    result = convert(text)
    assert "from accelerate.utils import ProjectConfiguration, TorchDynamoPlugin, set_seed\n" in result.text


# a class-conditional LDM trainer: the compile under a flag, with an eager fallback
GUARDED_COMPILE = """\
import torch
from accelerate import Accelerator


def main(args):
    accelerator = Accelerator(mixed_precision="bf16")
    unet = UNet(args)
    class_embed = torch.nn.Embedding(1000, 512)
    if args.compile:
        try:
            unet = torch.compile(unet, mode="reduce-overhead", fullgraph=False)
        except Exception as e:
            if accelerator.is_main_process: print(f"[warn] torch.compile(unet) failed: {e}", flush=True)
    opt = torch.optim.AdamW(list(unet.parameters()) + list(class_embed.parameters()), lr=1e-4)
    unet, class_embed, opt = accelerator.prepare(unet, class_embed, opt)
    for x, y in loader:
        loss = unet(x, class_embed(y)).mean()
        accelerator.backward(loss)
        opt.step()
"""


def test_a_guarded_compile_goes_with_its_try_and_its_if():
    result = convert(GUARDED_COMPILE)
    assert "try:" not in result.text and "pass" not in result.text, result.text
    assert "if args.compile:" not in result.text.split("TorchDynamoPlugin(")[-1], result.text
    assert (
        "    class_embed = torch.nn.Embedding(1000, 512)\n"
        "    opt = torch.optim.AdamW(list(unet.parameters()) + list(class_embed.parameters()), lr=1e-4)\n"
    ) in result.text
    assert 'backend="inductor" if args.compile else "no"' in result.text
    fallback = [n for n in result.notes if "eager fallback" in n]
    assert len(fallback) == 1, result.notes
    assert "line 10" in fallback[0] and "torch.compile(unet) failed" not in fallback[0]


def test_a_try_that_keeps_other_statements_or_a_finally_stays():
    kept = GUARDED_COMPILE.replace(
        '            unet = torch.compile(unet, mode="reduce-overhead", fullgraph=False)\n',
        '            unet = torch.compile(unet, mode="reduce-overhead", fullgraph=False)\n'
        "            compiled = True\n",
    )
    result = convert(kept)
    assert "        try:\n            compiled = True\n        except Exception as e:\n" in result.text
    assert not any("eager fallback" in n for n in result.notes)
    final = GUARDED_COMPILE.replace(
        '{e}", flush=True)\n', '{e}", flush=True)\n        finally:\n            accelerator.wait_for_everyone()\n'
    )
    result = convert(final)
    assert "try:\n            pass\n" in result.text and "finally:" in result.text
    assert not any("eager fallback" in n for n in result.notes)


def test_the_notes_name_the_other_prepared_models_the_plugin_now_compiles():
    result = convert(GUARDED_COMPILE)
    others = [n for n in result.notes if "class_embed" in n]
    assert len(others) == 1, result.notes
    assert "line 15" in others[0] and "compiles every model prepared" in others[0]
    assert 'mode="reduce-overhead"' in others[0]
    assert "unet" not in others[0].split(":")[0]


def test_no_note_about_other_models_when_the_compile_covered_every_prepared_model():
    result = convert(
        GUARDED_COMPILE.replace(
            "unet, class_embed, opt = accelerator.prepare(unet, class_embed, opt)",
            "unet, opt = accelerator.prepare(unet, opt)",
        )
    )
    assert not any("now compiled too" in n or "compiles every model" in n for n in result.notes), result.notes


def test_a_script_without_a_hand_compile_names_the_models_the_plugin_compiles():
    """df_ctrlnet prepares controlnet and mix: both are compiled by the added plugin."""
    text = IN_A_FUNCTION.replace(
        "    model, optimizer = accelerator.prepare(model, optimizer)\n",
        "    mix = torch.nn.Linear(4, 4)\n    model, mix, optimizer = accelerator.prepare(model, mix, optimizer)\n",
    )
    result = convert(text)
    named = [n for n in result.notes if "compiles every model" in n]
    assert len(named) == 1, result.notes
    assert "model, mix" in named[0]


def test_a_plain_script_s_guarded_compile_goes_the_same_way():
    """The plain conversion folds hand compiles through the same removal."""
    text = (
        "import torch\n\n\ndef main(args):\n"
        "    model = torch.nn.Linear(4, 1)\n"
        "    if args.compile:\n"
        "        try:\n"
        "            model = torch.compile(model)\n"
        "        except Exception:\n"
        "            pass  # stay eager\n"
        "    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "    for step in range(3):\n"
        "        loss = model(torch.randn(2, 4)).sum()\n"
        "        optimizer.zero_grad()\n"
        "        loss.backward()\n"
        "        optimizer.step()\n"
    )
    result = convert(text)
    assert "try:" not in result.text and "if args.compile:" not in result.text, result.text
    assert "# stay eager" in result.text  # the comment is kept
    assert any("eager fallback" in n and "line 7" in n for n in result.notes), result.notes


# accelerate's fsdp2_fp8.py: the plugin is there already
HAS_PLUGIN = IN_A_FUNCTION.replace(
    "from accelerate import Accelerator\n",
    "from accelerate import Accelerator\nfrom accelerate.utils import TorchDynamoPlugin\n",
).replace(
    "    # Initialize accelerator\n    accelerator = Accelerator(cpu=args.cpu, mixed_precision=args.mixed_precision)\n",
    '    dynamo_plugin = TorchDynamoPlugin(backend="inductor", use_regional_compilation=True)\n'
    "    accelerator = Accelerator(dynamo_plugin=dynamo_plugin, mixed_precision=args.mixed_precision)\n",
)


def test_a_script_that_already_passes_its_plugin_says_so():
    result = convert(HAS_PLUGIN)
    assert not result.changed
    assert result.unchanged == (
        'it already compiles through Accelerate: TorchDynamoPlugin(backend="inductor", use_regional_compilation=True) '
        "at line 9 is passed to Accelerator(...) at line 10"
    )


# a musubi-tuner utility module: it builds the Accelerator (and its plugin) for the training scripts
ACCELERATOR_HELPER = """\
from accelerate import Accelerator
from accelerate.utils import DynamoBackend, TorchDynamoPlugin


def prepare_accelerator(args):
    dynamo_plugin = None
    if args.dynamo_backend.upper() != "NO":
        dynamo_plugin = TorchDynamoPlugin(
            backend=DynamoBackend(args.dynamo_backend.upper()),
            mode=args.dynamo_mode,
            fullgraph=args.dynamo_fullgraph,
            dynamic=args.dynamo_dynamic,
        )
    accelerator = Accelerator(
        gradient_accumulation_steps=args.gradient_accumulation_steps,
        dynamo_plugin=dynamo_plugin,
    )
    return accelerator
"""


def test_a_module_that_only_builds_the_accelerator_says_why_nothing_changed():
    result = convert(ACCELERATOR_HELPER)
    assert not result.changed
    assert result.unchanged == (
        "it already compiles through Accelerate: TorchDynamoPlugin(backend=..., mode=..., fullgraph=..., dynamic=...) "
        "at line 8 is passed to Accelerator(...) at line 14; no X.backward() in this file (its training loop runs elsewhere)"
    )


def test_a_converted_script_has_no_unchanged_reason():
    assert convert(IN_A_FUNCTION).unchanged is None


def test_the_added_keyword_follows_arguments_that_share_a_line_under_the_open_paren():
    """accelerate's `local_sgd.py`: `Accelerator(` NEWLINE `cpu=..., ..., gradient_accumulation_steps=...`
    NEWLINE `)` got `dynamo_plugin=` at the closing parenthesis' indentation (survey 15)."""
    text = (
        "import torch\nfrom accelerate import Accelerator\n\n\ndef main(args):\n"
        "    accelerator = Accelerator(\n        cpu=args.cpu, mixed_precision=args.mixed_precision\n    )\n"
        "    model = torch.nn.Linear(2, 2)\n    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "    model, opt = accelerator.prepare(model, opt)\n"
        "    loss = model(torch.randn(4, 2)).sum()\n    accelerator.backward(loss)\n    opt.step()\n"
    )
    result = convert_source(text, "train.py")
    assert (
        "    accelerator = Accelerator(\n        cpu=args.cpu, mixed_precision=args.mixed_precision,\n"
        "        dynamo_plugin=dynamo_plugin\n    )\n"
    ) in result.text, result.text


def test_a_created_plugin_says_the_launch_flags_no_longer_pick_what_it_sets():
    """Session 19e (clsnet_acc, osut5_acc): the added ``backend="inductor"`` overrides
    ``accelerate launch --dynamo_backend``; the plain conversions said so, these did not."""
    from regcomp_lint.codemod.settings import LAUNCH_FLAGS_NOTE

    assert LAUNCH_FLAGS_NOTE in convert(IN_A_FUNCTION).notes
    plain = convert_source(
        "import torch\n\n"
        "model = torch.nn.Linear(4, 1)\n"
        "optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "for step in range(3):\n"
        "    loss = model(torch.randn(2, 4)).sum()\n"
        "    loss.backward()\n"
        "    optimizer.step()\n",
        "train.py",
    )
    assert plain.notes.count(LAUNCH_FLAGS_NOTE) == 1, plain.notes
