"""Copies of the model that a torchrun script makes after wrapping it in DDP (survey 26f's DDPM
trainer: ``model = DDP(...)`` then ``ema_model = AveragedModel(model)``, sampled through
``ema_model.module.module.sample(...)``). The conversion drops the wrap and puts prepare() after
the copy (:mod:`~regcomp_lint.codemod.model_copies`), so the copy is of the plain module: where the
original reads through the copied wrapper (``.module`` after the copy's own holder attribute), the
conversion reads one ``.module`` less; kept, it raised AttributeError on 1 process and on 2. What
the copy saves loses the wrapper's ``module.`` key prefix, as the model's own saves do."""

from __future__ import annotations

import libcst as cst

from regcomp_lint.codemod.tree import Tree, find_all, key_of
from regcomp_lint.knowledge.training_libraries import MODEL_COPY_HOLDERS


def wrapped_copies(tree: Tree, wraps: list[cst.Call]) -> list[tuple[str, tuple[str, ...], cst.Call]]:
    """``(name, holder, copy call)`` for each ``name = <copy>(model)`` made in the function of one
    of ``wraps`` (DDP calls the conversion removes), on a later line, of the name that wrap binds."""
    found = []
    for wrap in wraps:
        parent = tree.parent(wrap)
        if not isinstance(parent, cst.Assign) or len(parent.targets) != 1:
            continue
        wrapped = key_of(parent.targets[0].target)
        function = tree.function_of(wrap)
        if wrapped is None:
            continue
        for assign in find_all(function, cst.Assign, enter_functions=False):
            call = assign.value
            if not isinstance(call, cst.Call) or len(assign.targets) != 1 or tree.line(call) <= tree.line(wrap):
                continue
            name = assign.targets[0].target
            first = next((a for a in call.args if a.keyword is None and not a.star), None)
            if not isinstance(name, cst.Name) or first is None or key_of(first.value) != wrapped:
                continue
            holder = next((h for f, h in MODEL_COPY_HOLDERS.items() if tree.resolves_to(call.func, f)), None)
            if holder is not None:
                found.append((name.value, holder, call))
    return found


def reads_through_the_wrap(tree: Tree, name: str, holder: tuple[str, ...]) -> list[cst.Attribute]:
    """``name.<holder>.module`` anywhere in the file (a training function handed the copy under the
    same name included): the copied DDP wrapper's ``.module``."""
    found = []
    for attr in find_all(tree.module, cst.Attribute):
        if attr.attr.value != "module":
            continue
        inner: cst.BaseExpression = attr.value
        for step in reversed(holder):
            if not (isinstance(inner, cst.Attribute) and inner.attr.value == step):
                break
            inner = inner.value
        else:
            if isinstance(inner, cst.Name) and inner.value == name:
                found.append(attr)
    return found
