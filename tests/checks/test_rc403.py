"""RC403 behaviour beyond the examples: which devices count as fixed CUDA ones, spans, fix level."""

from __future__ import annotations

import pytest

from regcomp_lint.api import fix_source, lint_source
from regcomp_lint.diagnostics import Applicability, Location
from regcomp_lint.lint.config import Settings

ONLY = Settings(select=("RC403",))
ACC = "import torch\nfrom accelerate import Accelerator\naccelerator = Accelerator()\n"


def rc403(src: str):
    return [d for d in lint_source(src, "train.py", ONLY) if d.code == "RC403"]


@pytest.mark.parametrize(
    "device",
    [
        "'cuda'",
        "'CUDA:1'",
        "f'cuda:{rank}'",
        "'cuda:' + str(rank)",
        "torch.device('cuda', rank)",
        "torch.device(type='cuda')",
        "torch.cuda.current_device()",
        "'cuda' if torch.cuda.is_available() else 'cpu'",
    ],
)
def test_fixed_cuda_devices(device):
    assert len(rc403(ACC + f"dev = {device}\nx = x.to(dev)\n")) == 1


@pytest.mark.parametrize(
    "device",
    [
        "accelerator.device",
        "'cpu'",
        "torch.float16",
        "x.device",
        "'mps'",
        "rank",
    ],
)
def test_devices_that_are_not_fixed_cuda(device):
    assert rc403(ACC + f"dev = {device}\nx = x.to(dev)\n") == []


def test_span_and_fix_level():
    [diag] = rc403(ACC + "model = Net().cuda()\n")
    assert (diag.location, diag.end_location) == (Location(4, 9), Location(4, 21))
    assert diag.fix.applicability is Applicability.UNSAFE
    assert fix_source(ACC + "model = Net().cuda()\n", config=ONLY)[0].endswith("model = Net().cuda()\n")


def test_cuda_keywords_are_kept_and_device_dropped():
    src = ACC + "x = x.cuda(device=1, non_blocking=True, memory_format=torch.channels_last)\n"
    fixed, remaining = fix_source(src, config=ONLY, unsafe=True)
    assert fixed.endswith("x = x.to(accelerator.device, non_blocking=True, memory_format=torch.channels_last)\n")
    assert remaining == []


def test_not_reported_without_an_accelerator():
    assert rc403("import torch\nmodel = Net().cuda()\nx = x.to('cuda')\n") == []


def test_two_accelerators_no_fix():
    src = "from accelerate import Accelerator\na = Accelerator()\nb = Accelerator()\nx = x.cuda()\n"
    [diag] = rc403(src)
    assert diag.fix is None
    assert "accelerator.device" in diag.message
