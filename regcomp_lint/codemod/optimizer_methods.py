"""The optimizer's own methods, reached through the optimizer it wraps once it is prepared.

``prepare`` hands back an ``AcceleratedOptimizer``. It answers ``step``, ``zero_grad``, the state
dicts and ``param_groups`` itself, but nothing the optimizer's own class adds: SAM's
``first_step``/``second_step`` and Sophia's ``update_hessian`` raise "'AcceleratedOptimizer'
object has no attribute ..." at the first step. After ``prepare`` the conversion reaches them
through the wrapped optimizer, ``optimizer.optimizer``: the same object the original called, with
the same parameter groups and state the wrapper passes on, so they act as before.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from regcomp_lint.codemod.tree import Block, find_all, key_of
from regcomp_lint.codemod.wrapped_access import places_using_prepared, sees_prepared
from regcomp_lint.knowledge.accelerate_api import ACCELERATED_OPTIMIZER_ATTRIBUTES, WRAPPED_OPTIMIZER_ATTRIBUTE

if TYPE_CHECKING:
    from regcomp_lint.codemod.plain import PlainPlanner


def reach_own_methods(planner: PlainPlanner, block: Block, prepare_index: int) -> None:
    """Rewrite ``optimizer.own_name`` after ``prepare`` to ``optimizer.optimizer.own_name``."""
    tree = planner.tree
    optimizers = set(planner.optimizers)
    reached: list[str] = []
    for function in places_using_prepared(planner):
        for attr in find_all(function, cst.Attribute, enter_functions=False):
            owner, name = key_of(attr.value), attr.attr.value
            if owner not in optimizers or name in ACCELERATED_OPTIMIZER_ATTRIBUTES or name.startswith("__"):
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
            reached.append(f"{owner}.{name} (line {tree.line(attr)})")
    if reached:
        planner.notes.append(
            f"{', '.join(dict.fromkeys(reached))} reached through the wrapped optimizer (.optimizer) after prepare(): "
            "the prepared optimizer passes on step(), zero_grad(), the state dicts and param_groups, not what "
            "the optimizer's own class adds"
        )
