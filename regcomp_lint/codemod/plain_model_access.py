"""Where a script that already uses Accelerate reached the plain model, the converted one still does.

``accelerator.unwrap_model(model)`` handed the original the plain module; once the conversion adds
a compiling plugin it hands back the compile wrapper (``keep_torch_compile=True`` is the default),
so whatever the script does with it changes: an EMA made by ``copy.deepcopy`` of it saves
``_orig_mod.`` keys that no longer load into the model (checked on 1 and 2 gloo processes), a
regional ``save_pretrained`` raises, ``generate`` recompiles for every length. Every such call gets
``keep_torch_compile=False``, and the script gets exactly the module it had; the prepared model
itself stays compiled and trains as before.

A copy of the prepared model (``copy.deepcopy(model)``, an EMA built from it after ``prepare``)
is made of ``getattr(model, "_orig_mod", model)``: a copy of the compile wrapper saved
``_orig_mod.0.weight`` keys on one process (checked), where the original's loaded into the model.

State dicts loaded back into the prepared model:

Such a script saves clean keys (``accelerator.unwrap_model(model).state_dict()``,
``accelerator.get_state_dict(model)``) and resumes through ``accelerator.unwrap_model(model)``
(lucidrains' ``Trainer.load``: ``model = self.accelerator.unwrap_model(self.model)`` then
``model.load_state_dict(data["model"])``) or into the prepared model itself (on one process,
``prepare`` hands the model back; on several, the script may prefix the keys with DDP's ``module.``
by hand). Once the conversion adds a compiling plugin, ``prepare`` returns
the compile wrapper and ``unwrap_model`` keeps it by default, so the clean state dict no longer
loads (``Missing key(s) ... "_orig_mod.0.weight"``, checked on 1 and 2 gloo processes), while the
saves are given ``keep_torch_compile=False`` (RC404). The loads go into the module the compile
wraps: ``accelerator.unwrap_model(model, keep_torch_compile=False)`` for an unwrap, and
``getattr(model, "_orig_mod", model)`` for the prepared model (the DDP wrapper where there was one,
so hand-prefixed keys still match; a plain ``torch.compile`` and ``compile_regions`` both keep the
module they wrap as ``_orig_mod``). The same tensors: the compiled model trains on from them.
"""

from __future__ import annotations

import re
from functools import partial
from typing import TYPE_CHECKING

import libcst as cst

from regcomp_lint.codemod.builders import keyword, with_keyword
from regcomp_lint.codemod.lint_view import lint_view
from regcomp_lint.codemod.roles import unpacked_keys
from regcomp_lint.codemod.tree import Function, find_all, key_of

if TYPE_CHECKING:
    from regcomp_lint.codemod.rewrites import Planner

KEEP = "keep_torch_compile"


def reach_the_plain_model(planner: Planner, models: list[tuple[str, int]]) -> None:
    """``keep_torch_compile=False`` on every ``unwrap_model`` call, and every state dict the file
    loads into the prepared model goes into the module the compile wraps; call only when the
    conversion adds the compile."""
    tree = planner.tree
    prepared_at = _prepared_names(planner, dict(models))
    unwraps = _unwrap_to_the_model(planner)
    direct: list[tuple[cst.BaseExpression, str]] = []
    for call in find_all(tree.module, cst.Call):
        func = call.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "load_state_dict"):
            continue
        model = key_of(func.value)
        if model in prepared_at and _sees_prepared(planner, tree.function_of(call), call, model, prepared_at[model]):
            direct.append((func.value, model))
    copies: list[tuple[cst.BaseExpression, str]] = []
    for call in find_all(tree.module, cst.Call):
        if not _copies_a_model(call) or not call.args or call.args[0].star or call.args[0].keyword is not None:
            continue
        model = key_of(call.args[0].value)
        if model in prepared_at and _sees_prepared(planner, tree.function_of(call), call, model, prepared_at[model]):
            copies.append((call.args[0].value, model))
    for receiver, model in direct + copies:
        planner.replace(receiver, f'getattr({model}, "_orig_mod", {model})')
    if unwraps:
        planner.notes.append(
            f"unwrap_model() at {_lines([tree.line(c) for c in unwraps])} -> unwrap_model(..., {KEEP}=False): "
            "it handed the script the plain model, and still does (with the plugin it would hand back the "
            "compile wrapper: _orig_mod. keys in what is saved or copied from it)"
        )
    if copies:
        planner.notes.append(
            f"{_lines([tree.line(r) for r, _ in copies])}: the copy (deepcopy, EMA) is made of the model the compile "
            "wraps (the prepared model's _orig_mod, DDP's wrapper included), so what it saves keeps the plain names"
        )
    if direct:
        planner.notes.append(
            f"load_state_dict() at {_lines([tree.line(r) for r, _ in direct])} loads into the model the compile "
            "wraps (the prepared model's _orig_mod, DDP's wrapper included): the compiled model's keys start "
            "with _orig_mod., and its saves now write the plain model's keys"
        )


