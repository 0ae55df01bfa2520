"""Gradient clipping in the training code goes through the ``Accelerator``.

``torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)`` after ``accelerator.backward(loss)``
clips the gradients as they are. Launched with fp16 mixed precision (``accelerate launch
--mixed_precision fp16``, or ``accelerate config``), Accelerate scales the loss, so those
gradients are still multiplied by the loss scale: the clip cuts every update down to almost
nothing. ``accelerator.clip_grad_norm_`` unscales them first (and clips FSDP's sharded parameters
as a whole); with no scaler it is the same call. Hence the rewrite, when its arguments are ones
the ``Accelerator`` method takes. With several prepared optimizers it is left as is, with a note:
``accelerator.clip_grad_norm_`` unscales every optimizer's gradients, and a second clip in the
same step would unscale them again (a ``GradScaler`` error).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import libcst as cst

from regcomp_lint.codemod.accelerator_edits import accelerator_edit
from regcomp_lint.codemod.builders import expression
from regcomp_lint.codemod.tree import Function, code, find_all
from regcomp_lint.knowledge.torch_api import GRADIENT_CLIPPING

if TYPE_CHECKING:
    from regcomp_lint.codemod.rewrites import Planner


def clip_through_accelerator(planner: Planner, functions: list[Function], optimizers: int) -> None:
    """Rewrite the clipping calls of ``functions`` (see the module docstring)."""
    tree = planner.tree
    for function in functions:
        for call in find_all(function, cst.Call, enter_functions=False):
            found = next(((n, spec) for n, spec in GRADIENT_CLIPPING.items() if tree.resolves_to(call.func, n)), None)
            if found is None or planner.is_removed(call):
                continue
            method, accepted = found[1]
            line = tree.line(call)
            if optimizers > 1:
                planner.notes.append(
                    f"{code(call.func)}() at line {line} is left as is: with {optimizers} optimizers, "
                    f"accelerator.{method}() would unscale all of their gradients at each clip; under fp16 mixed "
                    "precision, call accelerator.unscale_gradients(optimizer) for the clipped model's optimizer first"
                )
                continue
            positional = [a for a in call.args if a.keyword is None]
            if (
                any(a.star for a in call.args)
                or len(positional) > len(accepted)
                or any(a.keyword is not None and a.keyword.value not in accepted for a in call.args)
            ):
                planner.notes.append(
                    f"{code(call.func)}() at line {line} is left as is: accelerator.{method}() does not take its "
                    "arguments; under fp16 mixed precision, call accelerator.unscale_gradients() before it"
                )
                continue
            acc = planner.accelerator_in(function)
            accelerator_edit(
                planner,
                call,
                _calling(expression(f"{acc}.{method}", planner.module)),
                call,
                f"{code(call.func)}() at line {line} -> {acc}.{method}(): it unscales fp16 mixed precision's gradients "
                "before clipping (the same clip without a scaler)",
            )


def _calling(func: cst.BaseExpression) -> Callable[[cst.Call], cst.CSTNode]:
    """An edit that keeps a call's arguments and calls ``func`` instead."""
    return lambda updated: updated.with_changes(func=func)
