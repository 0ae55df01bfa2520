"""A training step that runs inside a loss-scaler call.

DeiT's and ConvNeXt's engines and the scripts modelled on them call
``loss_scaler(loss, optimizer, clip_grad=max_norm, parameters=model.parameters())`` on a
``NativeScaler()`` (timm) or ``NativeScalerWithGradNormCount()`` (BEiT/MAE's ``utils``): the call
runs backward, unscale, clip and ``optimizer.step()``. With the class imported, the script has no
``X.backward()`` of its own yet trains; with the class copied into the file, its only backward is in
the class's ``__call__``. ``accelerator.backward()`` cannot take that call's place, so the script is
refused naming the call, not reported as "no training script found" (survey 21a: an
AdaptiveEffiSelecViT search script, exit 0) nor as a model "built where the loop does not run".
"""

from __future__ import annotations

import libcst as cst

from regcomp_lint.codemod.tree import Tree, code, dotted, find_all
from regcomp_lint.knowledge.training_libraries import LOSS_SCALER_CLASSES


def loss_scaler_step(tree: Tree, backwards: list[cst.Call]) -> str | None:
    """The refusal for a script whose training step is a loss-scaler call, else None: a call of a
    name (or ``self.`` attribute) that the file binds to a loss scaler, handed at least the loss,
    when the file has no backward (``backwards``) but those of such a class's ``__call__``."""
    inside = _inside_scaler_classes(tree, backwards)
    if backwards and inside is None:
        return None
    built = _scalers_built(tree)
    for call in find_all(tree.module, cst.Call):
        name = _last_name(call.func)
        if name not in built or not call.args:
            continue
        scaler = built[name]
        where = f"the only backward is in {inside}" if inside else "no X.backward() in this script"
        return (
            f"{where}: the training loop's backward runs inside {_one_line(call)} at line {tree.line(call)}, a loss "
            f"scaler ({_one_line(scaler)} at line {tree.line(scaler)}) whose one call scales the loss, runs backward, "
            "unscales and clips the gradients and steps the optimizer; accelerator.backward() cannot take that call's "
            "place: convert by hand (accelerator.backward(loss), accelerator.clip_grad_norm_() and optimizer.step() "
            "in its place, Accelerator(mixed_precision=...) for the scaling)"
        )
    return None


def _inside_scaler_classes(tree: Tree, backwards: list[cst.Call]) -> str | None:
    """``NativeScaler.__call__ (line 9)`` when every backward of the file is in the ``__call__`` of a
    loss-scaler class the file defines, else None."""
    found = None
    for call in backwards:
        function = tree.function_of(call)
        cls = tree.class_of(function) if isinstance(function, cst.FunctionDef) else None
        if not isinstance(function, cst.FunctionDef) or cls is None or function.name.value != "__call__":
            return None
        if cls.name.value not in LOSS_SCALER_CLASSES:
            return None
        found = found or f"{cls.name.value}.__call__ (line {tree.line(call)})"
    return found


def _scalers_built(tree: Tree) -> dict[str, cst.Call]:
    """Last name bound (``loss_scaler``, ``self.loss_scaler``) -> the loss-scaler construction it is
    bound to; a function handed the scaler usually keeps that name for its parameter."""
    found: dict[str, cst.Call] = {}
    for assign in find_all(tree.module, cst.Assign):
        value = assign.value
        if not isinstance(value, cst.Call) or _last_name(value.func) not in LOSS_SCALER_CLASSES:
            continue
        for target in assign.targets:
            name = _last_name(target.target)
            if name is not None:
                found.setdefault(name, value)
    return found


def _last_name(node: cst.BaseExpression) -> str | None:
    """``loss_scaler`` for ``loss_scaler`` and ``self.loss_scaler``; ``NativeScaler`` for
    ``utils.NativeScaler``."""
    text = dotted(node)
    return text.rsplit(".", 1)[-1] if text else None


def _one_line(node: cst.CSTNode) -> str:
    """The node's code on one line (a call split over lines keeps single spaces)."""
    return " ".join(code(node).split())
