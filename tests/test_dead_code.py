"""Findings in code a constant-false flag keeps from running are dropped (issue 13: RC501 fired
on a compile switched off two lines above)."""

from __future__ import annotations

import ast
import textwrap

import pytest

from regcomp_lint.analysis.dead_code import dead_spans, is_dead, may_have_dead_code
from regcomp_lint.api import lint_source

MODEL = textwrap.dedent(
    """
    import torch
    from torch import nn

    class Block(nn.Module):
        def forward(self, x):
            return x

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = nn.ModuleList([Block() for _ in range(4)])

        def forward(self, x):
            for b in self.blocks:
                x = b(x)
            return x

    model = GPT()
    """
)


def rc501(tail: str) -> list[int]:
    return [d.location.row for d in lint_source(MODEL + textwrap.dedent(tail), "train.py") if d.code == "RC501"]


@pytest.mark.parametrize(
    "tail",
    [
        "use_compile = False\nif use_compile:\n    model = torch.compile(model)\n",
        "use_compile = 0\nmodel = torch.compile(model) if use_compile else model\n",
        "if False:\n    model = torch.compile(model)\n",
        "eager = None\nif not eager:\n    pass\nelse:\n    model = torch.compile(model)\n",
        "use_compile = False\nif use_compile and torch.cuda.is_available():\n    model = torch.compile(model)\n",
    ],
)
def test_rc501_is_silent_on_a_compile_switched_off_by_a_constant(tail):
    assert rc501(tail) == []


@pytest.mark.parametrize(
    "tail",
    [
        "use_compile = True\nif use_compile:\n    model = torch.compile(model)\n",
        # a second binding: the flag may be switched on (argparse, a loop, a function argument)
        "use_compile = False\nif args.c:\n    use_compile = True\nif use_compile:\n    model = torch.compile(model)\n",
        "use_compile = False\nfor use_compile in (True,):\n    pass\nif use_compile:\n    model = torch.compile(model)\n",
        "import os\nif os.environ.get('COMPILE'):\n    model = torch.compile(model)\n",
    ],
)
def test_rc501_still_fires_where_the_compile_may_run(tail):
    assert len(rc501(tail)) == 1


def test_spans_cover_only_the_dead_arm():
    tree = ast.parse("flag = False\nif flag:\n    a = 1\nelse:\n    b = 2\nc = x if flag else y\n")
    spans = dead_spans(tree)
    names = {n.id: is_dead(n, spans) for n in ast.walk(tree) if isinstance(n, ast.Name)}
    assert names["a"] is True and names["b"] is False
    assert names["x"] is True and names["y"] is False and names["c"] is False


@pytest.mark.parametrize(
    "src",
    [
        "use_compile = False\nif use_compile:\n    x = 1\n",
        "flag = 0\nwhile flag:\n    break\n",
        "flag: bool = None\ny = 1 if x and (flag) else 2\n",
        "if False:\n    x = 1\n",
        "if True:\n    x = 1\nelse:\n    y = 2\n",
    ],
)
def test_the_text_prefilter_never_hides_a_dead_region(src):
    """may_have_dead_code is only a shortcut: wherever the tree has a dead region, it says so."""
    tree = ast.parse(src)
    assert dead_spans(tree) != []
    assert may_have_dead_code(src) and dead_spans(tree, src) == dead_spans(tree)


def test_files_without_flags_skip_the_walk():
    src = "x = None\nfor i in range(3):\n    x = i\n"
    assert not may_have_dead_code(src) and dead_spans(ast.parse(src), src) == []


@pytest.mark.parametrize(
    "src",
    [
        "use_compile = False\nif use_compile:\n    x = 1\n",
        "flag = 0\nwhile flag:\n    break\n",
        "flag: bool = None\ny = 1 if x and (flag) else 2\n",
        "if True:\n    x = 1\nelse:\n    y = 2\n",
        "flag = False\n(flag, other) = (1, 2)\nif flag:\n    x = 1\n",  # a second binding, in a tuple
        "flag = False\nwith f() as [*flag]:\n    pass\nif flag:\n    x = 1\n",
        "flag = None\ndel flag\nif flag:\n    x = 1\n",
        "flag = False\ndef f(flag=1):\n    if flag:\n        x = 1\n",
        "flag = False\nexec(open('c.py').read())\nif flag:\n    x = 1\n",  # a configurator
    ],
)
def test_the_engine_walk_feeds_the_same_regions_as_a_walk_of_its_own(src):
    from regcomp_lint.analysis.file_context import FileContext
    from regcomp_lint.files.source import SourceFile
    from regcomp_lint.lint.engine import walk

    tree = ast.parse(src)
    ctx = FileContext(SourceFile("f.py", src), tree)
    dead = ctx.semantic.dead_code
    walk(ctx, [])
    assert dead.spans() == dead_spans(tree)
