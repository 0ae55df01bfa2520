"""``torch.compile(model)`` as a statement, its result discarded, compiles nothing (survey 19a,
an SST forecaster's ``mp.spawn`` worker: ``torch.compile(auto_encoder)`` then
``DistributedDataParallel(auto_encoder, ...)``): torch.compile returns a new wrapper and leaves
the model as it is, so the original trains uncompiled. The conversion refused it as "compiles the
model in a way the conversion does not take apart" and advised ``model = torch.compile(model)``,
which is not what the line does. Now the dead statement goes, with a note that says so, and the
script converts as an uncompiled one does (the plugin compiles in prepare(); none of the dead
call's keywords reach the plugin)."""

from regcomp_lint.codemod import convert_source

SCRIPT = """\
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def main():
    loader = DataLoader(TensorDataset(torch.randn(8, 4)), batch_size=2)
    model = nn.Linear(4, 1)
    torch.compile(model, mode="max-autotune")
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for (x,) in loader:
        loss = model(x).sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    main()
"""


def test_a_discarded_compile_is_dropped_and_said_so():
    result = convert_source(SCRIPT, "train.py")
    assert result.refused is None, result.refused
    text = result.text
    assert "torch.compile(" not in text, text
    assert 'TorchDynamoPlugin(backend="inductor")' in text, text
    assert "max-autotune" not in text, text
    assert any(
        "torch.compile(...) at line 9" in note and "discarded" in note and "uncompiled" in note for note in result.notes
    ), result.notes


def test_a_used_result_still_compiles_through_the_plugin():
    result = convert_source(SCRIPT.replace("    torch.compile(model,", "    model = torch.compile(model,"), "train.py")
    assert result.refused is None, result.refused
    assert 'mode="max-autotune"' in result.text, result.text