def unwrap_past_regions(planner: Planner) -> None:
    """``keep_torch_compile=False`` on every ``unwrap_model`` call, where the conversion turns a
    whole-model compile (a hand ``torch.compile``, ``dynamo_backend=``) into regional compilation.

    The whole-model wrapper that ``unwrap_model`` kept read every attribute of the model through
    (``unwrap_model(model).generate(...)``). Under DDP, ``prepare`` compiles the regions of the DDP
    wrapper and ``unwrap_model`` keeps that compile by handing back the compiled copy of the DDP
    wrapper itself: "'DistributedDataParallel' object has no attribute 'generate'" on 2 gloo
    processes (survey 25d, accelerate 1.15). ``keep_torch_compile=False`` hands the model."""
    unwraps = _unwrap_to_the_model(planner)
    if unwraps:
        planner.notes.append(
            f"unwrap_model() at {_lines([planner.tree.line(c) for c in unwraps])} -> unwrap_model(..., {KEEP}=False): "
            "the whole-model compile it kept read the model's attributes through; with regional compilation "
            "under DDP it would hand back a compiled copy of the DDP wrapper (no generate(), no config)"
        )


def _unwrap_to_the_model(planner: Planner) -> list[cst.Call]:
    """Every ``unwrap_model`` call without ``keep_torch_compile``, given ``keep_torch_compile=False``."""
    unwraps = [call for call in find_all(planner.tree.module, cst.Call) if _keeps_compile(call)]
    for unwrap in unwraps:
        planner.edits.on(unwrap, partial(with_keyword, name=KEEP, value=cst.Name("False")))
    return unwraps


def _copies_a_model(call: cst.Call) -> bool:
    """``copy.deepcopy(model)`` or an EMA built from the model (``EMA(model)``, ``ModelEmaV2(model)``):
    a copy of the compile wrapper would save ``_orig_mod.`` keys."""
    func = call.func
    name = func.value if isinstance(func, cst.Name) else func.attr.value if isinstance(func, cst.Attribute) else ""
    return name == "deepcopy" or bool(_EMA_NAME.search(name))


#: Class or factory names of exponential moving averages of a model.
_EMA_NAME = re.compile(r"EMA|Ema|(?:^|_)ema(?:_|$)|ExponentialMovingAverage")


def _lines(lines: list[int]) -> str:
    shown = sorted(set(lines))
    return f"line{'s' if len(shown) > 1 else ''} {', '.join(map(str, shown))}"


def _prepared_names(planner: Planner, models: dict[str, int]) -> dict[str, int]:
    """The names the prepared models are bound to (``self.model = accelerator.prepare(model)``,
    ``model, opt = accelerator.prepare(model, opt)``), with their ``prepare`` line: a name counts
    when the argument is one of ``models`` or the lint's roles read the name as a model."""
    tree = planner.tree
    view = lint_view(tree)
    names: dict[str, int] = {}
    for call in find_all(planner.scope, cst.Call):
        func = call.func
        if not (
            isinstance(func, cst.Attribute) and func.attr.value == "prepare" and key_of(func.value) == planner.acc_key
        ):
            continue
        stmt = tree.parent(call)
        if not isinstance(stmt, cst.Assign) or len(stmt.targets) != 1:
            continue
        target = stmt.targets[0].target
        targets: list[cst.BaseExpression]
        if isinstance(target, (cst.Tuple, cst.List)):
            if unpacked_keys(stmt) is None or len(target.elements) != len(call.args):
                continue
            targets = [el.value for el in target.elements]
        elif len(call.args) == 1:
            targets = [target]
        else:
            continue
        for arg, bound in zip(call.args, targets):
            name = key_of(bound)
            if name is None or arg.star:
                continue
            expr = view.expression_at(bound)
            if key_of(arg.value) in models or (
                expr is not None and view.roles is not None and view.roles.is_model(expr, view.where(expr))
            ):
                names[name] = tree.line(call)
    return names


def _keeps_compile(node: cst.BaseExpression) -> bool:
    """``X.unwrap_model(m)`` or ``X.unwrap_model(m, keep_fp32_wrapper)``, no ``keep_torch_compile``."""
    if not (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)):
        return False
    if node.func.attr.value != "unwrap_model" or not node.args or len(node.args) > 2:
        return False
    return keyword(node, KEEP) is None and not any(a.star for a in node.args)


def _sees_prepared(planner: Planner, function: Function, call: cst.Call, model: str, prepared_line: int) -> bool:
    """Does ``model`` at ``call`` stand for the prepared model: after ``prepare`` in the scope, or
    an attribute of the scope's object read in another of its methods."""
    tree = planner.tree
    if function is planner.scope:
        return tree.line(call) > prepared_line
    owner = tree.class_of(planner.scope)
    return model.startswith("self.") and owner is not None and tree.class_of(function) is owner
