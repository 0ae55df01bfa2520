"""The prepared model a training function returns goes back to its caller unwrapped.

``prepare`` may hand back the model inside DDP (several processes) and ``torch.compile``'s
wrapper. A training function that ends ``return online`` (survey21c byol_spot's ``train_byol``)
gave its caller that wrapper: the caller's ``extract_features(online, ...)`` read
``online.encoder`` and, launched on 2 processes, raised "'DistributedDataParallel' object has no
attribute 'encoder'" once training was over. The original returned the plain model; the
conversion returns ``accelerator.unwrap_model(model, keep_torch_compile=False)``, the same module
with the trained weights (see :data:`~regcomp_lint.knowledge.accelerate_api.REGIONAL_UNWRAP`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from regcomp_lint.codemod.tree import Block, find_all, key_of
from regcomp_lint.knowledge import accelerate_api

if TYPE_CHECKING:
    from regcomp_lint.codemod.plain import PlainPlanner


def unwrap_returned_models(planner: PlainPlanner, block: Block, prepare_index: int) -> None:
    """Rewrite ``return model`` (or ``return model, other``) after ``prepare`` in the training
    function to return the unwrapped model."""
    scope = planner.scope
    if not isinstance(scope, cst.FunctionDef):
        return
    tree = planner.tree
    models = set(planner.models)
    for ret in find_all(scope, cst.Return, enter_functions=False):
        value = ret.value
        elements = [e.value for e in value.elements] if isinstance(value, cst.Tuple) else [value]
        for element in elements:
            model = key_of(element) if element is not None else None
            if element is None or model not in models or planner.is_removed(ret):
                continue
            index = planner.project(block, ret)
            if index is None or index < planner.prepared_at.get(model, prepare_index):
                continue  # still the plain model
            unwrapped = f"{planner.acc_key}.unwrap_model({model}, {accelerate_api.REGIONAL_UNWRAP})"
            planner.replace(element, unwrapped)
            planner.uses.append(ret)
            planner.notes.append(
                f"{model} returned at line {tree.line(ret)} is {unwrapped}: the caller gets the plain model the "
                "original returned (DDP does not pass the model's own attributes through), with the trained weights"
            )
