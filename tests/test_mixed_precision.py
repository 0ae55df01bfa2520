"""A script's own mixed precision (analysis/mixed_precision.py): GradScalers and autocast regions."""

from __future__ import annotations

import ast
import textwrap

import pytest

from regcomp_lint.analysis.file_context import FileContext
from regcomp_lint.analysis.mixed_precision import MixedPrecision
from regcomp_lint.files.source import SourceFile
from regcomp_lint.lint.engine import walk


class Script:
    def __init__(self, body: str) -> None:
        src = "import torch\n" + textwrap.dedent(body)
        self.ctx = FileContext(SourceFile("t.py", src), ast.parse(src))
        roles = self.ctx.semantic.training_roles  # asked before the walk: fed by it
        walk(self.ctx, [])
        self.mixed: MixedPrecision = roles.mixed_precision

    def text(self, node: ast.AST) -> str:
        return self.ctx.source.segment(node)

    def summary(self) -> list[tuple[str | None, str | None, list[int]]]:
        """(device, dtype name, region lines) of each autocast."""
        return [(a.device, self.mixed.dtype_name(a), [w.lineno for w in a.regions]) for a in self.mixed.regions()]


def test_a_grad_scaler_means_the_script_scales_its_loss():
    script = Script("scaler = torch.amp.GradScaler('cuda')\nscaler2 = torch.cuda.amp.GradScaler()\n")
    assert script.mixed.scales_loss
    assert [script.text(c.func) for c in script.mixed.grad_scalers] == [
        "torch.amp.GradScaler",
        "torch.cuda.amp.GradScaler",
    ]


def test_no_grad_scaler_no_own_scaling():
    script = Script("with torch.autocast('cuda', dtype=torch.bfloat16):\n    y = 1\n")
    assert not script.mixed.scales_loss


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("with torch.autocast('cuda', dtype=torch.bfloat16):\n    pass\n", [("cuda", "bfloat16", [2])]),
        ("with torch.autocast(device_type='cuda'):\n    pass\n", [("cuda", "float16", [2])]),
        ("with torch.amp.autocast('cpu'):\n    pass\n", [("cpu", "bfloat16", [2])]),
        ("with torch.cuda.amp.autocast():\n    pass\n", [("cuda", "float16", [2])]),
        ("with torch.cuda.amp.autocast(True, torch.bfloat16):\n    pass\n", [("cuda", "bfloat16", [2])]),
        ("with torch.cpu.amp.autocast(dtype=torch.half):\n    pass\n", [("cpu", "float16", [2])]),
        # a device read at run time: its default dtype is unknown, a written dtype is not
        ("with torch.autocast(device_type=dev):\n    pass\n", [(None, None, [2])]),
        ("with torch.autocast(dev, dtype=torch.float16):\n    pass\n", [(None, "float16", [2])]),
        ("with torch.autocast(dev, dtype=ptdtype):\n    pass\n", [(None, None, [2])]),
    ],
)
def test_device_and_dtype_of_each_autocast(body: str, expected: list):
    assert Script(body).summary() == expected


def test_an_autocast_entered_through_a_name_in_several_places():
    script = Script("""\
        from contextlib import nullcontext
        ptdtype = torch.bfloat16
        ctx = nullcontext() if device_type == "cpu" else torch.amp.autocast(device_type=device_type, dtype=ptdtype)
        for step in range(10):
            with ctx:
                loss = model(x)
        def evaluate():
            with ctx, torch.no_grad():
                return model(x)
        """)
    (autocast,) = script.mixed.regions()
    assert script.text(autocast.call).startswith("torch.amp.autocast(")
    assert [w.lineno for w in autocast.regions] == [6, 9]


def test_a_with_of_something_else_is_no_region():
    script = Script("""\
        amp = torch.autocast("cuda")
        with torch.no_grad():
            pass
        with open("f") as f:
            pass
        """)
    assert script.summary() == [("cuda", "float16", [])]


def test_an_unrelated_autocast_name_is_not_torchs():
    script = Script("def autocast():\n    pass\nwith autocast():\n    pass\n")
    assert script.mixed.regions() == []
