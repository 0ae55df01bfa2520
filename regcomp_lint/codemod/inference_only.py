"""Whether a script with no backward of its own trains anything at all: an evaluation or
forecasting script that wraps its model in ``DataParallel`` for inference is no training script
(nothing to convert), while MAE's ``main_pretrain.py`` builds the optimizer its engine steps."""

from __future__ import annotations

import libcst as cst

from regcomp_lint.codemod.optimizers import find_optimizers
from regcomp_lint.codemod.tree import Function, Tree, find_all

#: methods whose call means the script trains here or drives training elsewhere
_TRAINING_METHODS = frozenset({"train", "zero_grad", "step", "backward", "fit"})


def trains_nothing(tree: Tree) -> bool:
    """No optimizer is built anywhere in the file, and nothing is called that trains: no
    ``.train()``, ``.zero_grad()``, ``.step()``, ``.fit()``, and no function or method whose
    name says it trains (``train_one_epoch(...)``, ``trainer.launch_training()``)."""
    for call in find_all(tree.module, cst.Call):
        func = call.func
        name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
        if name in _TRAINING_METHODS or "train" in name.lower():
            return False
    places: list[Function] = [tree.module, *find_all(tree.module, cst.FunctionDef)]
    return not any(find_optimizers(tree, place) for place in places)
