"""RC106 behaviour beyond the examples: which keyword is pointed at, the display-only fix."""

from __future__ import annotations

import ast

from regcomp_lint.api import fix_source, lint_source
from regcomp_lint.diagnostics import Applicability, Location
from regcomp_lint.files.source import apply_edits

HEADER = "from accelerate import Accelerator\n"


def rc106(src: str):
    return [d for d in lint_source(src, "train.py") if d.code == "RC106"]


def test_points_at_the_second_keyword_in_either_order():
    [diag] = rc106(HEADER + "Accelerator(dynamo_backend='eager', dynamo_plugin=p)\n")
    assert (diag.location, diag.end_location) == (Location(2, 37), Location(2, 52))
    [diag] = rc106(HEADER + "Accelerator(dynamo_plugin=p, dynamo_backend='eager')\n")
    assert (diag.location, diag.end_location) == (Location(2, 30), Location(2, 52))


def test_fix_is_display_only_and_never_applied():
    src = HEADER + "acc = Accelerator(dynamo_plugin=p, dynamo_backend='eager')\n"
    [diag] = rc106(src)
    assert diag.fix.applicability is Applicability.DISPLAY
    assert fix_source(src, unsafe=True)[0].count("dynamo_backend") == 1


def test_shown_fix_drops_the_backend_keyword_and_its_comma():
    for call, expected in [
        ("Accelerator(dynamo_plugin=p, dynamo_backend='eager')", "Accelerator(dynamo_plugin=p)"),
        ("Accelerator(dynamo_backend='eager', dynamo_plugin=p)", "Accelerator(dynamo_plugin=p)"),
        ("Accelerator(\n    dynamo_backend='eager',\n    dynamo_plugin=p,\n)", "Accelerator(\n    dynamo_plugin=p,\n)"),
    ]:
        src = HEADER + call + "\n"
        [diag] = rc106(src)
        shown = apply_edits(src, list(diag.fix.edits))
        ast.parse(shown)
        assert shown == HEADER + expected + "\n"


def test_message_quotes_the_error_accelerate_raises():
    [diag] = rc106(HEADER + "Accelerator(dynamo_plugin=p, dynamo_backend=b)\n")
    assert "ValueError" in diag.message
