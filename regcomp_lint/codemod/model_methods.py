"""Methods of the class a prepared model is built from, called on the model or an alias of it.

Survey 23b mird_phase2: ``model_to_save = model.module if hasattr(model, "module") else model``
then ``model_to_save.save_checkpoint(path)``, a method of the model's own class with ``torch.save``
inside. The conversion guarded the script's plain ``torch.save`` calls, but this call ran in
every process, each writing the same file. :func:`own_method` finds such a method where the class
is the file's own (``checkpoint_writes`` then treats it as it treats a local helper that writes a
checkpoint); :func:`unread_model_class` names the class when it comes from a project module the
fixer cannot read (``file_writes`` names the call in a note).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from regcomp_lint.analysis.own_callees import method_called
from regcomp_lint.codemod.local_modules import unread_class
from regcomp_lint.codemod.tree import (
    CST,
    Function,
    built_class,
    find_all,
    key_of,
    memo_of,
    read_keys,
    single_target,
)

if TYPE_CHECKING:
    from regcomp_lint.codemod.rewrites import Planner


def own_method(planner: Planner, place: Function, call: cst.Call) -> cst.FunctionDef | None:
    """The method ``call`` (``model.save_checkpoint(path)``) runs when its receiver is a prepared
    model, or a name ``place`` binds to one, built from a class of the file (the method
    defined there or in a base class of the file, :mod:`~regcomp_lint.analysis.own_callees`)."""
    func = call.func
    built = _model_class(planner, place, func.value) if isinstance(func, cst.Attribute) else None
    if built is None or not isinstance(func, cst.Attribute):
        return None
    classes = {c.name.value: c for c in find_all(planner.tree.module, cst.ClassDef)}
    return method_called(CST, classes.get(built.value), func.attr.value, classes)


def unread_model_class(planner: Planner, place: Function, call: cst.Call) -> tuple[str, str] | None:
    """``("model_agentic", "MIRDModel")`` when ``call`` is a method call on a prepared model (or a
    name ``place`` binds to one) whose class comes from a project module that is not found."""
    func = call.func
    built = _model_class(planner, place, func.value) if isinstance(func, cst.Attribute) else None
    return unread_class(planner.tree, built) if built is not None else None


def _model_class(planner: Planner, place: Function, receiver: cst.BaseExpression) -> cst.Name | None:
    """The ``Cls`` of ``model = Cls(...)`` (``.to(device)`` and the like after it), the one class
    the file builds the prepared model ``receiver`` names from, directly or through a name
    ``place`` binds to it alone (``model_to_save = model.module if hasattr(model, "module") else model``)."""
    models = set(planner.models)
    key = key_of(receiver)
    if key is None:
        return None
    if key not in models:
        bound = {
            k
            for assign in find_all(place, cst.Assign, enter_functions=False)
            if (target := single_target(assign)) is not None and target[0] == key
            for k in read_keys(target[1])
            if k in models
        }
        if len(bound) != 1:
            return None
        key = bound.pop()
    built = memo_of(planner.tree.module, "model_methods.built", _classes_built).get(key, {})
    return next(iter(built.values())) if len(built) == 1 else None


def _classes_built(module: cst.Module) -> dict[str, dict[str, cst.Name]]:
    """For each key the file assigns ``key = Cls(...)`` (``.to(device)`` and the like after it),
    the classes so built, by name: listed once per conversion (each ask scanned every
    assignment of the module: a thousand asks a fixture round)."""
    built: dict[str, dict[str, cst.Name]] = {}
    for assign in find_all(module, cst.Assign):
        target = single_target(assign)
        if target is None:
            continue
        cls = built_class(target[1])
        if cls is not None and target[0] not in read_keys(target[1]):
            # (not a wrap of the model itself: ``model = DDP(model)``)
            built.setdefault(target[0], {})[cls.value] = cls
    return built
