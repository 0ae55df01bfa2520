"""The ``accelerator`` parameter added to a helper's signature keeps the signature's layout.

Survey 23f (a GPT-2 DDP script, ``train_one_epoch(..., tracer: ChakraTracer = None\\n)``): a
signature written one parameter per line without a trailing comma and with a default before the
closing parenthesis became ``tracer: ChakraTracer = None, \\n*, accelerator):``, the ``*`` at
column 0 after a trailing blank. Valid Python, but not what a person would write: the newline
before ``)`` belongs after the new last parameter.
"""

from __future__ import annotations

import ast

import pytest

from regcomp_lint.codemod import convert_source

SCRIPT = """\
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def train_one_epoch(
    model,
    loader,
    optimizer{default}
):
    for x, y in loader:
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()


def main():
    model = nn.Linear(8, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(TensorDataset(torch.randn(64, 8), torch.randn(64, 1)), batch_size=8)
    for epoch in range(2):
        train_one_epoch(model, loader, optimizer)


if __name__ == "__main__":
    main()
"""

EXPECTED = {
    "": "    optimizer,\n    accelerator\n):\n",
    ",\n    tracer=None": "    tracer=None,\n    *,\n    accelerator\n):\n",
}


@pytest.mark.parametrize("default", list(EXPECTED))
def test_the_new_parameter_takes_the_line_before_the_parenthesis(default: str) -> None:
    result = convert_source(SCRIPT.replace("{default}", default), "train.py")
    assert result.changed, result.refused
    ast.parse(result.text)
    assert EXPECTED[default] in result.text, result.text
    assert ", \n" not in result.text
