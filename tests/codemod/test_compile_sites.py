"""Hand compiles the plugin takes over (codemod/compile_sites.py), here the compiled alias:
``fwd_model = torch.compile(model) if args.compile else model`` trains through the second name
while ``model`` saves and loads. It becomes ``fwd_model = model`` after prepare()."""

from regcomp_lint.codemod import convert_source

SCRIPT = """\
import argparse

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--compile", action="store_true")
args = parser.parse_args()
model = torch.nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
ALIAS
for step in range(3):
    loss = fwd_model(torch.randn(2, 4)).sum()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
torch.save(model.state_dict(), "model.pt")
"""


def test_a_conditional_compiled_alias_becomes_the_prepared_model():
    result = convert_source(
        SCRIPT.replace("ALIAS", "fwd_model = torch.compile(model) if args.compile else model"), "t.py"
    )
    assert result.refused is None, result.refused
    assert 'TorchDynamoPlugin(backend="inductor" if args.compile else "no")' in result.text
    assert "model, optimizer = accelerator.prepare(model, optimizer)\nfwd_model = model\n" in result.text
    assert "accelerator.unwrap_model(model, keep_torch_compile=False).state_dict()" in result.text
    assert any("fwd_model = ... at line 10 named the compiled model" in n for n in result.notes), result.notes


def test_an_unconditional_compiled_alias_hands_its_keywords_to_the_plugin():
    result = convert_source(SCRIPT.replace("ALIAS", 'fwd_model = torch.compile(model, mode="max-autotune")'), "t.py")
    assert result.refused is None, result.refused
    assert 'TorchDynamoPlugin(backend="inductor", mode="max-autotune")' in result.text, result.text
    assert "fwd_model = model\n" in result.text


def test_a_compiled_alias_made_before_the_optimizer_is_refused():
    """Made before prepare(), the alias would name the plain model and train it outside DDP."""
    text = SCRIPT.replace("ALIAS\n", "").replace(
        "model = torch.nn.Linear(4, 1)\n",
        "model = torch.nn.Linear(4, 1)\nfwd_model = torch.compile(model) if args.compile else model\n",
    )
    result = convert_source(text, "t.py")
    assert result.refused is not None and "fwd_model = torch.compile(...) at line 9" in result.refused, result.refused
