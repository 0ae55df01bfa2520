"""A device variable the script keeps as a string stays a string after the conversion
(survey22a llmc_save, llmc_bert: llm.c's ``train_gpt2.py`` ports). ``device = args.device`` in
one branch and ``device = "cpu"`` in another, then ``device_type = 'cuda' if 'cuda' in device
else 'cpu'``: given ``accelerator.device`` (a ``torch.device``) the membership test raised
``TypeError: argument of type 'torch.device' is not iterable`` at start-up on one process."""

from __future__ import annotations

import textwrap

import pytest

from regcomp_lint.codemod import ConversionResult, ConvertOptions, convert_source

_LOOP = """
    model = torch.nn.Linear(2, 1).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(3):
        model(torch.randn(2, 2).to(device)).sum().backward()
        opt.step()
"""


def convert(setup: str) -> ConversionResult:
    """``setup`` followed by a small training loop that moves the model and the batches to ``device``."""
    result = convert_source(textwrap.dedent(setup) + textwrap.dedent(_LOOP), "train.py", ConvertOptions())
    assert result.refused is None, result.refused
    return result


def device_lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip().startswith("device = ")]


def test_a_flag_in_one_branch_and_a_literal_in_the_other_stay_strings():
    """llm.c train_gpt2.py: ``if args.device: device = args.device`` else a literal."""
    result = convert(
        """
        import argparse
        import torch
        parser = argparse.ArgumentParser()
        parser.add_argument("--device", type=str, default="cuda")
        args = parser.parse_args()
        if args.device:
            device = args.device
        else:
            device = "cpu"
            if torch.cuda.is_available():
                device = "cuda"
        device_type = 'cuda' if 'cuda' in device else 'cpu'
        """
    )
    assert device_lines(result.text) == ["device = accelerator.device.type"] * 3


def test_a_string_in_the_other_branch_makes_a_conditional_flag_a_string():
    """llm.c train_bert.py: ``f'cuda:{rank}'`` under DDP, the flag or a literal otherwise."""
    result = convert(
        """
        import argparse
        import os
        import torch
        parser = argparse.ArgumentParser()
        parser.add_argument("--device", type=str, default="")
        args = parser.parse_args()
        ddp = int(os.environ.get("RANK", -1)) != -1
        if ddp:
            device = f"cuda:{os.environ['LOCAL_RANK']}"
        else:
            device = args.device if args.device else ("cuda" if torch.cuda.is_available() else "cpu")
        device_type = 'cuda' if 'cuda' in device else 'cpu'
        """
    )
    assert device_lines(result.text) == ["device = accelerator.device.type"] * 2


def test_a_flag_read_as_a_string_stays_a_string():
    result = convert(
        """
        import argparse
        import torch
        parser = argparse.ArgumentParser()
        parser.add_argument("--device", default="cuda")
        args = parser.parse_args()
        device = args.device
        if device.startswith("cuda"):
            torch.backends.cudnn.benchmark = True
        """
    )
    assert device_lines(result.text) == ["device = accelerator.device.type"]


def test_a_device_handed_to_autocast_as_its_device_type_stays_a_string():
    """tinygpt_ddp (survey25a): ``device = define_device(local_rank)`` (a helper returning
    ``f"cuda:{local_rank}"`` or ``"cpu"``), then ``torch.autocast(device_type=device, ...)``: given
    ``accelerator.device`` it raised ``ValueError: Expected `device_type` of type `str``` at the
    first forward."""
    result = convert(
        """
        import torch
        def define_device(local_rank):
            return f"cuda:{local_rank}" if torch.cuda.is_available() else "cpu"
        device = define_device(0)
        with torch.autocast(device_type=device, dtype=torch.bfloat16):
            pass
        """
    )
    assert device_lines(result.text) == ["device = accelerator.device.type"]


_FLAG = """
import argparse
import torch
parser = argparse.ArgumentParser()
parser.add_argument("--device", default="cuda")
args = parser.parse_args()
"""


@pytest.mark.parametrize(
    "assignment",
    [
        "device = torch.device(args.device)\n",  # a torch.device stays one
        "device = args.device\n",  # a flag only handed to .to(): the accelerator's device
    ],
)
def test_a_device_no_code_reads_as_a_string_is_the_accelerators_device(assignment):
    result = convert(_FLAG + assignment)
    assert device_lines(result.text) == ["device = accelerator.device"]
