"""``torch.cuda.set_device(device)`` after a device assignment the conversion rewrote: the name
then holds ``accelerator.device`` (or its ``.type``), which on one process has no GPU index, and
``set_device`` raises ``ValueError: Expected a torch.device with a specified index`` (survey26d
gpt2_distill: ``device = 'cuda:0'``; ``torch.cuda.set_device(device)``)."""

from __future__ import annotations

import pytest

from regcomp_lint.codemod import ConversionResult, ConvertOptions, convert_source


def convert(text: str) -> ConversionResult:
    result = convert_source(text, "train.py", ConvertOptions())
    assert result.refused is None, result.refused
    return result


def _script(device: str, set_device: str = "torch.cuda.set_device(device)") -> str:
    return (
        "import torch\nimport torch.nn as nn\n\n\n"
        "def main():\n"
        f"    device = {device}\n"
        f"    {set_device}\n"
        "    model = nn.Linear(4, 2).to(device)\n"
        "    model = torch.compile(model)\n"
        "    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "    for step in range(3):\n"
        "        loss = model(torch.randn(8, 4, device=device)).sum()\n"
        "        loss.backward()\n"
        "        optimizer.step()\n"
        "        optimizer.zero_grad()\n\n\n"
        "main()\n"
    )


@pytest.mark.parametrize("device", ["'cuda:0'", "torch.device('cuda:0')", "f'cuda:{0}'"])
def test_set_device_of_a_rewritten_device_is_removed(device: str) -> None:
    result = convert(_script(device))
    assert "set_device" not in result.text
    assert any("torch.cuda.set_device(device) at line 7 removed" in note for note in result.notes)


def test_set_device_of_another_value_stays() -> None:
    """``torch.cuda.set_device(0)`` reads nothing the conversion rewrote: left as it was."""
    result = convert(_script("'cuda:0'", "torch.cuda.set_device(0)"))
    assert "    torch.cuda.set_device(0)\n" in result.text
