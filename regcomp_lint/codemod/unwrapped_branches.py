"""Whether the original script reads ``model.state_dict()`` only on a branch where the model is
not a DDP/DataParallel wrapper: ``if isinstance(model, DDP): save(model.module.state_dict())
else: save(model.state_dict())``, ``if not isinstance(...)``, ``hasattr(model, "module")`` and the
conditional-expression forms (survey 19c's CIFAR ResNet). Such a checkpoint never had ``module.``
keys, so the conversion must not tell the user to strip that prefix from old checkpoints. The
test may also be the condition the wrap itself sits under (``if is_distributed: model = DDP(model)``
then ``model.module.state_dict() if is_distributed else model.state_dict()``, survey 23b's FiD-T5)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from regcomp_lint.codemod.roles import key_of
from regcomp_lint.codemod.tree import Function, Tree, code, find_all, single_target
from regcomp_lint.knowledge.torch_api import DATA_PARALLEL

if TYPE_CHECKING:
    from regcomp_lint.codemod.rewrites import Planner


def taken_unwrapped(tree: Tree, node: cst.CSTNode, model: str) -> bool:
    """``node`` runs only when ``model`` is not a data-parallel wrapper, by a test around it."""
    child: cst.CSTNode = node
    conditions: frozenset[str] | None = None
    for anc in tree.ancestors(node):
        if isinstance(anc, (cst.If, cst.IfExp)) and child is not anc.test:
            if conditions is None:
                conditions = _wrap_conditions(tree, model)
            wrapped = _tests_wrapped(tree, anc.test, model, conditions)
            if wrapped is not None and (child is anc.body) != wrapped:
                return True
        child = anc
    return False


def _wrap_conditions(tree: Tree, model: str) -> frozenset[str]:
    """The source of the one test every data-parallel wrap of ``model`` sits under, in the body of
    its ``if`` (``if is_distributed: model = DDP(model)``), or nothing when some wrap has none."""
    found: set[str] = set()
    for assign in find_all(tree.module, cst.Assign):
        target = single_target(assign)
        value = assign.value
        if target is None or target[0] != model or not isinstance(value, cst.Call):
            continue
        if not tree.resolves_to(value.func, *DATA_PARALLEL):
            continue
        child: cst.CSTNode = assign
        test = None
        for anc in tree.ancestors(assign):
            if isinstance(anc, cst.If):
                test = code(anc.test).strip() if child is anc.body else None
                break
            if isinstance(anc, (cst.FunctionDef, cst.ClassDef)):
                break
            child = anc
        if test is None:
            return frozenset()
        found.add(test)
    return frozenset(found) if len(found) == 1 else frozenset()


def _tests_wrapped(
    tree: Tree, test: cst.BaseExpression, model: str, conditions: frozenset[str] = frozenset()
) -> bool | None:
    """True when ``test`` holds exactly when ``model`` is wrapped, False when it holds exactly when
    it is not, None when it says neither; ``conditions``: the test the wraps sit under."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = _tests_wrapped(tree, test.expression, model, conditions)
        return None if inner is None else not inner
    if code(test).strip() in conditions:
        return True
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


def note_wrapper_tests(planner: Planner, places: list[Function], models: list[str]) -> list[str]:
    """Notes for each ``isinstance(model, DDP)`` (or a tuple of data-parallel wrappers) of a
    prepared ``model`` in ``places``: with the plugin, prepare() returns the compiled wrapper (around
    the DDP wrap on several processes), never a DDP, so the test is false on every process
    (survey 23f gpt2_chakra; measured: ``OptimizedModule`` on 1 and 2 gloo processes).
    ``hasattr(model, "module")`` is left: the compiled wrapper passes it on to the DDP it holds.
    Not a test the conversion replaces or removes (``raw = model.module if isinstance(model, DDP)
    else model`` becomes ``accelerator.unwrap_model(model, ...)``)."""
    tree = planner.tree
    notes: list[str] = []
    seen: set[int] = set()
    for place in places:
        for call in find_all(place, cst.Call, enter_functions=False):
            model = key_of(call.args[0].value) if len(call.args) == 2 else None
            if id(call) in seen or model not in models or not isinstance(call.func, cst.Name):
                continue
            seen.add(id(call))
            if call.func.value != "isinstance" or _tests_wrapped(tree, call, model) is not True:
                continue
            if planner.is_removed(call) or _replaced(planner, call):
                continue
            notes.append(
                f"{code(call).strip()} at line {tree.line(call)} is always false after prepare(): with the "
                f"TorchDynamoPlugin the prepared {model} is the compiled wrapper (around the DDP wrap on several "
                "processes), never a DDP: drop the test by hand, keeping the code for a model that is not one"
            )
    return notes


def _replaced(planner: Planner, call: cst.Call) -> bool:
    """An expression around ``call``, within its statement, is replaced by the conversion."""
    for anc in planner.tree.ancestors(call):
        if isinstance(anc, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
            return False
        if anc in planner.edits.replace:
            return True
    return False
