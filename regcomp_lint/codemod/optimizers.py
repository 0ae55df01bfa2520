"""Which assignments of a script build an optimizer, and from which model(s), by dataflow.

An optimizer is a ``torch.optim`` (or other known library) optimizer, an instance of a class the
script derives from ``torch.optim.Optimizer`` (a Muon-style optimizer), whatever a local factory
function returns when that is one of these (``make_optimizer(model, cfg)``), a known library
factory (timm's ``create_optimizer_v2(model, ...)``), ``model.configure_optimizers()``, or any
other object fed ``model.parameters()`` / param groups that the script then uses as an optimizer
(``.zero_grad()``, an argument-less ``.step()``, ``.param_groups``). A value fed parameters but
never used so (``sum(p.numel() for p in model.parameters())``) is not one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

import libcst as cst

from regcomp_lint.codemod.roles import CallGraph, bindings, creations
from regcomp_lint.codemod.tree import Function, Tree, code, find_all, key_of, parameter_names
from regcomp_lint.knowledge import torch_api, training_libraries

_FACTORY_MODEL_KEYWORDS = ("model_or_params", "model")
_MAX_DEPTH = 3


@dataclass
class FoundOptimizer:
    key: str
    stmt: cst.Assign
    models: list[str]  # empty when the optimizer's parameters cannot be traced to a model
    construct: str  # what builds it, for notes and refusals


def parameter_owners(tree: Tree, function: Function, expr: cst.CSTNode, depth: int = 0) -> list[str]:
    """Keys ``M`` of every ``M.parameters()`` / ``M.named_parameters()`` inside ``expr`` (one
    level through a local variable: ``params = [p for p in model.parameters() ...]``)."""
    owners: list[str] = []
    for call in find_all(expr, cst.Call):
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value in ("parameters", "named_parameters"):
            key = key_of(func.value)
            if key and key not in owners:
                owners.append(key)
    if not owners and depth == 0:
        for name in find_all(expr, cst.Name):
            for node in bindings(function, name.value):
                if isinstance(node, cst.Assign):
                    owners += [k for k in parameter_owners(tree, function, node.value, 1) if k not in owners]
    return owners


def _library_optimizer(tree: Tree, func: cst.BaseExpression) -> str | None:
    qualified = tree.resolves_under(func, *training_libraries.OPTIMIZER_MODULES, *training_libraries.OPTIMIZERS)
    if qualified and not any(
        qualified == n or qualified.startswith(n + ".") for n in training_libraries.NOT_OPTIMIZERS
    ):
        return qualified
    return None


def local_optimizer_class(tree: Tree, func: cst.BaseExpression, depth: int = 0) -> cst.ClassDef | None:
    """The class defined in this file that ``func`` names, when it derives from ``torch.optim.Optimizer``
    (directly, from a library optimizer, or through another such local class)."""
    if not isinstance(func, cst.Name) or depth > _MAX_DEPTH:
        return None
    for cls in find_all(tree.module, cst.ClassDef):
        if cls.name.value != func.value:
            continue
        for base in cls.bases:
            if tree.resolves_to(base.value, *torch_api.OPTIMIZER_BASE) or _library_optimizer(tree, base.value):
                return cls
            if local_optimizer_class(tree, base.value, depth + 1) is not None:
                return cls
    return None


def _argument_for(callee: cst.FunctionDef, call: cst.Call, parameter: str) -> cst.BaseExpression | None:
    """The expression ``call`` passes to ``callee``'s ``parameter``."""
    positional = parameter_names(callee, keyword_only=False)
    position = 0
    for arg in call.args:
        if arg.star:
            return None
        if arg.keyword is not None:
            if arg.keyword.value == parameter:
                return arg.value
            continue
        if position < len(positional) and positional[position] == parameter:
            return arg.value
        position += 1
    return None


def _factory_result(tree: Tree, factory: cst.FunctionDef, depth: int) -> tuple[list[str], str] | None:
    """(model-owning parameters of ``factory``, construct) when every value it returns is an optimizer."""
    returns = [r for r in find_all(factory, cst.Return, enter_functions=False) if r.value is not None]
    if not returns:
        return None
    constructs: list[str] = []
    owners: list[str] = []
    for ret in returns:
        value: cst.BaseExpression | None = ret.value
        key = key_of(value) if value is not None else None
        if key is not None:  # `opt = AdamW(...); return opt`
            assigns = [n for n in bindings(factory, key) if isinstance(n, cst.Assign)]
            value = assigns[-1].value if assigns else None
        if value is None:
            return None
        found = optimizer_source(tree, factory, value, depth + 1)
        if found is None:
            return None
        owners += [m for m in found[0] if m not in owners]
        constructs.append(found[1])
    parameters = parameter_names(factory)
    # the groups a factory builds are often filled in loops (`for n, p in model.named_parameters()`)
    owners += [m for m in parameter_owners(tree, factory, factory.body, 1) if m not in owners]
    return [m for m in owners if m in parameters], constructs[0]


