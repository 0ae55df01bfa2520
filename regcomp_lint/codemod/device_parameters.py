"""A training function handed its device (and its model) by the code that calls it.

milesial's UNet builds ``device = torch.device("cuda" if torch.cuda.is_available() else "cpu")``
and ``model.to(device=device)`` under ``if __name__ == "__main__":`` and calls
``train_model(model=model, device=device, ...)``, which builds the optimizer: the ``Accelerator``
is created in ``train_model``. Launched on several GPUs, every process would still move its
batches to ``device`` -- ``cuda``, the first GPU -- while ``prepare`` put its model on its own:
a device mismatch on every process but the first. So the parameter is set to
``accelerator.device`` right after the ``Accelerator`` is created (``device.type`` and the
functions it is handed keep working), and the caller's ``model.to(device)`` of the handed model
is dropped (``prepare`` places it). Only for a device Accelerate would choose the same way (CUDA
when there is one), or one the script's own flags make (``"cuda" if args.cuda else "cpu"``),
which the ``Accelerator`` keeps as ``cpu=torch.device(device).type == "cpu"``.

A trainer class handed its device (ViT's ``TrainEval(args, model, ..., device)``, kept as
``self.device``) gets the same ``cpu=`` from its ``__init__`` parameter: ``self.device`` becomes
``self.accelerator.device`` there, and without it ``--no-cuda`` would train on the GPU.
"""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING

import libcst as cst

from regcomp_lint.codemod.handed_in import HandedIn, constructions, device_argument, kept_parameters, placed_model
from regcomp_lint.codemod.lint_view import LintView, lint_view
from regcomp_lint.codemod.tree import Function, code, find_all, key_of, parameter_names

if TYPE_CHECKING:
    from regcomp_lint.codemod.plain import PlainPlanner


def follow_handed_device(planner: PlainPlanner) -> None:
    """Set device parameters the callers fill with a device to ``accelerator.device`` after the
    ``Accelerator`` (``planner.after_accelerator``), and drop the callers' placements of the
    handed model (see the module docstring)."""
    tree, scope = planner.tree, planner.scope
    if not isinstance(scope, cst.FunctionDef) or planner.owner is not None:
        return
    view = lint_view(tree)
    if view.devices is None:
        return
    params = parameter_names(scope)
    callers = planner.graph.callers_of(scope)
    if not callers:
        return
    for param in params:
        values = [_passed(call, params, param) for _, call in callers]
        if any(v is None for v in values):
            continue
        exprs = [view.expression_at(v) for v in values if v is not None]
        if len(exprs) != len(values) or not all(
            e is not None and view.devices.fixed_cuda(e, view.where(e)) for e in exprs
        ):
            continue
        flags = [name for e in exprs if e is not None for name in _flags(view, e)]
        if flags and not _torch_bound(tree):
            planner.notes.append(
                f"{scope.name.value}() is handed its device ({param}) by its caller, chosen with "
                f"{', '.join(dict.fromkeys(flags))}: under several processes every process would use that one device; "
                f"set {param} = accelerator.device after the Accelerator, keeping the CPU choice as Accelerator(cpu=...)"
            )
            continue
        planner.after_accelerator.append(f"{param} = {planner.acc_key}.device")
        planner.uses += _reads(planner, scope, param)  # the Accelerator comes before the first of them
        if flags:  # ViT's --no-cuda: the handed device says whether the caller chose the CPU
            condition = f'torch.device({param}).type == "cpu"'
            if condition not in planner.cpu_conditions:
                planner.cpu_conditions.append(condition)
            planner.notes.append(
                f"{scope.name.value}() is handed its device ({param}) by its caller, chosen with "
                f"{', '.join(dict.fromkeys(flags))}: Accelerator(cpu={condition}) keeps that choice of the CPU, and "
                f"{param} is set to {planner.acc_key}.device after it (each process on its own device otherwise)"
            )
        else:
            planner.notes.append(
                f"{scope.name.value}()'s {param}, which its caller fills with a CUDA device when there is one, is set "
                f"to {planner.acc_key}.device after the Accelerator is created: each process moves its batches to its "
                "own device"
            )
        _drop_handed_model_placements(planner, callers, params)
        return


