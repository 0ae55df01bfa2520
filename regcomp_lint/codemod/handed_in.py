"""A trainer class that is handed its model and optimizer (PyTorch's DDP tutorial, minGPT-DDP).

``Trainer(model, train_data, optimizer, ...)`` keeps them as ``self.model`` / ``self.optimizer``
in ``__init__`` and trains in its methods; the objects themselves are built by a helper such as
``load_train_objs()``. The conversion prepares them where the trainer receives them: the
``Accelerator`` becomes ``self.accelerator`` in ``__init__``. Roles are read from use, not from
names: the optimizer is the attribute the training methods ``.step()`` and ``.zero_grad()``, the
model the attribute they call.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from regcomp_lint.codemod.roles import CallGraph
from regcomp_lint.codemod.tree import Function, Tree, find_all, key_of, parameter_names, single_target


@dataclass(frozen=True)
class HandedIn:
    init: cst.FunctionDef
    optimizer: str
    models: list[str]


def find_handed_in(tree: Tree, graph: CallGraph, training: set[Function]) -> HandedIn | None:
    """The trainer class whose ``__init__`` keeps a handed-in optimizer and model, if any (one)."""
    found: list[HandedIn] = []
    for cls in find_all(tree.module, cst.ClassDef):
        methods = [m for m in cls.body.body if isinstance(m, cst.FunctionDef)]
        init = next((m for m in methods if m.name.value == "__init__"), None)
        trainers = [m for m in methods if m in training]
        if init is None or not trainers:
            continue
        kept = _kept_parameters(tree, init)
        stepped = {key for m in trainers for key in _attribute_calls(m, "step")}
        optimizers = [k for k in kept if k in stepped]
        called = {key for m in trainers for key in _called_attributes(m)}
        models = [k for k in kept if k in called]
        if len(optimizers) == 1 and models:
            found.append(HandedIn(init, optimizers[0], models))
    return found[0] if len(found) == 1 else None


def _kept_parameters(tree: Tree, init: cst.FunctionDef) -> list[str]:
    """``self.x`` keys assigned from a parameter of ``__init__`` (``p`` or ``p.to(...)``)."""
    params = set(parameter_names(init))
    kept: list[str] = []
    for assign in find_all(init, cst.Assign, enter_functions=False):
        target = single_target(assign)
        if target is None or not target[0].startswith("self."):
            continue
        value = target[1]
        while isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value == "to":
            value = value.func.value
        if isinstance(value, cst.Name) and value.value in params and target[0] not in kept:
            kept.append(target[0])
    return kept


def _attribute_calls(method: cst.FunctionDef, name: str) -> set[str]:
    """Keys ``k`` with a ``k.<name>(...)`` call in ``method``."""
    return {
        key
        for call in find_all(method, cst.Call, enter_functions=False)
        if isinstance(call.func, cst.Attribute)
        and call.func.attr.value == name
        and (key := key_of(call.func.value)) is not None
    }


def _called_attributes(method: cst.FunctionDef) -> set[str]:
    """``self.x`` keys called like a function in ``method`` (``self.model(batch)``)."""
    return {
        key
        for call in find_all(method, cst.Call, enter_functions=False)
        if (key := key_of(call.func)) is not None and key.startswith("self.")
    }
