"""Which assignments of a script build an optimizer, and from which model(s).

Not decided here: each ``key = value`` creation is asked of the lint's roles
(:mod:`~regcomp_lint.analysis.optimizer_sources`, through ``lint_view``), which RC402 reads too:
library optimizers, the script's ``torch.optim.Optimizer`` subclasses, local and library
factories, ``model.configure_optimizers()``, and calls fed parameters whose result the script
uses as an optimizer. This module only pairs the answers with the converter's libcst statements.
"""

from __future__ import annotations

import ast
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

import libcst as cst

from regcomp_lint.analysis.file_context import FileContext
from regcomp_lint.analysis.optimizer_sources import OptimizerSource, returned_slots
from regcomp_lint.analysis.reachability.modules import ParsedModule
from regcomp_lint.analysis.training_objects import Kind, constructor_kind
from regcomp_lint.analysis.training_roles import Origin
from regcomp_lint.codemod.lint_view import lint_view
from regcomp_lint.codemod.local_modules import imported_function
from regcomp_lint.codemod.roles import Creation, creations, unpacked_keys
from regcomp_lint.codemod.taken_apart import Holder, held_results
from regcomp_lint.codemod.tree import Function, Tree, code, find_all
from regcomp_lint.files.source import SourceFile
from regcomp_lint.knowledge import torch_api


@dataclass
class FoundOptimizer:
    key: str
    stmt: cst.Assign
    models: list[str]  # empty when the optimizer's parameters cannot be traced to a model
    construct: str  # what builds it, for notes and refusals


def find_optimizers(tree: Tree, function: Function) -> list[FoundOptimizer]:
    """Every ``key = <optimizer>`` assignment in ``function`` (not in nested defs), and every
    optimizer unpacked from a local helper's tuple (``model, opt = get_model(lr)``), in source order.

    Worked out once per function of a tree: the planner asks about the same functions from
    several places (the scope, the closure check, the untrained parameters, a handed-in
    optimizer), and the tree and its lint view do not change meanwhile."""
    known = _FOUND.get(tree)
    if known is None:
        known = _FOUND[tree] = {}
    found = known.get(function)
    if found is None:
        found = known[function] = _find_optimizers(tree, function)
    return [FoundOptimizer(f.key, f.stmt, list(f.models), f.construct) for f in found]  # (the caller's to change)


_FOUND: weakref.WeakKeyDictionary[Tree, dict[Function, list[FoundOptimizer]]] = weakref.WeakKeyDictionary()


def _find_optimizers(tree: Tree, function: Function) -> list[FoundOptimizer]:
    found = []
    for creation in creations(function):
        source = _source(tree, creation)
        if source is not None:
            found.append(FoundOptimizer(creation.key, creation.stmt, source.owners, source.construct))
    found += _unpacked(tree, function)
    found += _taken_apart(tree, function)
    return sorted(found, key=lambda f: tree.line(f.stmt))


def _unpacked(tree: Tree, function: Function) -> list[FoundOptimizer]:
    """``model, opt = get_model(lr)``: the optimizer's models are the names its tuple neighbours
    (the model returned beside it) and the call's arguments are bound to."""
    view = lint_view(tree)
    found = []
    for assign in find_all(function, cst.Assign, enter_functions=False):
        keys = unpacked_keys(assign)
        call = view.expression_at(assign.value) if keys else None
        if keys is None or not isinstance(call, ast.Call) or view.roles is None:
            continue
        unpacked = view.roles.optimizers.unpacked_sources(call, view.where(call), len(keys))
        if not unpacked:  # `optimizer, scheduler = build_optimizer_and_scheduler(model, cfg)` of utils/optim.py
            unpacked = _unpacked_elsewhere(tree, assign.value, call, len(keys))
        for index, (source, beside) in unpacked.items():
            key = keys[index]
            models = [k for k in [*(keys[i] for i in beside), *source.owners] if k is not None]
            if key is not None:
                found.append(FoundOptimizer(key, assign, list(dict.fromkeys(models)), source.construct))
    return found


