"""RC104 behaviour beyond the examples: what runs once and what runs again, precisely."""

from __future__ import annotations

import pytest

from regcomp_lint.api import lint_source
from regcomp_lint.diagnostics import Location


def rc104(src: str):
    return [d for d in lint_source(src, "train.py") if d.code == "RC104"]


def test_finding_spans_the_compile_call():
    [diag] = rc104("import torch\nfor b in loader:\n    y = torch.compile(model)(b)\n")
    assert (diag.location, diag.end_location) == (Location(3, 9), Location(3, 29))
    assert diag.fix is None


@pytest.mark.parametrize(
    "src",
    [
        # evaluated when the def/class statement runs, i.e. on every iteration
        "import torch\nfor i in range(3):\n    def f(x, g=torch.compile(model)):\n        return g(x)\n",
        "import torch\nfor i in range(3):\n    class A:\n        fn = torch.compile(model)\n",
        "import torch\nfor i in range(3):\n    h = lambda x, g=torch.compile(model): g(x)\n",
        "import torch\nwhile torch.compile(model)(x).sum() > 0:\n    x = x - 1\n",
        "import torch\nouts = list(torch.compile(model)(x) for x in xs)\n",
        "import torch\nouts = [y for x in xs for y in torch.compile(model)(x)]\n",
        "import torch\nouts = [x for x in xs if torch.compile(model)(x)]\n",
        "import torch\nfor epoch in range(3):\n    blocks = [torch.compile(b) for b in model.blocks]\n",
        "import torch\nfor epoch in range(3):\n    for i, layer in enumerate(model.layers):\n        model.layers[i] = torch.compile(layer)\n",
        "import torch\nfor i in range(3):\n    try:\n        model = torch.compile(model)\n    except RuntimeError:\n        pass\n",
    ],
)
def test_runs_on_every_iteration(src):
    assert len(rc104(src)) == 1


@pytest.mark.parametrize(
    "src",
    [
        # the body of a function defined in a loop only runs when called
        "import torch\nfor i in range(3):\n    h = lambda x: torch.compile(model)(x)\n",
        "import torch\nfor i in range(3):\n    class A:\n        def forward(self, x):\n            return torch.compile(model)(x)\n",
        # a new model per iteration, built from a name the loop rebinds
        "import torch\nfor cfg in cfgs:\n    model = build(cfg)\n    for layer in model.layers:\n        layer.compile()\n",
        "import torch\nfor cfg in cfgs:\n    model = build(cfg)\n    blocks = [torch.compile(b) for b in model.blocks]\n",
        "import torch\nwith open(p) as f:\n    for line in f:\n        pass\nmodel = torch.compile(model)\n",
        # return right after: the loop body runs the compile at most once
        "import torch\ndef first(models):\n    for m in models:\n        c = torch.compile(model)\n        return c\n",
    ],
)
def test_runs_once(src):
    assert rc104(src) == []


def test_decorated_def_in_loop_is_reported_once_with_loop_message():
    [diag] = rc104(
        "import torch\nfor i in range(3):\n    @torch.compile(fullgraph=True)\n    def f(x):\n        return x\n"
    )
    assert "loop on line 2" in diag.message
    assert diag.location == Location(3, 6)


def test_nested_decorator_names_outer_function():
    [diag] = rc104("import torch\nasync def outer():\n    @torch.compile\n    async def inner(x):\n        return x\n")
    assert "`outer()`" in diag.message and "`inner`" in diag.message


def test_optimize_decorator_in_loop_is_reported_once():
    src = "import torch\nfor i in range(3):\n    @torch._dynamo.optimize('eager')\n    def f(x):\n        return x\n"
    assert len(rc104(src)) == 1
