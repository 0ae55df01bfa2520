"""Statements that may rebind any global (analysis/global_rebinders.py), read by dead_code and regcomp-fix."""

from __future__ import annotations

import ast

import pytest

from regcomp_lint.analysis.dead_code import dead_spans
from regcomp_lint.analysis.global_rebinders import rebinds_globals


@pytest.mark.parametrize(
    "src,rebinds",
    [
        ("exec(open('configurator.py').read())", True),
        ("globals().update(config)", True),
        ("config.update(globals())", False),
        ("def f():\n    exec(code)", False),  # only when it runs: a definition does not
        ("print('exec')", False),
    ],
)
def test_rebinds_globals(src, rebinds):
    assert rebinds_globals(ast.parse(src).body[0]) is rebinds


def test_a_flag_above_a_configurator_is_not_dead_code():
    """nanoGPT: `compile = False` is a default `--compile=True` may override through the configurator."""
    flagged = "compile = False\n{}if compile:\n    model = torch.compile(model)\n"
    assert dead_spans(ast.parse(flagged.format(""))) != []
    assert dead_spans(ast.parse(flagged.format("exec(open('configurator.py').read())\n"))) == []
