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

from regcomp_lint.codemod.method_loss import loss_method_calls
from regcomp_lint.codemod.optimizers import find_optimizers
from regcomp_lint.codemod.roles import CallGraph
from regcomp_lint.codemod.tree import (
    Function,
    Tree,
    argument_for,
    code,
    find_all,
    init_of,
    key_of,
    methods_of,
    parameter_names,
    single_target,
)
from regcomp_lint.knowledge import torch_api


@dataclass(frozen=True)
class HandedIn:
    init: cst.FunctionDef
    optimizer: str
    models: list[str]
    cls: cst.ClassDef


def find_handed_in(tree: Tree, graph: CallGraph, training: set[Function]) -> HandedIn | None:
    """The trainer class whose ``__init__`` keeps a handed-in optimizer and model, if any (one)."""
    found: list[HandedIn] = []
    for cls in find_all(tree.module, cst.ClassDef):
        methods = methods_of(cls)
        init = init_of(cls)
        trainers = [m for m in methods if m in training]
        if init is None or not trainers:
            continue
        kept = kept_parameters(tree, init)
        stepped = {key for m in trainers for key in _attribute_calls(m, "step")}
        optimizers = [k for k in kept if k in stepped]
        if len(optimizers) > 1:  # a scheduler steps too (scBERT's Trainer): the optimizer also zeroes grads
            zeroed = {key for m in trainers for key in _attribute_calls(m, "zero_grad")}
            optimizers = [k for k in optimizers if k in zeroed] or optimizers
        called = {key for m in trainers for key in _called_attributes(m)}
        models = [k for k in kept if k in called]
        if not models:  # the loss from the model's own method: `loss = self.model.training_step(batch)`
            owners = {owner for m in trainers for owner, _, _ in loss_method_calls(tree, m)}
            models = [k for k in kept if k in owners]
        if len(optimizers) == 1 and models:
            models = _optimized(tree, cls, init, kept, optimizers[0], models)
            found.append(HandedIn(init, optimizers[0], models, cls))
    return found[0] if len(found) == 1 else None


def handed_optimizer(tree: Tree, training: set[Function]) -> tuple[str, str, int] | None:
    """(where it is handed, key, line) of an optimizer a training function steps but does not
    build: a parameter of the function (torchvision's ``train_one_epoch(model, optimizer, ...)``)
    or an attribute its class's ``__init__`` keeps from a parameter (BYOL's
    ``self.optimizer = optimizer``, SimCLR's ``self.optimizer = kwargs['optimizer']``), stepped
    as ``optimizer.step()`` or through a scaler, ``scaler.step(optimizer)``. What a refusal
    names instead of "no optimizer found" when nothing here builds one."""
    for function in tree.in_source_order(training):
        if not isinstance(function, cst.FunctionDef):
            continue
        cls = tree.class_of(function)
        init = init_of(cls) if cls is not None else None
        handed = {p: f"{function.name.value}()" for p in parameter_names(function) if p != "self"}
        if init is not None and cls is not None:
            handed |= dict.fromkeys(kept_parameters(tree, init, items=True), f"{cls.name.value}.__init__")
        for call in find_all(function, cst.Call, enter_functions=False):
            func = call.func
            if not (isinstance(func, cst.Attribute) and func.attr.value == "step"):
                continue
            key = key_of(func.value) if not call.args else key_of(call.args[0].value)
            if key in handed:
                return handed[key], key, tree.line(call)
    return None


