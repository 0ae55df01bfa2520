"""RC401 behaviour beyond the examples: span, fix levels, what the fix keeps, round trips."""

from __future__ import annotations

from regcomp_lint.api import fix_source, lint_source
from regcomp_lint.diagnostics import Applicability, Location
from regcomp_lint.lint.config import Settings

ONLY = Settings(select=("RC401",))
ACC = "from accelerate import Accelerator\n"


def rc401(src: str):
    return [d for d in lint_source(src, "train.py", ONLY) if d.code == "RC401"]


def test_span_is_the_whole_call():
    [diag] = rc401(ACC + "accelerator = Accelerator()\nfor b in dl:\n    (loss / 2).backward()\n")
    assert (diag.location, diag.end_location) == (Location(4, 5), Location(4, 26))


def test_safe_fix_is_applied_by_default_and_is_idempotent():
    src = ACC + "accelerator = Accelerator()\nloss.backward()\n"
    fixed, remaining = fix_source(src, config=ONLY)
    assert fixed == ACC + "accelerator = Accelerator()\naccelerator.backward(loss)\n"
    assert remaining == []
    assert fix_source(fixed, config=ONLY)[0] == fixed


def test_multiline_receiver_keeps_its_comment_and_newlines():
    src = ACC + "acc = Accelerator()\r\n(\r\n    loss  # the main loss\r\n    + aux\r\n).backward()\r\n"
    fixed, _ = fix_source(src, config=ONLY)
    assert fixed.endswith("acc.backward(loss  # the main loss\r\n    + aux)\r\n")


def test_keywords_and_double_star_are_carried():
    src = ACC + "acc = Accelerator()\nloss.backward(\n    retain_graph=True,\n    **extra,\n)\n"
    fixed, _ = fix_source(src, config=ONLY)
    assert fixed.endswith("acc.backward(loss, retain_graph=True,\n    **extra)\n")


def test_accelerator_built_in_two_branches_is_one_name():
    src = (
        ACC
        + "if cfg:\n    accelerator = Accelerator(log_with='all')\nelse:\n    accelerator = Accelerator()\nloss.backward()\n"
    )
    [diag] = rc401(src)
    assert diag.fix.applicability is Applicability.SAFE
    assert fix_source(src, config=ONLY)[0].endswith("accelerator.backward(loss)\n")


def test_closure_sees_the_enclosing_accelerator():
    src = (
        ACC
        + "def main():\n    accelerator = Accelerator()\n    def step(loss):\n        loss.backward()\n    return step\n"
    )
    assert fix_source(src, config=ONLY)[0].endswith("        accelerator.backward(loss)\n    return step\n")


def test_unannotated_parameter_named_accelerator_is_an_unsafe_guess():
    src = ACC + "def step(accelerator, loss):\n    loss.backward()\ndef main():\n    acc = Accelerator()\n"
    [diag] = rc401(src)
    assert diag.fix.applicability is Applicability.UNSAFE
    assert fix_source(src, config=ONLY)[0] == src
    assert "    accelerator.backward(loss)\n" in fix_source(src, config=ONLY, unsafe=True)[0]


def test_self_attribute_wins_over_a_module_name_for_the_same_accelerator():
    src = ACC + (
        "accelerator = Accelerator()\nclass T:\n    def __init__(self):\n        self.acc = accelerator\n"
        "    def step(self, loss):\n        loss.backward()\n"
    )
    assert fix_source(src, config=ONLY)[0].endswith("        self.acc.backward(loss)\n")


def test_name_shadowed_by_another_value_is_not_used():
    src = ACC + "acc = Accelerator()\ndef step(loss, acc=None):\n    loss.backward()\n"
    [diag] = rc401(src)
    assert diag.fix is None


def test_module_receivers_and_positional_engines_are_not_reported():
    src = ACC + (
        "import torch\nacc = Accelerator()\ntorch.autograd.backward(loss)\n"
        "model_engine.backward(loss)\nself_accelerator.backward(loss)\n"
    )
    assert rc401(src) == []


def test_any_import_spelling_of_accelerator():
    for head, call in (
        ("import accelerate as A\n", "A.Accelerator()"),
        ("from accelerate.accelerator import Accelerator as X\n", "X()"),
    ):
        src = head + f"acc = {call}\nloss.backward()\n"
        assert fix_source(src, config=ONLY)[0].endswith("acc.backward(loss)\n"), head
