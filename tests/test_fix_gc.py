"""``process_text`` pauses Python's cyclic garbage collector while it fixes one file and gives
it back as it found it: on after (also when the fix raises), still off when the caller had it off."""

from __future__ import annotations

import gc

import pytest

from regcomp_lint.cli import fix_command
from regcomp_lint.cli.fix_command import FixOptions, convert_options, process_text
from regcomp_lint.lint.config import Settings

SCRIPT = """import torch

model = torch.nn.Linear(2, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    loss = model(torch.ones(2)).sum()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
"""


def _fix() -> bool:
    seen: list[bool] = []
    real = fix_command.convert_source

    def watching(*args, **kwargs):
        seen.append(gc.isenabled())
        return real(*args, **kwargs)

    fix_command.convert_source = watching  # type: ignore[assignment]
    try:
        result = process_text(SCRIPT, "train.py", Settings(), convert_options(FixOptions()), unsafe=False)
    finally:
        fix_command.convert_source = real
    assert result.converted
    return seen == [False]


def test_off_while_fixing_and_on_after() -> None:
    assert gc.isenabled()
    assert _fix()
    assert gc.isenabled()


def test_left_off_when_it_was_off() -> None:
    gc.disable()
    try:
        assert _fix()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_back_on_when_the_fix_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    def failing(*args, **kwargs):
        assert not gc.isenabled()
        raise KeyError("boom")

    monkeypatch.setattr(fix_command, "convert_source", failing)
    with pytest.raises(KeyError):
        process_text(SCRIPT, "train.py", Settings(), convert_options(FixOptions()), unsafe=False)
    assert gc.isenabled()
