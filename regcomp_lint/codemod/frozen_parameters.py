"""Parameters frozen or thawed while training keep working under DDP.

``prepare()`` wraps the model in DDP on several processes. DDP expects a gradient for every
parameter that required one when it wrapped the model; a script that switches ``requires_grad``
during training (airbench's ``model[0].bias.requires_grad = (epoch < n)``, a backbone unfrozen
after a few epochs) leaves some without one, and the next step fails: "Expected to have finished
reduction in the prior iteration". ``DistributedDataParallelKwargs(find_unused_parameters=True)``
lets DDP find those in each step, which gives what one process computes. Freezing before
``prepare()`` (outside the loop that trains) needs nothing: DDP leaves those parameters out.
A model whose forward or optimizer leaves some parameters without gradients in every step
(``untrained_parameters``) gets the same handler.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from regcomp_lint.codemod.method_loss import unused_by_method
from regcomp_lint.codemod.settings import Refusal
from regcomp_lint.codemod.tree import Function, code, find_all
from regcomp_lint.codemod.untrained_parameters import untrained_parameters
from regcomp_lint.codemod.wrapped_access import run_without_grad
from regcomp_lint.knowledge import accelerate_api

if TYPE_CHECKING:
    from regcomp_lint.codemod.plain import PlainPlanner

_PARAMETER_ITERATORS = ("parameters", "named_parameters")
_HANDLER = "DistributedDataParallelKwargs(find_unused_parameters=True)"


def allow_unused_parameters(planner: PlainPlanner) -> None:
    """Ask DDP to look for parameters without gradients when the training code switches
    ``requires_grad`` of the model's parameters, or leaves some of a prepared model's parameters
    without gradients (see the module docstring)."""
    switches = _switches(planner)
    reasons = []
    if switches:
        shown = ", ".join(f"{code(node).strip()} (line {planner.tree.line(node)})" for node in switches[:3])
        reasons.append(f"{shown} switches requires_grad of the model's parameters while training")
    reasons += untrained_parameters(planner, _frozen_before_training(planner))
    reasons += unused_by_method(planner)
    reasons += run_without_grad(planner)
    if not reasons:
        return
    shown = "; ".join(reasons)
    handlers = [k for k in planner.accelerator_keywords if k.startswith("kwargs_handlers=")]
    if handlers:
        if "find_unused_parameters=True" in handlers[0]:
            return
        raise Refusal(
            f"{shown}: DDP only survives that with find_unused_parameters=True, and the script's own DDP "
            "settings say otherwise; convert by hand"
        )
    planner.accelerator_keywords.append(f"kwargs_handlers=[{_HANDLER}]")
    planner.imports.append((accelerate_api.UTILS_MODULE, "DistributedDataParallelKwargs"))
    planner.notes.append(
        f"{shown}: kwargs_handlers=[{_HANDLER}], or DDP would wait for gradients that never come and fail on "
        "several processes"
    )


def _frozen_before_training(planner: PlainPlanner) -> set[str]:
    """Models of which the script sets some parameters' requires_grad to False before it trains."""
    tree = planner.tree
    models = set(planner.models)
    frozen: set[str] = set()
    for node in find_all(planner.scope, (cst.Assign, cst.Call), enter_functions=False):
        if not _switch(node, planner.scope, models, tree) or _in_training_loop(tree, node, planner):
            continue
        value = node.value if isinstance(node, cst.Assign) else (node.args[0].value if node.args else None)
        if isinstance(value, cst.Name) and value.value == "False":
            target = node.targets[0].target if isinstance(node, cst.Assign) else node.func
            frozen |= {m for m in models if _of_model(target, planner.scope, {m}, tree)}
    return frozen


def _switches(planner: PlainPlanner) -> list[cst.CSTNode]:
    tree = planner.tree
    models = set(planner.models)
    found: list[cst.CSTNode] = []
    for function in planner.reach():
        for node in find_all(function, (cst.Assign, cst.AugAssign, cst.Call), enter_functions=False):
            if not _switch(node, function, models, tree):
                continue
            if function is planner.scope and not _in_training_loop(tree, node, planner):
                continue  # frozen before training starts: DDP leaves those parameters out
            found.append(node)
    return found


def _switch(node: cst.CSTNode, function: Function, models: set[str], tree) -> bool:
    if isinstance(node, cst.Call):
        func = node.func
        return (
            isinstance(func, cst.Attribute)
            and func.attr.value == "requires_grad_"
            and _of_model(func.value, function, models, tree)
        )
    if isinstance(node, cst.Assign):
        targets = [t.target for t in node.targets]
    elif isinstance(node, cst.AugAssign):
        targets = [node.target]
    else:
        return False
    return any(
        isinstance(t, cst.Attribute) and t.attr.value == "requires_grad" and _of_model(t.value, function, models, tree)
        for t in targets
    )


def _root(node: cst.BaseExpression) -> str | None:
    while isinstance(node, (cst.Attribute, cst.Subscript, cst.Call)):
        node = node.func if isinstance(node, cst.Call) else node.value
    return node.value if isinstance(node, cst.Name) else None


def _of_model(node: cst.BaseExpression, function: Function, models: set[str], tree) -> bool:
    """``model[0].bias``, ``model.encoder``, or ``p`` of ``for p in model.parameters()``."""
    root = _root(node)
    if root is None:
        return False
    if root in models or (root == "self" and any(m.startswith("self.") for m in models)):
        return True
    for loop in tree.ancestors(node):
        if isinstance(loop, cst.For) and isinstance(loop.target, (cst.Name, cst.Tuple)):
            names = [n.value for n in find_all(loop.target, cst.Name)]
            iterated = loop.iter
            if (
                root in names
                and isinstance(iterated, cst.Call)
                and isinstance(iterated.func, cst.Attribute)
                and iterated.func.attr.value in _PARAMETER_ITERATORS
                and _root(iterated.func.value) in models
            ):
                return True
    return False


def _in_training_loop(tree, node: cst.CSTNode, planner: PlainPlanner) -> bool:
    _, steps = planner.training_steps()
    return any(
        isinstance(loop, (cst.For, cst.While)) and any(tree.contains(loop, step) for step in steps)
        for loop in tree.ancestors(node)
    )
