"""An Accelerate script whose ``Accelerator`` is built outside this file: refused, saying where it comes from.

The file trains through an accelerator it does not build: a parameter handed in by the caller
(``def train_pAUC(config, raw_questions, accelerator, ...)``) or the result of a function from a
module that is not here (``accelerator, repo = setup_accelerator(config)``). It calls that
object's Accelerate methods (``prepare``, ``accumulate``, ``gather_for_metrics`` ...), but no
``Accelerator(...)`` is in the file, and the plugin belongs in that call. Read as a plain script
(survey 19e), the file got a second ``Accelerator`` after its own ``prepare()``, its model
prepared twice and ``accelerator.backward(loss)`` rewritten to ``accelerator.backward(accelerator,
loss)``; or a refusal about a handed-in optimizer that the file already prepares.
"""

from __future__ import annotations

import libcst as cst

from regcomp_lint.codemod.settings import Refusal
from regcomp_lint.codemod.tree import Tree, code, find_all, key_of
from regcomp_lint.knowledge.accelerate_api import ACCELERATOR_ONLY_METHODS, PREPARE_METHODS


def refuse_an_accelerator_from_elsewhere(tree: Tree) -> None:
    """Refuse a file without ``Accelerator(...)`` that trains (a ``.backward(`` of its own) and
    calls Accelerate's methods on an object (one named ``...accelerator``, or any object where
    the file imports accelerate); a ``prepare`` call is named first, being where the training
    objects meet the accelerator."""
    if "accelerat" not in tree.text.lower() or ".backward(" not in tree.text:
        return  # a file whose backward runs elsewhere: the planner names where the loop runs
    imports = _imports_accelerate(tree)
    found: list[tuple[cst.Call, cst.Attribute, str]] = []
    for call in find_all(tree.module, cst.Call):
        func = call.func
        if not isinstance(func, cst.Attribute) or func.attr.value not in ACCELERATOR_ONLY_METHODS:
            continue
        holder = key_of(func.value)
        if holder is None or holder == "self" or (func.attr.value in PREPARE_METHODS and not call.args):
            continue
        if imports or "accelerator" in holder.split(".")[-1].lower():
            found.append((call, func, holder))
    if not found:
        return
    call, func, holder = min(found, key=lambda f: (f[1].attr.value not in PREPARE_METHODS, tree.line(f[0])))
    raise Refusal(
        f"it trains through an Accelerator this file does not build: {code(func)}(...) at line {tree.line(call)} "
        f"is called on {holder}, which {_origin(tree, call, holder)}, and no Accelerator(...) is in the file; "
        "the TorchDynamoPlugin goes into the Accelerator(...) call where it is built (convert that file, or add "
        'dynamo_plugin=TorchDynamoPlugin(backend="inductor") there), or launch with '
        "`accelerate launch --dynamo_backend inductor`"
    )


def _imports_accelerate(tree: Tree) -> bool:
    for node in find_all(tree.module, cst.ImportFrom):
        if node.module is not None and code(node.module).split(".")[0] == "accelerate":
            return True
    for imported in find_all(tree.module, cst.Import):
        if any(code(alias.name).split(".")[0] == "accelerate" for alias in imported.names):
            return True
    return False


def _origin(tree: Tree, call: cst.Call, holder: str) -> str:
    """Where ``holder`` comes from, as the refusal says it: a parameter, or what assigns it."""
    name = holder.split(".")[-1]
    for anc in tree.ancestors(call):
        if not isinstance(anc, cst.FunctionDef):
            continue
        params = anc.params
        for param in [*params.posonly_params, *params.params, *params.kwonly_params]:
            if param.name.value == holder:
                return f"is a parameter of {anc.name.value}() (line {tree.line(param)}), handed in by its caller"
    for assign in find_all(tree.module, cst.Assign):
        for target in assign.targets:
            names = (
                [target.target]
                if not isinstance(target.target, cst.Tuple)
                else [e.value for e in target.target.elements]
            )
            if any(key_of(n) == holder or (isinstance(n, cst.Attribute) and n.attr.value == name) for n in names):
                return f"comes from {code(assign.value)} at line {tree.line(assign)}"
    return "is not built here"
