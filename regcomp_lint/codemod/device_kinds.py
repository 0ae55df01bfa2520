"""Whether a device variable of the script holds a string or a ``torch.device``.

A rewritten device assignment gives ``accelerator.device.type`` where the script kept a string
and ``accelerator.device`` where it kept a ``torch.device``: string code (``'cuda' in device``,
``device.startswith("cuda")``, ``device == "cuda"``) does not work on a ``torch.device``
(survey22a: llm.c's ``train_gpt2.py`` ports set ``device = args.device`` in one branch and
``device = "cpu"`` in another, then ``device_type = 'cuda' if 'cuda' in device else 'cpu'``;
given ``accelerator.device`` that line raised ``TypeError: argument of type 'torch.device' is
not iterable`` at start-up). The type alone loses a GPU index, which is fine: Accelerate makes
each process's GPU the current one.
"""

from __future__ import annotations

import libcst as cst

from regcomp_lint.codemod.tree import Function, find_all, key_of, single_target

#: methods of ``str`` that a script calls on a device it keeps as a string
_STRING_METHODS = frozenset({"startswith", "endswith", "split", "lower", "upper", "strip", "replace"})


def is_string_valued(value: cst.BaseExpression) -> bool:
    """A string literal, an f-string, or an ``if``/``else`` of them."""
    if isinstance(value, (cst.SimpleString, cst.FormattedString, cst.ConcatenatedString)):
        return True
    if isinstance(value, cst.IfExp):
        return is_string_valued(value.body) and is_string_valued(value.orelse)
    return False


def holds_a_string(assign: cst.Assign, scope: Function) -> bool:
    """``assign`` (``device = ...``) gives a string, or the variable is a string in ``scope``: another
    assignment there gives it one (``if args.device: device = args.device else: device = "cpu"``), or
    the scope reads it as one (``'cuda' in device``, ``device.startswith("cuda")``, ``device_type=device``)."""
    if is_string_valued(assign.value):
        return True
    target = single_target(assign)
    if target is None:
        return False
    name = target[0]
    for other in find_all(scope, cst.Assign, enter_functions=False):
        found = single_target(other) if other is not assign else None
        if found is not None and found[0] == name and is_string_valued(other.value):
            return True
    for comparison in find_all(scope, cst.Comparison, enter_functions=False):
        for part in comparison.comparisons:
            if isinstance(part.operator, (cst.In, cst.NotIn)) and key_of(part.comparator) == name:
                return True
    for call in find_all(scope, cst.Call, enter_functions=False):
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value in _STRING_METHODS and key_of(func.value) == name:
            return True
        # `torch.autocast(device_type=device)` takes a string only (tinygpt_ddp, survey25a)
        if any(
            a.keyword is not None and a.keyword.value == "device_type" and key_of(a.value) == name for a in call.args
        ):
            return True
    return False
