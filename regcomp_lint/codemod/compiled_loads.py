"""State dicts loaded back into the prepared model of a script that already uses Accelerate.

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

from functools import partial
from typing import TYPE_CHECKING

import libcst as cst

from regcomp_lint.codemod.builders import keyword, with_keyword
from regcomp_lint.codemod.lint_view import lint_view
from regcomp_lint.codemod.roles import bindings, unpacked_keys
from regcomp_lint.codemod.tree import Function, find_all, key_of

if TYPE_CHECKING:
    from regcomp_lint.codemod.rewrites import Planner

KEEP = "keep_torch_compile"


def unwrap_for_loads(planner: Planner, models: list[tuple[str, int]]) -> None:
    """Load every state dict the file gives the prepared model (directly or through
    ``unwrap_model``) into the uncompiled module; call only when the conversion adds the compile."""
    tree = planner.tree
    prepared_at = _prepared_names(planner, dict(models))
    unwraps: dict[int, cst.Call] = {}
    direct: list[tuple[cst.BaseExpression, str, Function]] = []
    lines: list[int] = []  # of the loads
    for call in find_all(tree.module, cst.Call):
        func = call.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "load_state_dict"):
            continue
        function = tree.function_of(call)
        found = _unwrap_of(func.value, function)
        if found is not None:
            unwraps.update((id(c), c) for c in found)
            lines.append(tree.line(call))
            continue
        model = key_of(func.value)
        if model in prepared_at and _sees_prepared(planner, function, call, model, prepared_at[model]):
            direct.append((func.value, model, function))
            lines.append(tree.line(call))
    for unwrap in unwraps.values():
        planner.edits.on(unwrap, partial(with_keyword, name=KEEP, value=cst.Name("False")))
    for receiver, model, _ in direct:
        planner.replace(receiver, f'getattr({model}, "_orig_mod", {model})')
    if lines:
        shown = ", ".join(map(str, sorted(set(lines))))
        planner.notes.append(
            f"load_state_dict() at line{'s' if len(set(lines)) > 1 else ''} {shown} loads into the model the "
            f"compile wraps (unwrap_model(..., {KEEP}=False), or the prepared model's _orig_mod): the compiled "
            "model's keys start with _orig_mod., and its saves now write the plain model's keys"
        )


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
        if len(call.args) == 1 and not isinstance(target, (cst.Tuple, cst.List)):
            targets: list[cst.BaseExpression] = [target]
        elif unpacked_keys(stmt) is not None and len(target.elements) == len(call.args):  # type: ignore[union-attr]
            targets = [el.value for el in target.elements]  # type: ignore[union-attr]
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


def _unwrap_of(receiver: cst.BaseExpression, function: Function) -> list[cst.Call] | None:
    """The ``unwrap_model(m)`` calls (keeping the compile) that ``receiver`` is: the call itself,
    or a local name every binding of which in ``function`` is such a call."""
    if _keeps_compile(receiver):
        assert isinstance(receiver, cst.Call)
        return [receiver]
    if not isinstance(receiver, cst.Name) or isinstance(function, cst.Module):
        return None
    found = bindings(function, receiver.value)
    values = [b.value for b in found if isinstance(b, cst.Assign) and len(b.targets) == 1]
    if not found or len(values) != len(found) or not all(_keeps_compile(v) for v in values):
        return None
    return [v for v in values if isinstance(v, cst.Call)]


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