def optimizer_source(
    tree: Tree, function: Function, value: cst.BaseExpression, depth: int = 0
) -> tuple[list[str], str] | None:
    """(model keys, construct) when ``value`` certainly builds an optimizer, else None.

    Model keys may be empty where the optimizer is certain but its parameters' owner is not."""
    if not isinstance(value, cst.Call) or depth > _MAX_DEPTH:
        return None
    func = value.func
    if isinstance(func, cst.Attribute) and func.attr.value == "configure_optimizers":
        key = key_of(func.value)
        return ([key] if key else []), code(func)
    if tree.resolves_to(func, *training_libraries.OPTIMIZER_FACTORIES):
        model = next((a.value for a in value.args if a.keyword and a.keyword.value in _FACTORY_MODEL_KEYWORDS), None)
        if model is None and value.args and value.args[0].keyword is None:
            model = value.args[0].value
        owners = parameter_owners(tree, function, model) if model is not None else []
        key = key_of(model) if model is not None and not owners else None
        return (owners or ([key] if key else [])), code(func)
    if _library_optimizer(tree, func) or local_optimizer_class(tree, func) is not None:
        return parameter_owners(tree, function, value), code(func)
    callee = tree.function_named(value)
    if callee is not None and callee is not function:
        result = _factory_result(tree, callee, depth)
        if result is not None:
            models: list[str] = []
            for parameter in result[0]:
                argument = _argument_for(callee, value, parameter)
                if argument is None:
                    continue
                key = key_of(argument)
                owners = parameter_owners(tree, function, argument, 1) or ([key] if key else [])
                models += [m for m in owners if m not in models]
            return models, f"{code(func)}() (returns {result[1]})"
    return None


def _uses_as_optimizer(tree: Tree, place: cst.CSTNode, key: str) -> bool:
    for attr in find_all(place, cst.Attribute):
        if key_of(attr.value) != key:
            continue
        if attr.attr.value == "param_groups":
            return True
        parent = tree.parent(attr)
        if isinstance(parent, cst.Call) and parent.func is attr:
            if attr.attr.value == "zero_grad":
                return True
            if attr.attr.value == "step" and all(a.keyword is not None for a in parent.args):
                return True
    return False


def used_as_optimizer(tree: Tree, graph: CallGraph, function: Function, key: str, depth: int = 0) -> bool:
    """Is ``key`` used as an optimizer: ``key.zero_grad()``, an argument-less ``key.step()`` (an
    EMA's ``step(parameters)`` is not), or ``key.param_groups`` read, in ``function``, in the
    functions it passes ``key`` to, or (``self.key``) in its class's methods?"""
    owner = tree.class_of(function)
    place: cst.CSTNode = owner if key.startswith("self.") and owner is not None else function
    if _uses_as_optimizer(tree, place, key):
        return True
    if depth >= _MAX_DEPTH or key.startswith("self."):
        return False
    for callee, call in graph.calls_from(function):
        for parameter in parameter_names(callee):
            argument = _argument_for(callee, call, parameter)
            if argument is not None and key_of(argument) == key:
                if used_as_optimizer(tree, graph, callee, parameter, depth + 1):
                    return True
    return False


def fed_parameters(tree: Tree, function: Function, value: cst.BaseExpression) -> list[str]:
    """Model keys whose parameters an unknown call receives (one level through a local variable)."""
    if not isinstance(value, cst.Call) or tree.resolves_under(value.func, "torch.nn", "torch.optim.lr_scheduler"):
        return []  # clip_grad_norm_(model.parameters()) and friends
    return [k for arg in value.args for k in parameter_owners(tree, function, arg.value, 1)]


def find_optimizers(tree: Tree, graph: CallGraph, function: Function) -> list[FoundOptimizer]:
    """Every ``key = <optimizer>`` assignment in ``function`` (not in nested defs), in source order."""
    found = []
    for creation in creations(function):
        source = optimizer_source(tree, function, creation.value)
        if source is not None:
            found.append(FoundOptimizer(creation.key, creation.stmt, *source))
            continue
        owners = fed_parameters(tree, function, creation.value)
        if owners and used_as_optimizer(tree, graph, function, creation.key):
            found.append(FoundOptimizer(creation.key, creation.stmt, owners, code(cast(cst.Call, creation.value).func)))
    return found


def not_optimizers(tree: Tree, graph: CallGraph, function: Function) -> list[tuple[str, int]]:
    """Assignments fed model parameters that are not used as optimizers (for refusal reasons)."""
    return [
        (code(c.stmt).strip(), tree.line(c.stmt))
        for c in creations(function)
        if optimizer_source(tree, function, c.value) is None
        and fed_parameters(tree, function, c.value)
        and not used_as_optimizer(tree, graph, function, c.key)
    ]
