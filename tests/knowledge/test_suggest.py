from __future__ import annotations

import pytest

from regcomp_lint.knowledge import backends as B
from regcomp_lint.knowledge.modes import INDUCTOR_MODES
from regcomp_lint.knowledge.suggest import did_you_mean


@pytest.mark.parametrize(
    "typo,meant",
    [
        ("inductr", "inductor"),
        ("Inductor", "inductor"),
        (" inductor ", "inductor"),
        ("aot-eager", "aot_eager"),
        ("cudagraph", "cudagraphs"),
        ("indcutor", "inductor"),
    ],
)
def test_backend_typos(typo, meant):
    assert did_you_mean(typo, B.TORCH_SUGGESTIONS) == meant


@pytest.mark.parametrize(
    "typo,meant",
    [
        ("max_autotune", "max-autotune"),
        ("Reduce-Overhead", "reduce-overhead"),
        ("defualt", "default"),
        ("max-autotune-no-cudagraph", "max-autotune-no-cudagraphs"),
    ],
)
def test_mode_typos(typo, meant):
    assert did_you_mean(typo, INDUCTOR_MODES, separator="-") == meant


@pytest.mark.parametrize("value", ["mytrt", "xla", "", "   ", "fast", "max"])
def test_no_suggestion_when_unsure(value):
    assert did_you_mean(value, [*B.TORCH_SUGGESTIONS, *INDUCTOR_MODES]) is None
