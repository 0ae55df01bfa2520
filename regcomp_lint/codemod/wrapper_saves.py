"""Checkpoints of the wrapper's model, saved in a helper, written by the main process only.

the MV-softmax face trainer's ``train_one_epoch(data_loader, model, ...)`` ends every epoch with
``torch.save({'state_dict': model.module.state_dict(), ...}, path)``: one process wrote it. The
conversion removes the DataParallel wrap and reads ``model.module`` through
``accelerator.unwrap_model`` (``hand_distribution.py``); launched on several processes, every one
of them would then write the same file. The save becomes ``accelerator.save`` (the main process
writes), as a save of ``model.state_dict()`` does (``plain.py``). Saves in the main function and
the trainer's methods are ``checkpoint_writes.save_the_rest_once``'s; a save under a rank test, or
into a buffer of its own process, stays as it is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from regcomp_lint.codemod.checkpoint_writes import save_once, saves_into_memory, state_saves, under_rank_test
from regcomp_lint.codemod.tree import Function, find_all, key_of
from regcomp_lint.codemod.wrapped_access import sees_prepared

if TYPE_CHECKING:
    from regcomp_lint.codemod.plain import PlainPlanner


def save_wrapper_states_once(planner: PlainPlanner, helpers: list[Function]) -> list[tuple[Function, cst.Call]]:
    """Rewrite the ``torch.save`` of each ``model.module.state_dict()`` in ``helpers`` (functions
    the prepared model is handed to) to ``accelerator.save``; the rewritten calls are returned."""
    tree = planner.tree
    models = set(planner.models)
    rewritten: list[tuple[Function, cst.Call]] = []
    for place in helpers:
        for call in find_all(place, cst.Call, enter_functions=False):
            model = _wrapper_state_of(call.func, models)
            if model is None or not sees_prepared(place, model, planner) or not planner.can_reach_accelerator(place):
                continue
            for save in state_saves(tree, place, call):
                if not (under_rank_test(planner, save) or saves_into_memory(planner, save)):
                    rewritten.append(save_once(planner, place, save))
    return rewritten


def _wrapper_state_of(func: cst.BaseExpression, models: set[str]) -> str | None:
    """The prepared model ``func`` reads the state of through its wrapper: ``model.module.state_dict``."""
    if not (isinstance(func, cst.Attribute) and func.attr.value == "state_dict"):
        return None
    wrapper = func.value
    if not (isinstance(wrapper, cst.Attribute) and wrapper.attr.value == "module"):
        return None
    model = key_of(wrapper.value)
    return model if model in models else None
