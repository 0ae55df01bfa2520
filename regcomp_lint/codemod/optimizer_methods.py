"""An optimizer class of the script's own under ``prepare()``: its methods, and one that wraps another.

``prepare`` hands back an ``AcceleratedOptimizer``. It answers ``step``, ``zero_grad``, the state
dicts and ``param_groups`` itself, but nothing the optimizer's own class adds: SAM's
``first_step``/``second_step`` and Sophia's ``update_hessian`` raise "'AcceleratedOptimizer'
object has no attribute ..." at the first step. After ``prepare`` the conversion reaches them
through the wrapped optimizer, ``optimizer.optimizer``: the same object the original called, with
the same parameter groups and state the wrapper passes on, so they act as before.

``prepare`` also reloads each optimizer's state dict to place it on the device, and
``load_state_dict`` gives the optimizer new parameter-group dicts. An optimizer built on another
one (SAM: ``base_optimizer(self.param_groups, ...)`` and ``self.param_groups =
self.base_optimizer.param_groups``) then no longer shares its groups with the inner optimizer that
steps: a scheduler moves the outer LR and the inner one keeps the first (verified on CPU: the
losses part from the first LR decay). Such an optimizer is prepared without device placement
(``device_placement=[..., False, ...]``): its state stays where the script put it, groups shared.

The wrapper's ``step`` also returns None where torch's returns the closure's loss: a step whose value
the script reads (``loss = optimizer.step(closure)``, the LBFGS trainers of survey 23d) would hand
on None (``TypeError`` at ``loss * bs``, measured). Such a step is called on the wrapped optimizer,
which returns the loss as before; the wrapper adds nothing else to a step without a GradScaler (and
GradScaler takes no closure either way).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from regcomp_lint.codemod.tree import Block, code, find_all, key_of
from regcomp_lint.codemod.wrapped_access import places_using_prepared, sees_prepared
from regcomp_lint.knowledge.accelerate_api import (
    ACCELERATED_OPTIMIZER_ATTRIBUTES,
    PREPARE_PLACEMENT_KEYWORD,
    STEP_RETURNING_NONE,
    WRAPPED_OPTIMIZER_ATTRIBUTE,
)
from regcomp_lint.knowledge.torch_api import NOT_OPTIMIZER_MODULES, OPTIMIZER_MODULE
from regcomp_lint.knowledge.training_libraries import UNPREPARED_OPTIMIZER_WRAPPERS

if TYPE_CHECKING:
    from regcomp_lint.codemod.plain import PlainPlanner


def reach_own_methods(planner: PlainPlanner, block: Block, prepare_index: int) -> None:
    """Rewrite ``optimizer.own_name`` after ``prepare`` to ``optimizer.optimizer.own_name``."""
    tree = planner.tree
    unwrapped = {key: found for key in planner.optimizers if (found := _not_an_optimizer(planner, key)) is not None}
    for key, (built, line) in unwrapped.items():
        planner.notes.append(
            f"{key} = {built}(...) (line {line}) is no torch.optim.Optimizer: prepare() hands it back as it is, so it "
            "steps and answers its own attributes as in the original"
        )
    optimizers = set(planner.optimizers) - set(unwrapped)
    reached: list[str] = []
    valued: list[str] = []
    for function in places_using_prepared(planner):
        for attr in find_all(function, cst.Attribute, enter_functions=False):
            owner, name = key_of(attr.value), attr.attr.value
            if owner not in optimizers or name.startswith("__"):
                continue
            read_step = name == STEP_RETURNING_NONE and _value_read(planner, attr)
            if name in ACCELERATED_OPTIMIZER_ATTRIBUTES and not read_step:
                continue
            if planner.is_removed(attr):
                continue
            if function is planner.scope:
                index = planner.project(block, attr)
                if index is None or index < planner.prepared_at.get(owner, prepare_index):
                    continue  # still the script's own optimizer
            elif not sees_prepared(function, owner, planner):
                continue
            planner.replace(attr.value, f"{owner}.{WRAPPED_OPTIMIZER_ATTRIBUTE}")
            planner.uses.append(attr)
            if read_step:
                valued.append(f"{owner}.{name}(...) (line {tree.line(attr)})")
            else:
                reached.append(f"{owner}.{name} (line {tree.line(attr)})")
    if valued:
        planner.notes.append(
            f"the value of {', '.join(dict.fromkeys(valued))} is read: the prepared optimizer's step() returns "
            "None, so the step is called on the wrapped optimizer (.optimizer), which returns the closure's loss "
            "as before (the same step without an fp16 GradScaler, which takes no closure either way)"
        )
    if reached:
        planner.notes.append(
            f"{', '.join(dict.fromkeys(reached))} reached through the wrapped optimizer (.optimizer) after prepare(): "
            "the prepared optimizer passes on step(), zero_grad(), the state dicts and param_groups, not what "
            "the optimizer's own class adds"
        )


def _value_read(planner: PlainPlanner, attr: cst.Attribute) -> bool:
    """Is ``attr`` the callee of a call whose value the script uses (not a statement of its own)?"""
    call = planner.tree.parent(attr)
    if not (isinstance(call, cst.Call) and call.func is attr):
        return False
    return not isinstance(planner.tree.parent(call), cst.Expr)


def _not_an_optimizer(planner: PlainPlanner, key: str) -> tuple[str, int] | None:
    """The class and line of ``key``'s last binding when it builds a wrapper prepare() does not wrap: apex's
    ``LARC(optimizer, ...)`` (see :data:`~regcomp_lint.knowledge.training_libraries.UNPREPARED_OPTIMIZER_WRAPPERS`)
    or a class of the script with no base but ``object`` (a copy of it). None otherwise."""
    tree = planner.tree
    calls = [
        a
        for a in find_all(tree.module, cst.Assign)
        if len(a.targets) == 1 and key_of(a.targets[0].target) == key and isinstance(a.value, cst.Call)
    ]
    if not calls:
        return None
    call = calls[-1].value
    assert isinstance(call, cst.Call)
    if tree.resolves_under(call.func, *UNPREPARED_OPTIMIZER_WRAPPERS) is None and not (
        isinstance(call.func, cst.Name)
        and not tree.imported_names(call.func)
        and _plain_class(planner, call.func.value)
    ):
        return None
    return code(call.func).strip(), tree.line(calls[-1])


def _plain_class(planner: PlainPlanner, name: str) -> bool:
    """A class the script defines as ``class LARC(object):`` or ``class LARC:``."""
    classes = [c for c in find_all(planner.tree.module, cst.ClassDef) if c.name.value == name]
    return len(classes) == 1 and all(code(b.value).strip() == "object" for b in classes[0].bases)


def sharing_groups(planner: PlainPlanner) -> set[str]:
    """The optimizers that share parameter groups with another: one built on another optimizer
    (handed an optimizer class, ``SAM(params, torch.optim.SGD, ...)`` directly or through a name
    bound to it; or an optimizer the script built, ``Lookahead(inner)``, which shares too), or one
    whose class, defined in the file, replaces its own ``param_groups``."""
    tree = planner.tree
    optimizers = {k for k, _ in planner.optimizer_found if k is not None}
    found: set[str] = set()
    for assign in find_all(tree.module, cst.Assign):
        key = key_of(assign.targets[0].target) if len(assign.targets) == 1 else None
        call = assign.value
        if key is None or key not in optimizers or not isinstance(call, cst.Call):
            continue
        inner = {k for a in call.args if (k := key_of(a.value)) is not None} & optimizers - {key}
        if inner:
            found |= inner | {key}
        elif any(_optimizer_class(planner, a.value) for a in call.args[1:]):
            found.add(key)
        elif isinstance(call.func, cst.Name) and _replaces_param_groups(planner, call.func.value):
            found.add(key)
    return found


def _optimizer_class(planner: PlainPlanner, expr: cst.BaseExpression, depth: int = 0) -> bool:
    """``torch.optim.SGD`` (the class, not called), or a name the file binds to one."""
    tree = planner.tree
    if isinstance(expr, cst.Name) and depth < 2:
        values = [
            a.value
            for a in find_all(tree.module, cst.Assign)
            if len(a.targets) == 1 and key_of(a.targets[0].target) == expr.value
        ]
        return any(_optimizer_class(planner, v, depth + 1) for v in values)
    if not isinstance(expr, cst.Attribute):
        return False
    name = tree.resolves_under(expr, OPTIMIZER_MODULE) or code(expr).strip()  # torch may come from a star import
    parts = name.split(".")
    return (
        name.startswith(OPTIMIZER_MODULE + ".")
        and not any(name.startswith(m) for m in NOT_OPTIMIZER_MODULES)
        and parts[-1][:1].isupper()
    )


def _replaces_param_groups(planner: PlainPlanner, class_name: str) -> bool:
    for cls in find_all(planner.tree.module, cst.ClassDef):
        if cls.name.value != class_name:
            continue
        for assign in find_all(cls, cst.Assign):
            if any(key_of(t.target) == "self.param_groups" for t in assign.targets):
                return True
    return False


def placement_keyword(planner: PlainPlanner, keys: list[str], host_loaders: frozenset[str] = frozenset()) -> list[str]:
    """``device_placement=[True, False, ...]`` when an optimizer among ``keys`` shares its groups
    (see the module docstring), with a note, or a loader among ``keys`` is in ``host_loaders``
    (its batches stay on the CPU: :mod:`~regcomp_lint.codemod.host_batches`); else nothing."""
    sharing = sharing_groups(planner) if any(k in planner.optimizers for k in keys) else set()
    if any(k in sharing for k in keys):
        note = (
            f"{', '.join(k for k in keys if k in sharing)} shares its parameter groups with another optimizer: "
            "prepared with device_placement False, as prepare() would reload its state dict and give it new groups, "
            "no longer shared with the optimizer that steps (its LR would stop following the scheduler)"
        )
        if note not in planner.notes:
            planner.notes.append(note)
    unplaced = [k for k in keys if k in sharing or k in host_loaders]
    if not unplaced:
        return []
    return [f"{PREPARE_PLACEMENT_KEYWORD}=[{', '.join('False' if k in unplaced else 'True' for k in keys)}]"]
