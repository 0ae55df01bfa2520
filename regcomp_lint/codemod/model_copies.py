"""Copies of the model made between its optimizer and its first training step (an EMA or SWA
average: ``copy.deepcopy(model)``, ``ModelEmaV2(model)``, a class of the script whose
``__init__`` deep-copies what it is handed). They must copy the plain module, so ``prepare()``
goes after them: a copy of the prepared model would be a DDP wrapper (which several processes
cannot deep-copy) or a compile wrapper whose weights save with ``_orig_mod.`` keys.

A plain name for the model taken there, before the script compiles or wraps it
(``uncompiled_model = model`` then ``model = torch.compile(model)``, ``model = DDP(model)``), is the
plain module in the original too: scripts evaluate, generate and save through it. Taken after
prepare() it would be the prepared model (a DDP wrapper has no ``save_pretrained``), so prepare()
goes after it as well: :func:`plain_aliases`."""

from __future__ import annotations

import libcst as cst

from regcomp_lint.codemod.tree import Tree, find_all, init_of, key_of, parameter_names
from regcomp_lint.knowledge import torch_api
from regcomp_lint.knowledge.training_libraries import MODEL_COPIES


def model_copies(tree: Tree, statements: list[cst.BaseStatement], models: set[str]) -> set[int]:
    """The indices in ``statements`` of the simple statements that hand a model to a call making a
    copy of it."""
    copying = _copying_classes(tree)
    return {i for i, stmt in enumerate(statements) if _copies_model(tree, stmt, models, copying)}


def _copies_model(tree: Tree, stmt: cst.BaseStatement, models: set[str], copying: frozenset[str]) -> bool:
    if not isinstance(stmt, cst.SimpleStatementLine):
        return False
    for call in find_all(stmt, cst.Call):
        first = next((a for a in call.args if a.keyword is None and not a.star), None)
        if first is None or key_of(first.value) not in models:
            continue
        if tree.resolves_to(call.func, *MODEL_COPIES):
            return True
        if isinstance(call.func, cst.Name) and call.func.value in copying:
            return True
    return False


def _copying_classes(tree: Tree) -> frozenset[str]:
    """The file's classes whose ``__init__`` deep-copies its first argument (timm's ``ModelEma``
    written out in a script)."""
    found: set[str] = set()
    for cls in find_all(tree.module, cst.ClassDef):
        init = init_of(cls)
        if init is None:
            continue
        params = parameter_names(init, keyword_only=False)[1:2]
        for call in find_all(init, cst.Call):
            if tree.resolves_to(call.func, "copy.deepcopy") and any(
                key_of(a.value) in params for a in call.args if a.keyword is None
            ):
                found.add(cls.name.value)
                break
    return frozenset(found)


def plain_aliases(tree: Tree, statements: list[cst.BaseStatement], models: set[str]) -> dict[int, cst.Assign]:
    """The indices in ``statements`` of those that take ``name = model`` after which the model is
    rebound to ``torch.compile(model)`` or a DDP wrap of it (to any depth: ``if use_compile: model
    = torch.compile(model)``): a simple statement of its own, or one inside a compound statement
    (baby-llama2's ``if opt.compile: unoptimized_model = model; model = torch.compile(model)``),
    the wrap then in that statement after it or in a later one. Each index maps to its alias."""
    found: dict[int, cst.Assign] = {}
    for i, stmt in enumerate(statements):
        if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 or isinstance(stmt, cst.If)):
            continue
        for assign in find_all(stmt, cst.Assign, enter_functions=False):
            if not (
                len(assign.targets) == 1
                and isinstance(assign.targets[0].target, cst.Name)
                and assign.targets[0].target.value not in models
                and key_of(assign.value) in models
            ):
                continue
            model, name = key_of(assign.value), assign.targets[0].target.value
            later = statements[i + 1 :]
            if model is None or any(_binds(other, name) for other in later):
                continue
            after = tree.line(assign)
            here = [w for w in model_wraps(tree, stmt, model) if tree.line(w) > after]
            if here or any(model_wraps(tree, other, model) for other in later):
                found[i] = assign
                break
    return found


def _binds(stmt: cst.BaseStatement, name: str) -> bool:
    """``stmt`` binds ``name`` again (torchvision's ``model_without_ddp = model.module`` after its
    wrap): the conversion already rewrites such a name to ``accelerator.unwrap_model(model)``."""
    return any(
        isinstance(t.target, cst.Name) and t.target.value == name
        for assign in find_all(stmt, cst.Assign, enter_functions=False)
        for t in assign.targets
    )


def model_wraps(tree: Tree, stmt: cst.CSTNode, model: str) -> list[cst.Assign]:
    """The assignments in ``stmt`` that rebind ``model`` to a compile or DDP wrap of it, which the
    conversion removes (the plugin compiles, prepare() wraps): they keep no other name for it."""
    found = []
    for assign in find_all(stmt, cst.Assign, enter_functions=False):
        value = assign.value
        if not (
            isinstance(value, cst.Call)
            and any(key_of(t.target) == model for t in assign.targets)
            and any(key_of(a.value) == model for a in value.args if a.keyword is None and not a.star)
        ):
            continue
        if tree.resolves_to(value.func, *torch_api.TORCH_COMPILE, *torch_api.DATA_PARALLEL):
            found.append(assign)
    return found


def copies_after_training(tree: Tree, place: cst.CSTNode, models: set[str], after_line: int) -> list[cst.Call]:
    """``copy.deepcopy(model)`` calls in ``place`` (not in the functions it defines) of one of the
    prepared ``models``, on a line after ``after_line`` (the first training step of the scope; 0
    in a function that trains or runs after prepare()): a copy to save (``torch.save(deepcopy(model)
    .state_dict(), path)``, ``{"model": deepcopy(model).half()}``) or to evaluate. Taken of the
    prepared model it is the compile wrapper (around DDP on several processes): its weights save
    with ``_orig_mod.`` (``_orig_mod.module.``) keys, and pickled whole it is that wrapper. It must
    copy ``accelerator.unwrap_model(model, keep_torch_compile=False)``, as the original copied the
    plain module. Copies made before training (an EMA average) see the plain module already
    (:func:`model_copies` puts prepare() after them) and are not returned."""
    found: list[cst.Call] = []
    for call in find_all(place, cst.Call, enter_functions=False):
        first = next((a for a in call.args if a.keyword is None and not a.star), None)
        if first is None or key_of(first.value) not in models or tree.line(call) <= after_line:
            continue
        if tree.resolves_to(call.func, "copy.deepcopy"):
            found.append(call)
    return found
