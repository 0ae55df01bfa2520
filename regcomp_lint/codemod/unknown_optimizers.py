"""What a refusal says of an optimizer the conversion cannot recognise.

When no optimizer is found, or a backward runs outside the trained code, the refusal names what
the script zeroes and steps instead (FastSpeech2's ``optimizer = get_optimizer(model, config)``
from a module not beside the script, a ``ScheduledOptim`` stepped by ``step_and_update_lr()``, an
optimizer kept on an object of another module): where it is made, by which call, from which
module, and how it is stepped, not only what it is not. The planner (``codemod.plain``) asks; the
descriptions only read the tree.
"""

from __future__ import annotations

import ast

import libcst as cst

from regcomp_lint.codemod.local_modules import beside, imported_function, importer_of, load_local
from regcomp_lint.codemod.optimizers import model_wrap_in
from regcomp_lint.codemod.rewrites import function_name
from regcomp_lint.codemod.roles import bindings
from regcomp_lint.codemod.settings import Refusal
from regcomp_lint.codemod.tree import Function, Tree, code, find_all, key_of, methods_of


def unrecognised_optimizer(tree: Tree) -> str:
    """What the script zeroes the gradients of, where it is made and how it is stepped, when it
    is none of the optimizers the conversion knows (FastSpeech2's ``optimizer =
    get_optimizer(model, config)`` from a module not beside the script, a ``ScheduledOptim``
    stepped by ``step_and_update_lr()``, a trainer's ``self.optimizer = parser_optimizer(...)``
    made in ``__init__``), or the optimizer an object of another module keeps (a DCGAN port's
    ``netD.optimizer.step()``, a VeOmni engine's ``engine.optimizer.zero_grad()``): the refusal
    names it, not only what it is not."""
    for call in find_all(tree.module, cst.Call):
        func = call.func
        if not (isinstance(func, cst.Attribute) and func.attr.value in ("step", "zero_grad")):
            continue
        method, held = func.attr.value, func.value
        if isinstance(held, cst.Attribute) and "optim" in held.attr.value.lower():
            owner_text = code(held.value).strip()
            if owner_text == "self":
                continue
            return (
                f"{code(held).strip()}.{method}() at line {tree.line(call)} uses an optimizer kept on "
                f"{owner_text}, built where {owner_text}'s class builds it, out of the conversion's sight"
            )
    for call in _optimizer_candidates(tree):
        text = _made_by_an_unknown_call(tree, call)
        if text:
            return text + ", is not one the conversion can tell is an optimizer"
    return ""


def _made_by_an_unknown_call(tree: Tree, call: cst.Call) -> str:
    """``optimizer = build_optimizer(...) at line 24 (from training.trainer, which is not a file
    the conversion can read beside the script), stepped by optimizer.step() at line 28``: where
    the ``X`` of ``call`` (an ``X.zero_grad()`` or ``X.step()``) is made by a call, in the
    function of ``call`` (or, for ``self.X``, any method of its class); empty when it is none, or
    is the model. Raises where the call is a helper of a module beside the script that wraps
    the model itself."""
    func = call.func
    key = key_of(func.value) if isinstance(func, cst.Attribute) else None
    if key is None or key in ("model", "self") or key.endswith("model"):
        return ""
    function = tree.function_of(call)
    places = [function]
    owner = tree.class_of(function) if key.startswith("self.") and isinstance(function, cst.FunctionDef) else None
    if owner is not None:  # `self.optimizer = parser_optimizer(cfg, self.model)` in __init__
        places += [m for m in methods_of(owner) if m is not function]
    made = [
        n
        for place in places
        for n in bindings(place, key)
        if isinstance(n, cst.Assign) and isinstance(n.value, cst.Call)
    ]
    if not made:
        return ""
    value = made[0].value
    assert isinstance(value, cst.Call)
    origin = sorted(tree.imported_names(value.func))
    stepped = [
        c
        for c in find_all(function, cst.Call)
        if isinstance(c.func, cst.Attribute) and key_of(c.func.value) == key and "step" in c.func.attr.value
    ]
    text = f"{key} = {code(value.func).strip()}(...) at line {tree.line(made[0])}"
    helper = imported_function(tree, value.func)
    wrap = model_wrap_in(*helper) if helper is not None else None
    if helper is not None and wrap is not None:
        raise Refusal(
            f"{text}: {helper[1].name}() of {beside(tree, helper[0].path)} "
            f"wraps or compiles the model itself (line {wrap.lineno}: {ast.unparse(wrap.func)}(...)); the "
            "conversion does not edit that module, and prepare() would wrap the wrapper again: drop the wrap "
            "there (prepare() makes it) or convert by hand"
        )
    module = origin[0].rsplit(".", 1)[0] if origin else None
    if module and tree.filename and load_local(importer_of(tree.filename), module) is None:
        text += f" (from {module}, which is not a file the conversion can read beside the script)"
    step = stepped[0].func if stepped else None
    if isinstance(step, cst.Attribute):
        text += f", stepped by {key}.{step.attr.value}() at line {tree.line(stepped[0])}"
    return text


def unknown_optimizer_of(tree: Tree, holder: Function) -> str:
    """``: train_model() steps optimizer = build_optimizer(...) at line 238 (from
    training.trainer, ...), which the conversion cannot tell is an optimizer``: what a function
    holding a backward outside the trained code zeroes or steps, made there by a call the
    conversion does not know as an optimizer's (survey25c ecg_ablation: the DAE pretraining's
    Adam was taken for the only optimizer, and the main training's factory optimizer went
    unnamed); empty when it has none."""
    for call in find_all(holder, cst.Call, enter_functions=False):
        if not (isinstance(call.func, cst.Attribute) and call.func.attr.value in ("zero_grad", "step")):
            continue
        text = _made_by_an_unknown_call(tree, call)
        if text:
            return f": {function_name(holder)} steps {text}, which the conversion cannot tell is an optimizer"
    return ""


def _optimizer_candidates(tree: Tree) -> list[cst.Call]:
    """The ``X.zero_grad()`` and ``X.step()`` calls whose ``X`` may be the unrecognised optimizer,
    the likeliest first: one both zeroed and stepped, then one stepped and named like an
    optimizer, then any zeroed. A DCGAN trainer zeroes its models (``self.netD.zero_grad()``)
    and only steps its optimizers (survey25c tofu_dcgan's ``self.optimizerD =
    get_optimizer(...)``): the refusal named ``self.netD = torch.compile(...)``."""
    calls = [
        c
        for c in find_all(tree.module, cst.Call)
        if isinstance(c.func, cst.Attribute) and c.func.attr.value in ("zero_grad", "step")
    ]
    steps = [c for c in calls if isinstance(c.func, cst.Attribute) and c.func.attr.value == "step"]
    stepped = {key_of(c.func.value) for c in steps if isinstance(c.func, cst.Attribute)}
    zeroed = [c for c in calls if c not in steps]
    return [
        *[c for c in zeroed if isinstance(c.func, cst.Attribute) and key_of(c.func.value) in stepped],
        *[c for c in steps if isinstance(c.func, cst.Attribute) and "optim" in (key_of(c.func.value) or "").lower()],
        *zeroed,
    ]