def _taken_apart(tree: Tree, function: Function) -> list[FoundOptimizer]:
    """``parts = setup(cfg)`` then ``optimizer = parts["optimizer"]`` (or ``parts[1]``, or an
    unpacking of ``parts``): the optimizer the helper returns in that slot, its models the keys the
    caller takes out of the slots of the models returned beside it, or the arguments it was handed.
    Only for a holder nothing else reads (taken_apart.py)."""
    view = lint_view(tree)
    found: list[FoundOptimizer] = []
    if view.roles is None:
        return found
    for holder in held_results(tree, function):
        if holder.stray:
            continue
        sources = view.roles.optimizers.element_sources(holder.call, view.where(holder.call))
        if not sources:  # `parts = setup(cfg)` of the project's builders.py
            sources = _elements_elsewhere(tree, holder.bound.value, holder.call)
        for slot, (source, beside) in sources.items():
            piece = holder.pieces.get(slot)
            if piece is None:
                continue
            models = [*(holder.pieces[s].key for s in beside if s in holder.pieces), *source.owners]
            found.append(FoundOptimizer(piece.key, piece.stmt, list(dict.fromkeys(models)), source.construct))
    return found


def stray_holders(tree: Tree, function: Function) -> list[Holder]:
    """Holders of a helper's result that returns an optimizer, read other than to take it apart
    (``parts["optimizer"].step()`` in the loop, ``log_lr(parts)``): their pieces cannot be
    rebound by prepare() (taken_apart.py)."""
    view = lint_view(tree)
    if view.roles is None:
        return []
    return [
        holder
        for holder in held_results(tree, function)
        if holder.stray and view.roles.optimizers.element_sources(holder.call, view.where(holder.call))
    ]


def not_optimizers(tree: Tree, function: Function) -> list[tuple[str, int]]:
    """Assignments fed model parameters that are not used as optimizers (for refusal reasons);
    not a builtin's (``weight = next(self.parameters())``, ``params = list(model.parameters())``)."""
    view = lint_view(tree)
    found = []
    for creation in creations(function):
        call = _call_of(tree, creation)
        if call is None or view.roles is None or _source(tree, creation) is not None:
            continue
        if isinstance(call.func, ast.Name) and view.is_builtin(call.func.id):
            continue
        if view.roles.optimizers.fed_parameters(call, view.where(call)):
            found.append((code(creation.stmt).strip(), tree.line(creation.stmt)))
    return found


@dataclass(frozen=True)
class HandUpdate:
    """An in-place update of a model's parameters from their gradients, with no optimizer."""

    text: str  # the update statement (``p.data.add_(p.grad, alpha=-lr)``)
    line: int
    model: str  # what ``.parameters()`` is called on (``model``, ``self.rnn``)
    loop: cst.For


def updated_by_hand(tree: Tree) -> HandUpdate | None:
    """The first in-place update of parameters from their gradients with no optimizer, as
    pytorch/examples' word language model writes it: ``for p in model.parameters():
    p.data.add_(p.grad, alpha=-lr)`` (or ``p -= lr * p.grad`` under ``torch.no_grad()``)."""
    for loop in find_all(tree.module, cst.For):
        iterated = loop.iter
        if not (
            isinstance(iterated, cst.Call)
            and isinstance(iterated.func, cst.Attribute)
            and iterated.func.attr.value in ("parameters", "named_parameters")
        ):
            continue
        names = [n.value for n in find_all(loop.target, cst.Name)]
        for stmt in find_all(loop.body, cst.SimpleStatementLine):
            text = code(stmt).strip()
            if not any(f"{n}.grad" in text for n in names):
                continue
            small = stmt.body[0] if len(stmt.body) == 1 else None
            target = (
                small.target
                if isinstance(small, cst.AugAssign)
                else small.value.func
                if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call)
                else None
            )
            in_place = isinstance(small, cst.AugAssign) or (
                isinstance(target, cst.Attribute) and target.attr.value.endswith("_")
            )
            if in_place and target is not None and _root_name(target) in names:
                return HandUpdate(text, tree.line(stmt), code(iterated.func.value).strip(), loop)
    return None


def _root_name(node: cst.BaseExpression) -> str | None:
    """``p`` of ``p``, ``p.data`` and ``p.data.add_``."""
    while isinstance(node, cst.Attribute):
        node = node.value
    return node.value if isinstance(node, cst.Name) else None


