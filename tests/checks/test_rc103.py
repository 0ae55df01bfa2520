"""RC103 behaviour beyond the examples: the span, and the display-only fix's content."""

from __future__ import annotations

import ast

from regcomp_lint.api import fix_source, lint_source
from regcomp_lint.diagnostics import Applicability, Location
from regcomp_lint.files.source import apply_edits


def rc103(src: str):
    return [d for d in lint_source(src, "train.py") if d.code == "RC103"]


def shown_fix(src: str) -> str:
    [diag] = rc103(src)
    assert diag.fix.applicability is Applicability.DISPLAY
    text = apply_edits(src, list(diag.fix.edits))
    ast.parse(text)
    return text


def test_span_covers_both_keywords_in_source_order():
    [diag] = rc103("import torch\nm = torch.compile(m, options={}, mode='default')\n")
    assert diag.location == Location(2, 22)
    assert diag.end_location == Location(2, 48)


def test_display_fix_is_never_applied():
    src = "import torch\nm = torch.compile(m, mode='max-autotune', options={'a': 1})\n"
    assert fix_source(src, unsafe=True)[0] == src


def test_display_fix_moves_mode_settings_into_options():
    src = "import torch\nm = torch.compile(m, mode='max-autotune', options={'max_autotune': False})\n"
    assert shown_fix(src) == (
        "import torch\nm = torch.compile(m, options={'max_autotune': False, "
        "'triton.cudagraphs': True, 'coordinate_descent_tuning': True})\n"
    )


def test_display_fix_fills_an_empty_dict_and_handles_decorators():
    src = "import torch\n@torch.compile(mode='reduce-overhead', options={})\ndef f(x):\n    return x\n"
    assert (
        shown_fix(src) == "import torch\n@torch.compile(options={'triton.cudagraphs': True})\ndef f(x):\n    return x\n"
    )


def test_default_mode_just_disappears():
    src = "import torch\nm = torch.compile(m, options={'a': 1}, mode='default')\n"
    assert shown_fix(src) == "import torch\nm = torch.compile(m, options={'a': 1})\n"


def test_no_fix_for_unknown_mode_or_non_dict_display():
    [unknown] = rc103("import torch\nm = torch.compile(m, mode='fast', options={})\n")
    [comp] = rc103("import torch\nm = torch.compile(m, mode='default', options=dict(a=1))\n")
    assert unknown.fix is None and comp.fix is None


def test_shadowed_dict_is_not_a_literal():
    assert rc103("import torch\nfrom mylib import dict\nm = torch.compile(m, mode='default', options=dict())\n") == []