def caller_sources(tree: Tree, training: set[Function], key: str) -> list[str]:
    """Where the callers of the training function that takes the optimizer ``key`` as a parameter
    get what they pass for it, when a call binds it there (``optimizer, scheduler =
    util.set_optim(args, model)``, survey 23b's FiD retriever): ``"util.set_optim(args, model) (line
    185)"`` each, in source order. A call the converter cannot read; the refusal names it."""
    found: list[str] = []
    for function in tree.in_source_order(training):
        if not isinstance(function, cst.FunctionDef) or key not in parameter_names(function):
            continue
        name = function.name.value
        for call in find_all(tree.module, cst.Call):
            if not (isinstance(call.func, cst.Name) and call.func.value == name):
                continue
            passed = argument_for(tree, function, call, key)
            bound = key_of(passed) if passed is not None else None
            if bound is None:
                continue
            for assign in find_all(tree.function_of(call), cst.Assign, enter_functions=False):
                if not isinstance(assign.value, cst.Call) or bound not in _bound_names(assign):
                    continue
                text = f"{code(assign.value).strip()} (line {tree.line(assign)})"
                if text not in found:
                    found.append(text)
    return found


def _bound_names(assign: cst.Assign) -> set[str]:
    names: set[str] = set()
    for target in assign.targets:
        node = target.target
        elements = [e.value for e in node.elements] if isinstance(node, (cst.Tuple, cst.List)) else [node]
        names |= {key for e in elements if (key := key_of(e)) is not None}
    return names


def _optimized(
    tree: Tree, cls: cst.ClassDef, init: cst.FunctionDef, kept: dict[str, str], optimizer: str, models: list[str]
) -> list[str]:
    """The called attributes whose objects the handed-in optimizer optimizes, read where the
    trainer is built (``Trainer(model, loader, optimizer, criterion)``): a loss module is called
    too but has no parameters (DDP refuses to wrap it). All of them when that cannot be read."""
    params = [p for p in parameter_names(init) if p != "self"]
    owners: set[str] | None = None
    for call in constructions(tree, cls):
        passed = _arguments(call, params)
        optimizer_arg = passed.get(kept[optimizer])
        function = tree.function_of(call)
        found = {k for o in find_optimizers(tree, function) if o.key == optimizer_arg for k in o.models}
        if not found:
            return models  # built elsewhere: its models are not known here
        owners = (owners or set()) | {param for param, key in passed.items() if key in found}
    if owners is None:
        return models
    optimized = [m for m in models if kept[m] in owners]
    return optimized or models


def handing_over(tree: Tree, handed: HandedIn, key: str) -> cst.Call | None:
    """The construction of the trainer that hands it ``key`` as one of its models, in the function
    that binds ``key`` (``trainer = Trainer(model, optimizer, ...)`` in ``run()``)."""
    init = handed.init
    params = [p for p in parameter_names(init) if p != "self"]
    kept = kept_parameters(tree, init)
    model_params = {kept[m] for m in handed.models if m in kept}
    for call in constructions(tree, handed.cls):
        if any(param in model_params and passed == key for param, passed in _arguments(call, params).items()):
            return call
    return None


def constructions(tree: Tree, cls: cst.ClassDef) -> list[cst.Call]:
    """The calls that build the class by its name (``Trainer(model, loader, optimizer)``)."""
    name = cls.name.value
    return [
        call for call in find_all(tree.module, cst.Call) if isinstance(call.func, cst.Name) and call.func.value == name
    ]


def _arguments(call: cst.Call, params: list[str]) -> dict[str, str]:
    """Parameter name -> the key of the name passed for it, for a call of the class."""
    passed: dict[str, str] = {}
    for index, arg in enumerate(call.args):
        if arg.star:
            break
        name = arg.keyword.value if arg.keyword is not None else params[index] if index < len(params) else None
        key = key_of(arg.value)
        if name is not None and key is not None:
            passed[name] = key
    return passed