def _source(tree: Tree, creation: Creation) -> OptimizerSource | None:
    view = lint_view(tree)
    call = _call_of(tree, creation)
    if call is None or view.roles is None:
        return None
    optimizers, where = view.roles.optimizers, view.where(call)
    source = optimizers.source(call, where)
    if source is not None:
        return source
    # the cheap questions first: most creations (`loss = criterion(out, y)`) are fed no
    # parameters and call nothing of another module, and then what they hold is not asked
    owners = optimizers.fed_parameters(call, where)
    elsewhere = not owners and _builds_optimizer_elsewhere(tree, creation.value)
    if not owners and not elsewhere:
        return None
    if _builds_a_scheduler(view.roles.origin(call, where)):
        return None  # `scheduler = make_scheduler(optimizer)`: handed the optimizer's parameters, but a scheduler
    if owners and optimizers.used_as_optimizer(call):
        return OptimizerSource(owners, view.text(call.func))
    if (elsewhere or _builds_optimizer_elsewhere(tree, creation.value)) and optimizers.used_as_optimizer(call):
        # `optimizer = build_optimizer(model, lr)` of the project's optim_utils.py
        owners = optimizers.parameter_owners(call, where, handed=True)
        if owners:
            return OptimizerSource(owners, view.text(call.func))
    return None


def _builds_optimizer_elsewhere(tree: Tree, value: cst.BaseExpression) -> bool:
    """``value`` calls a function of another module of the project (read next to the script,
    ``ast`` only) that returns an optimizer it constructs: ``return torch.optim.SGD(...)``, or a
    name bound to one there."""
    found = returned_elsewhere(tree, value)
    return found is not None and any(found[0](returned) is Kind.OPTIMIZER for returned in found[1])


def _unpacked_elsewhere(
    tree: Tree, value: cst.BaseExpression, call: ast.Call, width: int
) -> dict[int, tuple[OptimizerSource, list[int]]]:
    """The optimizer another module's function returns in every tuple of ``width`` values it
    returns (``return optimizer, scheduler``), by position, with the models the call hands it or,
    handed none, the positions of the models it returns beside it (``return model, optimizer``),
    as :meth:`OptimizerSources.unpacked_sources` answers for the file's own functions."""
    view = lint_view(tree)
    found = returned_elsewhere(tree, value)
    if found is None or view.roles is None:
        return {}
    kind, returns = found
    tuples = [r for r in returns if isinstance(r, ast.Tuple) and len(r.elts) == width]
    if not tuples or len(tuples) != len(returns):
        return {}
    unpacked: dict[int, tuple[OptimizerSource, list[int]]] = {}
    # `model, optimizer, scheduler = setup(cfg)`: the model it builds is returned beside the optimizer
    models = [i for i in range(width) if all(kind(r.elts[i]) is Kind.MODEL for r in tuples)]
    for index in range(width):
        if all(kind(r.elts[index]) is Kind.OPTIMIZER for r in tuples):
            owners = view.roles.optimizers.parameter_owners(call, view.where(call), handed=True)
            # `model = build_model(); ...; return model, optimizer`: the model, whatever builds it
            beside = models or [int(k) for k in _owner_slots(tree, value, dict(enumerate(tuples[0].elts)), index)]
            if owners or beside:
                construct = f"{view.text(call.func)}() (returns an optimizer)"
                unpacked[index] = (OptimizerSource(owners, construct), [] if owners else beside)
    return unpacked


def _elements_elsewhere(
    tree: Tree, value: cst.BaseExpression, call: ast.Call
) -> dict[int | str, tuple[OptimizerSource, list[int | str]]]:
    """Like :func:`_unpacked_elsewhere`, by slot, for a holder of what another module's function
    returns: the optimizer at a slot of every tuple (of one width) or dict display (of the same
    constant keys) it returns, with the models the call hands it or, handed none, the slots of
    the models returned beside it."""
    view = lint_view(tree)
    found = returned_elsewhere(tree, value)
    if found is None or view.roles is None:
        return {}
    kind, returns = found
    shapes = [returned_slots(r) for r in returns]
    first = shapes[0] if shapes else None
    if first is None or any(s is None or set(s) != set(first) for s in shapes):
        return {}
    slots = cast(list[dict[int | str, ast.expr]], shapes)
    models: list[int | str] = [k for k in first if all(kind(s[k]) is Kind.MODEL for s in slots)]
    elements: dict[int | str, tuple[OptimizerSource, list[int | str]]] = {}
    for slot in first:
        if all(kind(s[slot]) is Kind.OPTIMIZER for s in slots):
            owners = view.roles.optimizers.parameter_owners(call, view.where(call), handed=True)
            beside = models or _owner_slots(tree, value, first, slot)
            if owners or beside:
                construct = f"{view.text(call.func)}() (returns an optimizer)"
                elements[slot] = (OptimizerSource(owners, construct), [] if owners else beside)
    return elements


