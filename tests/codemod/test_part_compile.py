"""A hand compile of a part of the model (survey 19e, a LexiMind profiling script:
``model.encoder = torch.compile(model.encoder, mode=compile_mode)`` under
``if cfg.training.get("compile_encoder", True):``, the same for the decoder). The conversion left
those lines alone and added ``TorchDynamoPlugin(backend="inductor")``, which compiles the whole
model in prepare(): on top of the compiled part (whose own mode the outer compile no longer
follows), and whatever the script's condition says, so a run that compiled nothing compiled
everything. It is refused now, naming the line, for plain and for Accelerate scripts, in both
spellings (``torch.compile`` assigned back, ``nn.Module.compile()`` on the part)."""

from regcomp_lint.codemod import convert_source

PLAIN = """\
import argparse

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(8, 16), nn.ReLU())
        self.decoder = nn.Linear(16, 1)

    def forward(self, x):
        return self.decoder(self.encoder(x))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--compile-encoder", action="store_true")
    args = p.parse_args()
    loader = DataLoader(TensorDataset(torch.randn(64, 8), torch.randn(64, 1)), batch_size=8)
    model = Net()
    if args.compile_encoder:
        COMPILE
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in loader:
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()


if __name__ == "__main__":
    main()
"""

ACCELERATED = """\
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset
from accelerate import Accelerator


def main():
    accelerator = Accelerator()
    loader = DataLoader(TensorDataset(torch.randn(64, 8), torch.randn(64, 1)), batch_size=8)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
    COMPILE
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model, opt, loader = accelerator.prepare(model, opt, loader)
    for x, y in loader:
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        accelerator.backward(loss)
        opt.step()


if __name__ == "__main__":
    main()
"""


def test_a_plain_script_compiling_its_encoder_under_a_flag_is_refused_naming_the_line():
    result = convert_source(
        PLAIN.replace("COMPILE", 'model.encoder = torch.compile(model.encoder, mode="reduce-overhead")'), "t.py"
    )
    assert result.refused is not None, result.text
    assert "torch.compile(...) at line 25" in result.refused, result.refused
    assert "model.encoder" in result.refused and "part of the trained model `model`" in result.refused, result.refused
    assert "where the script's condition skips that line" in result.refused, result.refused


def test_module_compile_on_a_part_is_refused_too():
    result = convert_source(PLAIN.replace("COMPILE", "model.encoder.compile()"), "t.py")
    assert result.refused is not None, result.text
    assert "model.encoder.compile(...) at line 25" in result.refused, result.refused


def test_an_accelerate_script_compiling_a_part_gets_no_plugin_on_top():
    result = convert_source(ACCELERATED.replace("COMPILE", "model[0] = torch.compile(model[0])"), "t.py")
    assert result.refused is not None, result.text
    assert "torch.compile(...) at line 11" in result.refused and "model[0]" in result.refused, result.refused
    assert "condition" not in result.refused, result.refused  # an unconditional compile


def test_compiling_the_whole_model_still_converts():
    result = convert_source(PLAIN.replace("COMPILE", "model = torch.compile(model)"), "t.py")
    assert result.refused is None, result.refused
    assert 'TorchDynamoPlugin(backend="inductor" if args.compile_encoder else "no")' in result.text, result.text


def test_blocks_compiled_one_by_one_into_the_model_are_refused():
    loop = "for i, layer in enumerate(model):\n        model[i] = torch.compile(layer)"
    result = convert_source(ACCELERATED.replace("COMPILE", loop), "t.py")
    assert result.refused is not None, result.text
    assert "torch.compile(...) at line 12 compiles layer into model[i]" in result.refused, result.refused


# Session 19e left these alone: the compiled block is a loop variable, not a subscript of the model,
# so the conversion saw no part and the plugin compiled the whole model around the blocks.


def _refusal(script: str, compile_lines: str) -> str:
    result = convert_source(script.replace("COMPILE", compile_lines), "t.py")
    assert result.refused is not None, result.text
    return result.refused


def test_module_compile_of_each_block_over_the_model_is_refused_naming_the_loop():
    refused = _refusal(ACCELERATED, "for block in model:\n        block.compile()")
    assert "block.compile(...) at line 12" in refused and "`for block in model` (line 11)" in refused, refused
    assert "part of the trained model `model`" in refused, refused
    assert "use_regional_compilation=True would not be the same" in refused, refused


def test_module_compile_of_enumerated_blocks_of_a_plain_script_is_refused():
    refused = _refusal(PLAIN, 'for i, b in enumerate(model.encoder):\n            b.compile(mode="max-autotune")')
    assert "b.compile(...) at line 26" in refused, refused
    assert "`for i, b in enumerate(model.encoder)` (line 25)" in refused, refused
    assert "where the script's condition skips that line" in refused, refused


def test_compiled_children_assigned_back_by_position_are_refused():
    refused = _refusal(ACCELERATED, "for i, b in enumerate(model.children()):\n        model[i] = torch.compile(b)")
    assert "compiles b into model[i], each module of `for i, b in enumerate(model.children())`" in refused, refused


def test_a_loop_over_something_else_still_converts():
    loop = "for f in [torch.sin]:\n        f = torch.compile(f)"
    result = convert_source(ACCELERATED.replace("COMPILE", loop), "t.py")
    assert result.refused is None, result.refused


def test_blocks_compiled_in_a_comprehension_put_back_are_refused():
    """``model.blocks = nn.ModuleList([torch.compile(b) for b in model.blocks])``: the same hand
    regional compile, written as a comprehension."""
    refused = _refusal(PLAIN, "model.encoder = nn.Sequential(*[torch.compile(b) for b in model.encoder])")
    assert "torch.compile(...) at line 25 compiles b, each module of `for b in model.encoder`" in refused, refused


def test_a_discarded_compile_of_each_block_is_left_as_dead_code():
    """``torch.compile(b)`` as a statement compiles nothing (its result is dropped): the original
    trained uncompiled, as for a discarded compile of the whole model; not refused."""
    loop = "for b in model:\n        torch.compile(b)"
    result = convert_source(ACCELERATED.replace("COMPILE", loop), "t.py")
    assert result.refused is None, result.refused


def _built_by(body: str, script: str = PLAIN) -> str:
    """The script with its model made by ``build()``, a function of the file whose body is ``body``."""
    return script.replace("def main():", f"def build():\n    m = Net()\n{body}    return m\n\n\ndef main():").replace(
        "    model = Net()\n", "    model = build()\n"
    )


def test_a_compile_inside_the_function_that_builds_the_model_is_refused_naming_it():
    """A compile in the model's builder was not seen: the plugin compiled the model again in
    prepare(), ignoring the builder's own settings, and the hand loop's blocks twice."""
    for body, origin in (
        ("    for b in m.encoder:\n        b.compile()\n", "b.compile(...) at line 21"),
        ("    m.compile(mode='max-autotune')\n", "m.compile(...) at line 20"),
        ("    m.encoder = torch.compile(m.encoder)\n", "torch.compile(...) at line 20"),
        ("    m = torch.compile(m)\n", "torch.compile(...) at line 20"),
    ):
        refused = _refusal(_built_by(body), "pass")
        assert origin in refused, (body, refused)
        assert "in build(), which makes the trained model `model` (model = build(...) at line" in refused, refused


def test_a_builder_without_a_compile_still_converts():
    result = convert_source(_built_by("    m.train()\n").replace("COMPILE", "pass"), "t.py")
    assert result.refused is None, result.refused
