"""A model compiled by hand in a helper of the script (``model, on, why = maybe_compile_model(model,
device, config)``, its ``torch.compile`` left in place): prepare() wraps the compiled model, and on
several processes ``accelerator.unwrap_model(model, keep_torch_compile=False)`` strips DDP only,
handing back the compile wrapper. survey26d room_baseline (a replica of its no-``with`` variant,
converted on main): the 2-process run saved ``_orig_mod.emb.weight`` ... where the original saved
``emb.weight``. The conversion refuses, naming the helper's compile and the call."""

from __future__ import annotations

from regcomp_lint.codemod import ConvertOptions, convert_source

SCRIPT = """\
import torch
from torch.utils.data import DataLoader, TensorDataset


def maybe_compile_model(model, use):
    if not use:
        return model, False
    compiled = torch.compile(model, mode="default")
    return compiled, True


def main():
    model = torch.nn.Linear(4, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(TensorDataset(torch.randn(8, 4), torch.randint(0, 2, (8,))), batch_size=4)
    model, on = maybe_compile_model(model, True)
    plain = model._orig_mod if hasattr(model, "_orig_mod") else model
    for x, y in loader:
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
    torch.save(plain.state_dict(), "model.pt")


main()
"""


def test_a_model_compiled_in_a_helper_is_refused_naming_the_helper():
    result = convert_source(SCRIPT, "train.py", ConvertOptions())
    assert result.refused is not None
    assert "maybe_compile_model(...) at line 16" in result.refused, result.refused
    assert "torch.compile at line 8" in result.refused, result.refused


def test_a_helper_that_compiles_something_else_still_converts():
    text = SCRIPT.replace(
        "    model, on = maybe_compile_model(model, True)\n",
        "    other, on = maybe_compile_model(torch.nn.Linear(2, 2), True)\n",
    )
    result = convert_source(text, "train.py", ConvertOptions())
    assert result.refused is None, result.refused


def test_a_helper_returning_the_compile_itself_is_refused_too():
    text = SCRIPT.replace(
        '    compiled = torch.compile(model, mode="default")\n    return compiled, True\n',
        '    return torch.compile(model, mode="default"), True\n',
    )
    result = convert_source(text, "train.py", ConvertOptions())
    assert result.refused is not None
    assert "torch.compile at line 8" in result.refused, result.refused
