"""The properties the fuzz tests and ``bench/fuzz.py`` check on one generated program.

Each returns nothing and raises ``AssertionError`` when the property does not hold.
"""

from __future__ import annotations

import ast

import libcst as cst

from regcomp_lint import api
from regcomp_lint.codemod.convert import convert_source
from regcomp_lint.lint.config import Settings

SETTINGS = Settings()
#: Appended so the conversion really runs (libcst, metadata, edits) on the generated code.
TRAINING = """
import torch
model = torch.nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    loss = model(torch.randn(8, 4)).sum()
    loss.backward()
    optimizer.step()
"""


def lint_never_raises(code: str) -> None:
    found = api.lint_source(code, "gen.py", SETTINGS)
    assert not any("internal error" in d.message for d in found), found


def fix_parses_and_is_idempotent(code: str) -> None:
    fixed, _ = api.fix_source(code, "gen.py", SETTINGS, unsafe=True)
    if fixed != code:
        ast.parse(fixed)
    again, _ = api.fix_source(fixed, "gen.py", SETTINGS, unsafe=True)
    assert again == fixed


def cst_round_trip(code: str) -> bool:
    """libcst prints back what it parsed; where it does not (it has gaps: a last line of only
    spaces, a lone-CR file end), the conversion must refuse and change nothing. True: exact."""
    exact = True
    for newline in ("\n", "\r\n", "\r"):
        text = (code + TRAINING).replace("\n", newline)
        try:
            same = cst.parse_module(text).code == text
        except Exception:  # noqa: BLE001 - libcst rejects some valid code (form feeds)
            same = False
        if not same and newline != "\r":  # lone-CR files are converted with LF and given their CRs back
            exact = False
            assert not convert_source(text, "gen.py").changed, "converted a file libcst cannot reproduce"
    return exact


def convert_parses_idempotent_and_keeps_lines(code: str) -> None:
    text = code + TRAINING
    first = convert_source(text, "gen.py")
    out = first.text
    ast.parse(out)
    if first.changed:
        second = convert_source(out, "gen.py")
        assert second.text == out, "conversion is not idempotent"
    # every line of the generated part survives, in order (imports may be inserted among them)
    remaining = iter(out.splitlines())
    for line in code.splitlines():
        assert any(line == other for other in remaining), f"line lost or changed: {line!r}"


ALL = (lint_never_raises, fix_parses_and_is_idempotent, cst_round_trip, convert_parses_idempotent_and_keeps_lines)