def _owner_slots(
    tree: Tree, value: cst.BaseExpression, elements: dict[int | str, ast.expr], optimizer: int | str
) -> list[int | str]:
    """The slots of another module's returned tuple or dict holding the name whose
    ``.parameters()`` the optimizer at slot ``optimizer`` is built from there (``model =
    build_model(); optimizer = SGD(model.parameters()); return {"model": model, ...}``): the
    model, whatever builds it."""
    found = imported_function(tree, value.func) if isinstance(value, cst.Call) else None
    if found is None or _wraps_the_model(found[0], found[1]):
        return []
    made: ast.AST | None = elements[optimizer]
    if isinstance(made, ast.Name):
        name = made.id
        bound = [
            node.value
            for node in ast.walk(found[1])
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets)
        ]
        made = bound[-1] if bound else None
    if not isinstance(made, ast.Call):
        return []
    owners = {
        sub.func.value.id
        for sub in ast.walk(made)
        if isinstance(sub, ast.Call)
        and isinstance(sub.func, ast.Attribute)
        and sub.func.attr in ("parameters", "named_parameters")
        and isinstance(sub.func.value, ast.Name)
    }
    return [k for k, e in elements.items() if k != optimizer and isinstance(e, ast.Name) and e.id in owners]


def _wraps_the_model(parsed: ParsedModule, function: ast.AST) -> bool:
    return model_wrap_in(parsed, function) is not None


def model_wrap_in(parsed: ParsedModule, function: ast.AST) -> ast.Call | None:
    """The call by which the other module's function wraps or compiles the model itself
    (``DDP(model)``, FSDP, ``torch.compile``): the converter cannot edit that module, and
    prepare() would wrap the wrapper, so what it returns is no model to prepare."""
    ctx = FileContext(SourceFile(parsed.path or "", ""), parsed.tree)
    ctx.imports = parsed.imports
    wrappers = (*torch_api.DATA_PARALLEL, *torch_api.FSDP, *torch_api.TORCH_COMPILE)
    return next((n for n in ast.walk(function) if isinstance(n, ast.Call) and ctx.resolves_to(n.func, *wrappers)), None)


def returned_elsewhere(
    tree: Tree, value: cst.BaseExpression
) -> tuple[Callable[[ast.expr], Kind | None], list[ast.expr]] | None:
    """When ``value`` calls a function of another module of the project: what kind of object an
    expression it returns constructs (``torch.optim.SGD(...)``, or a name bound to one there), and
    the values it returns."""
    found = imported_function(tree, value.func) if isinstance(value, cst.Call) else None
    if found is None:
        return None
    parsed, function = found
    ctx = FileContext(SourceFile(parsed.path or "", ""), parsed.tree)
    ctx.imports = parsed.imports  # what that module imports, for its names
    built = {
        target.id: node.value
        for node in ast.walk(function)
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
        for target in node.targets
        if isinstance(target, ast.Name)
    }

    def kind(returned: ast.expr) -> Kind | None:
        made = built.get(returned.id) if isinstance(returned, ast.Name) else returned
        return constructor_kind(ctx, made, parsed.classes) if isinstance(made, ast.Call) else None

    return kind, [node.value for node in ast.walk(function) if isinstance(node, ast.Return) and node.value is not None]


def _call_of(tree: Tree, creation: Creation) -> ast.Call | None:
    expr = lint_view(tree).expression_at(creation.value)
    return expr if isinstance(expr, ast.Call) else None


def _builds_a_scheduler(found: Origin | object) -> bool:
    return isinstance(found, Origin) and found.kind is Kind.SCHEDULER
