"""Whether the original script reads ``model.state_dict()`` only on a branch where the model is
not a DDP/DataParallel wrapper: ``if isinstance(model, DDP): save(model.module.state_dict())
else: save(model.state_dict())``, ``if not isinstance(...)``, ``hasattr(model, "module")`` and the
conditional-expression forms (survey 19c's CIFAR ResNet). Such a checkpoint never had ``module.``
keys, so the conversion must not tell the user to strip that prefix from old checkpoints. A branch
beside one that reads ``model.module`` (``model.module.state_dict() if is_distributed else
model.state_dict()``, lars_barlow, survey 23a) is one too: the script reads ``.module`` only where
it holds the wrapper."""

from __future__ import annotations

import libcst as cst

from regcomp_lint.codemod.roles import key_of
from regcomp_lint.codemod.tree import Tree, find_all
from regcomp_lint.knowledge.torch_api import DATA_PARALLEL


def taken_unwrapped(tree: Tree, node: cst.CSTNode, model: str) -> bool:
    """``node`` runs only when ``model`` is not a data-parallel wrapper, by a test around it."""
    child: cst.CSTNode = node
    for anc in tree.ancestors(node):
        if isinstance(anc, (cst.If, cst.IfExp)) and child is not anc.test:
            wrapped = _tests_wrapped(tree, anc.test, model)
            if wrapped is not None and (child is anc.body) != wrapped:
                return True
            other = anc.orelse if child is anc.body else anc.body
            if wrapped is None and other is not None and _reads_module(other, model):
                return True
        child = anc
    return False


def _tests_wrapped(tree: Tree, test: cst.BaseExpression, model: str) -> bool | None:
    """True when ``test`` holds exactly when ``model`` is wrapped, False when it holds exactly when
    it is not, None when it says neither."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = _tests_wrapped(tree, test.expression, model)
        return None if inner is None else not inner
    if not isinstance(test, cst.Call) or not isinstance(test.func, cst.Name) or len(test.args) != 2:
        return None
    if any(a.keyword is not None or a.star for a in test.args) or key_of(test.args[0].value) != model:
        return None
    what = test.args[1].value
    if test.func.value == "isinstance":
        kinds = [e.value for e in what.elements] if isinstance(what, cst.Tuple) else [what]
        return True if any(tree.resolves_to(k, *DATA_PARALLEL) for k in kinds) else None
    if test.func.value == "hasattr" and isinstance(what, cst.SimpleString) and what.evaluated_value == "module":
        return True
    return None


def _reads_module(node: cst.CSTNode, model: str) -> bool:
    """``model.module`` somewhere in ``node``: the script holds the wrapper there."""
    return any(attr.attr.value == "module" and key_of(attr.value) == model for attr in find_all(node, cst.Attribute))
