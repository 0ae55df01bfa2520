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


def test_set_device_of_another_value_stays_on_one_process() -> None:
    """``torch.cuda.set_device(0)`` reads nothing the conversion rewrote: it stays, but after the
    Accelerator (made before ``device = accelerator.device.type``) on one process only."""
    result = convert(_script("'cuda:0'", "torch.cuda.set_device(0)"))
    assert "    if accelerator.num_processes == 1:\n        torch.cuda.set_device(0)\n" in result.text


def _pinned_after_use(set_device: str) -> str:
    """A one-process script that pins its GPU after it placed its model: the Accelerator (made
    before the first placement) would then see GPU ``X`` made current on every rank."""
    return (
        "import argparse\nimport torch\nimport torch.nn as nn\n\n\n"
        "def main():\n"
        "    parser = argparse.ArgumentParser()\n"
        "    parser.add_argument('--gpu', type=int, default=0)\n"
        "    args = parser.parse_args()\n"
        "    model = nn.Linear(4, 2).cuda()\n"
        f"    {set_device}\n"
        "    model = torch.compile(model)\n"
        "    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "    for step in range(3):\n"
        "        loss = model(torch.randn(8, 4, device='cuda')).sum()\n"
        "        loss.backward()\n"
        "        optimizer.step()\n"
        "        optimizer.zero_grad()\n\n\n"
        "main()\n"
    )


@pytest.mark.parametrize("value", ["0", "args.gpu"])
def test_fixed_set_device_after_the_accelerator_runs_on_one_process_only(value: str) -> None:
    """survey26d: ``torch.cuda.set_device(0)`` after the Accelerator makes GPU 0 current on rank 1
    of 2, so ``device='cuda'`` batches and the model (on cuda:1) part. On one process the call
    still picks the GPU as before (``--gpu 1``); on several each process keeps its own."""
    result = convert(_pinned_after_use(f"torch.cuda.set_device({value})"))
    assert f"    if accelerator.num_processes == 1:\n        torch.cuda.set_device({value})\n" in result.text
    assert result.text.index("accelerator = Accelerator(") < result.text.index("set_device")
    assert any(f"torch.cuda.set_device({value}) at line 11 runs on one process only" in note for note in result.notes)


def test_fixed_set_device_before_the_accelerator_stays() -> None:
    """Before the Accelerator the call is harmless: on several processes the Accelerator makes each
    process's GPU current after it, on one its ``cuda`` device is the GPU the call picked."""
    text = _pinned_after_use("torch.cuda.set_device(args.gpu)").replace(
        "    model = nn.Linear(4, 2).cuda()\n    torch.cuda.set_device(args.gpu)\n",
        "    torch.cuda.set_device(args.gpu)\n    model = nn.Linear(4, 2).cuda()\n",
    )
    result = convert(text)
    assert "    torch.cuda.set_device(args.gpu)\n" in result.text
    assert "num_processes == 1" not in result.text
    assert result.text.index("set_device") < result.text.index("accelerator = Accelerator(")