def keep_trainer_cpu_choice(planner: PlainPlanner, handed: HandedIn) -> None:
    """The trainer's ``Accelerator`` keeps the CPU choice of a device its builders hand it,
    chosen with the script's flags (``"cuda" if use_cuda else "cpu"``, ``use_cuda`` read from
    ``--no-cuda``): ``cpu=torch.device(device).type == "cpu"``, ``device`` being ``__init__``'s
    parameter (see the module docstring)."""
    tree = planner.tree
    view = lint_view(tree)
    if view.devices is None or not _torch_bound(tree):
        return
    params = [p for p in parameter_names(handed.init) if p != "self"]
    param = kept_parameters(tree, handed.init).get("self.device")
    if param is not None:
        values = [_passed(call, params, param) for call in constructions(tree, handed.cls)]
        if not values or any(v is None for v in values):
            return
        exprs = [view.expression_at(v) for v in values if v is not None]
        flags = [
            name
            for e in exprs
            if e is not None and view.devices.fixed_cuda(e, view.where(e))
            for name in _flags(view, e)
        ]
        condition = f'torch.device({param}).type == "cpu"'
        if flags and len(exprs) == len(values) and condition not in planner.cpu_conditions:
            planner.cpu_conditions.append(condition)
            planner.notes.append(
                f"{handed.cls.name.value} is handed its device ({param}) by its builder, chosen with "
                f"{', '.join(dict.fromkeys(flags))}: Accelerator(cpu={condition}) keeps that choice of the CPU"
            )


def _torch_bound(tree) -> bool:
    """``torch`` names the module in the script (``import torch``), for ``torch.device(...)``."""
    return re.search(r"^[ \t]*import[ \t]+torch[ \t]*(?:#.*)?$", tree.text, re.MULTILINE) is not None


def _reads(planner: PlainPlanner, scope: cst.FunctionDef, name: str) -> list[cst.CSTNode]:
    """Where ``scope``'s own code reads the name (not ``x.device``, not a ``device=`` keyword)."""
    tree = planner.tree
    found: list[cst.CSTNode] = []
    for node in find_all(scope.body, cst.Name, enter_functions=False):
        parent = tree.parent(node)
        if node.value != name or (isinstance(parent, cst.Attribute) and parent.attr is node):
            continue
        if isinstance(parent, cst.Arg) and parent.keyword is node:
            continue
        found.append(node)
    return found


def _passed(call: cst.Call, params: list[str], param: str) -> cst.BaseExpression | None:
    for index, arg in enumerate(call.args):
        if arg.star:
            return None
        name = arg.keyword.value if arg.keyword is not None else params[index] if index < len(params) else None
        if name == param:
            return arg.value
    return None


def _flags(view: LintView, expr: ast.expr) -> list[str]:
    """The script's own names a device choice reads (``args`` of ``"cuda" if args.cuda else "cpu"``)."""
    devices, roles = view.devices, view.roles
    if devices is None or roles is None:
        return []
    found: list[str] = []
    for node in ast.walk(expr):
        for bound in roles.bindings.candidates(node, view.where(expr))[:1] if isinstance(node, ast.Name) else []:
            choice = devices.choice(bound.value) if bound.value is not None else None
            if choice is None and isinstance(bound.value, ast.Call):
                arg = bound.value.args[0] if bound.value.args else None
                choice = devices.choice(arg)
            if choice is not None:
                found += list(choice.flags)
        choice = devices.choice(node)
        if choice is not None:
            found += list(choice.flags)
    return found


def _drop_handed_model_placements(
    planner: PlainPlanner, callers: list[tuple[Function, cst.Call]], params: list[str]
) -> None:
    tree = planner.tree
    models = [m for m in planner.models if m in params]
    for caller, call in callers:
        keys = {key_of(v) for m in models if (v := _passed(call, params, m)) is not None} - {None}
        placed = [
            place
            for place in find_all(caller, cst.Call, enter_functions=False)
            if isinstance(place.func, cst.Attribute)
            and place.func.attr.value in ("to", "cuda")
            and tree.line(place) < tree.line(call)
            and placed_model(tree, place, keys)  # type: ignore[arg-type]
            and (place.func.attr.value == "cuda" or device_argument(place))
        ]
        if placed:
            planner.drop_placements(placed, f"{code(call.func)}()")