def kept_parameters(tree: Tree, init: cst.FunctionDef, *, items: bool = False) -> dict[str, str]:
    """``self.x`` keys assigned from a parameter of ``__init__`` (``p`` or ``p.to(...)``), with
    the parameter. ``items``: also an item of one, ``*args``/``**kwargs`` included
    (SimCLR's ``self.optimizer = kwargs['optimizer']``)."""
    params = set(parameter_names(init))
    if items:
        params |= {s.name.value for s in (init.params.star_arg, init.params.star_kwarg) if isinstance(s, cst.Param)}
    kept: dict[str, str] = {}
    for assign in find_all(init, cst.Assign, enter_functions=False):
        target = single_target(assign)
        if target is None or not target[0].startswith("self."):
            continue
        value = target[1]
        # `self.model = DDP(model, device_ids=[...])` (a DDP course script, survey 26e ddp_tiger):
        # the conversion removes the wrap, so the attribute keeps the parameter's model
        if (
            isinstance(value, cst.Call)
            and value.args
            and value.args[0].keyword is None
            and any(tree.resolves_to(value.func, name) for name in torch_api.DATA_PARALLEL)
        ):
            value = value.args[0].value
        while isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value == "to":
            value = value.func.value
        if items and isinstance(value, cst.Subscript):
            value = value.value
        if isinstance(value, cst.Name) and value.value in params and target[0] not in kept:
            kept[target[0]] = value.value
    return kept


def kept_attribute(tree: Tree, function: Function, key: str) -> str | None:
    """``self.model`` when ``function`` is a trainer's ``__init__`` that keeps its parameter ``key``
    as that attribute (``self.model = model.to(config.device)``, the same object) and another
    method of the class calls it (``self.model(input_ids)``): the model the training runs is the
    attribute, and prepare() must put its wrapper there. Prepared as ``model``, the compiled
    (and, on several processes, DDP) wrapper would stay a local of ``__init__`` (card_ar,
    survey21b). None otherwise (one such attribute only)."""
    if not isinstance(function, cst.FunctionDef) or function.name.value != "__init__":
        return None
    cls = tree.class_of(function)
    if cls is None or init_of(cls) is not function or not tree.is_parameter(key, function):
        return None
    kept = [attr for attr, param in kept_parameters(tree, function).items() if param == key]
    called = {k for m in methods_of(cls) if m is not function for k in _called_attributes(m)}
    found = [attr for attr in kept if attr in called]
    return found[0] if len(found) == 1 else None


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


#: What a ``.to(...)`` argument names when it is a device, not a dtype.
_DEVICE_WORDS = ("device", "cuda", "gpu", "rank")


def placements_before(tree: Tree, handed: HandedIn) -> list[cst.Call]:
    """``model.to(device)`` / ``model.cuda()`` on a model the trainer is handed, where the trainer
    is built (``model = Net().to(device)`` in ``main()``): ``prepare()`` in ``__init__`` places it
    on each process's device anyway; moved before, every process first puts a copy on one GPU.
    Only calls in the function that builds the trainer, before that call."""
    kept = kept_parameters(tree, handed.init)
    params = [p for p in parameter_names(handed.init) if p != "self"]
    found: list[cst.Call] = []
    for call in find_all(tree.module, cst.Call):
        if not (isinstance(call.func, cst.Name) and call.func.value == handed.cls.name.value):
            continue
        passed = _arguments(call, params)
        keys = {passed[kept[m]] for m in handed.models if m in kept and kept[m] in passed}
        function = tree.function_of(call)
        for place in find_all(function, cst.Call, enter_functions=False):
            func = place.func
            if (
                isinstance(func, cst.Attribute)
                and func.attr.value in ("to", "cuda")
                and tree.line(place) < tree.line(call)
                and placed_model(tree, place, keys)
                and (func.attr.value == "cuda" or device_argument(place))
            ):
                found.append(place)
    return found


def placed_model(tree: Tree, place: cst.Call, keys: set[str]) -> bool:
    """``model.to(...)``, or ``model = Net(...).to(...)``: the call places one of ``keys``."""
    assert isinstance(place.func, cst.Attribute)
    if key_of(place.func.value) in keys:
        return True
    assign = tree.parent(place)
    target = single_target(assign) if isinstance(assign, cst.Assign) and assign.value is place else None
    return target is not None and target[0] in keys


def device_argument(call: cst.Call) -> bool:
    return len(call.args) == 1 and any(word in code(call.args[0].value).lower() for word in _DEVICE_WORDS)
