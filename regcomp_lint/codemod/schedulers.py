"""Which tuple unpackings of a script bind an LR scheduler, and how often each steps.

``optimizer, scheduler = build_optimizer(model, cfg)`` and ``model, optimizer, scheduler =
setup(cfg)`` bind a scheduler no ``key = value`` creation shows. The cadence is not decided
here: for a function of the file, the lint's roles follow its returned tuple
(:meth:`~regcomp_lint.analysis.training_roles.TrainingRoles.unpacked_origin`) and decide as for
any scheduler; for a function of another module of the project (read next to the script,
``ast`` only), the kind of each value it returns is read there and the roles compare the steps
of the names the script binds (:meth:`~regcomp_lint.analysis.training_roles.TrainingRoles.bound_cadence`).
"""

from __future__ import annotations

import ast
import dataclasses
from dataclasses import dataclass

import libcst as cst

from regcomp_lint.analysis.optimizer_sources import returned_slots
from regcomp_lint.analysis.training_objects import Kind
from regcomp_lint.analysis.training_roles import Cadence
from regcomp_lint.codemod.lint_view import lint_view
from regcomp_lint.codemod.local_modules import imported_function
from regcomp_lint.codemod.optimizers import returned_elsewhere
from regcomp_lint.codemod.roles import unpacked_keys
from regcomp_lint.codemod.taken_apart import Holder, held_results, piece_keys
from regcomp_lint.codemod.tree import Function, Tree, find_all


@dataclass
class UnpackedScheduler:
    key: str
    stmt: cst.Assign
    cadence: Cadence
    step: ast.Call | None  # the ``.step()`` call that decided the cadence


def unpacked_schedulers(tree: Tree, function: Function) -> list[UnpackedScheduler]:
    """Every scheduler ``function`` (not its nested defs) unpacks from a tuple, with its cadence."""
    view = lint_view(tree)
    roles = view.roles
    found: list[UnpackedScheduler] = []
    if roles is None:
        return found
    pieces = piece_keys(tree, function)
    for assign in find_all(function, cst.Assign, enter_functions=False):
        keys = unpacked_keys(assign)
        call = view.expression_at(assign.value) if keys else None
        # `model, optimizer, scheduler = parts` (or `= parts["m"], parts["o"], parts["s"]`) of a
        # helper's result held in `parts` (taken_apart.py): the roles follow the name or subscripts
        taken = keys is not None and any(pieces.get(k) is assign for k in keys if k is not None)
        if taken and call is None:
            call = view.any_expression_at(assign.value)
        if keys is None or not (isinstance(call, ast.Call) or taken) or call is None:
            continue
        where = view.where_inside(call)
        if where is None:
            continue
        origins = [roles.unpacked_origin(call, where, index) for index in range(len(keys))]
        if any(origin is not None for origin in origins):  # a function of the file: the roles see it all
            for key, origin in zip(keys, origins, strict=True):
                if key is not None and origin is not None and origin.kind is Kind.SCHEDULER:
                    found.append(UnpackedScheduler(key, assign, *roles.cadence(origin)))
            continue
        if taken:  # a holder of another module's result: below
            continue
        statement = view.statement_at(assign)
        if not isinstance(statement, ast.Assign) or not isinstance(statement.targets[0], (ast.Tuple, ast.List)):
            continue
        targets = statement.targets[0].elts
        after = dataclasses.replace(where, pos=(statement.end_lineno or 0, statement.end_col_offset or 0))
        for index, optimizer in _returned_schedulers(tree, assign.value, len(keys)).items():
            key = keys[index]
            if key is not None:
                beside = targets[optimizer] if optimizer is not None else None
                found.append(UnpackedScheduler(key, assign, *roles.bound_cadence(targets[index], beside, after)))
    for holder in held_results(tree, function):
        if not holder.stray:
            found += _pieces_elsewhere(tree, holder)
    return found


def _pieces_elsewhere(tree: Tree, holder: Holder) -> list[UnpackedScheduler]:
    """The schedulers taken out of what another module's function returns (``parts =
    setup(cfg)`` of builders.py, then ``scheduler = parts["scheduler"]``): at a slot where every
    tuple or dict display it returns holds a scheduler it constructs; their cadence is that of the
    names the script binds (:meth:`~regcomp_lint.analysis.training_roles.TrainingRoles.bound_cadence`),
    beside the one optimizer it returns, if there is one."""
    view = lint_view(tree)
    returned = returned_elsewhere(tree, holder.bound.value)
    if returned is None or view.roles is None:
        return []
    kind, returns = returned
    shapes = [returned_slots(r) for r in returns]
    first = shapes[0] if shapes else None
    if first is None or any(s is None or set(s) != set(first) for s in shapes):
        return []
    slots = [s for s in shapes if s is not None]

    def at(wanted: Kind) -> list[int | str]:
        return [k for k in first if all(kind(s[k]) is wanted for s in slots)]

    optimizers = [holder.pieces[k] for k in at(Kind.OPTIMIZER) if k in holder.pieces]
    beside = _target(view.statement_at(optimizers[0].stmt), optimizers[0].key) if len(optimizers) == 1 else None
    found = []
    for slot in at(Kind.SCHEDULER):
        piece = holder.pieces.get(slot)
        statement = view.statement_at(piece.stmt) if piece is not None else None
        target = _target(statement, piece.key) if piece is not None else None
        if piece is None or statement is None or target is None:
            continue
        after = dataclasses.replace(
            view.where(holder.call), pos=(statement.end_lineno or 0, statement.end_col_offset or 0)
        )
        found.append(UnpackedScheduler(piece.key, piece.stmt, *view.roles.bound_cadence(target, beside, after)))
    return found


def _target(statement: ast.stmt | None, key: str) -> ast.Name | None:
    """The name ``key`` among the targets of an assignment statement."""
    if not isinstance(statement, ast.Assign):
        return None
    return next(
        (n for t in statement.targets for n in ast.walk(t) if isinstance(n, ast.Name) and n.id == key),
        None,
    )


def _returned_schedulers(tree: Tree, value: cst.BaseExpression, width: int) -> dict[int, int | None]:
    """The positions at which another module's function returns a scheduler it constructs in every
    tuple of ``width`` values it returns (``return optimizer, scheduler``), each with the position
    of the optimizer it is built on (``opt_g, opt_d, sched_g, sched_d``), or of the one optimizer
    returned, if known."""
    found = returned_elsewhere(tree, value)
    if found is None:
        return {}
    kind, returns = found
    tuples = [r for r in returns if isinstance(r, ast.Tuple) and len(r.elts) == width]
    if not tuples or len(tuples) != len(returns):
        return {}

    def positions(wanted: Kind) -> list[int]:
        return [i for i in range(width) if all(kind(r.elts[i]) is wanted for r in tuples)]

    optimizers = positions(Kind.OPTIMIZER)
    built_on = _built_on(tree, value, tuples[0])
    return {
        index: built_on.get(index, optimizers[0] if len(optimizers) == 1 else None)
        for index in positions(Kind.SCHEDULER)
    }


def _built_on(tree: Tree, value: cst.BaseExpression, returned: ast.Tuple) -> dict[int, int]:
    """Position -> position in the tuple another module's function returns: the name at the first
    is built by a call whose first argument is the name at the second (``sched_g = StepLR(opt_g,
    ...)``; ``return opt_g, sched_g``)."""
    found = imported_function(tree, value.func) if isinstance(value, cst.Call) else None
    if found is None:
        return {}
    names = [e.id if isinstance(e, ast.Name) else None for e in returned.elts]
    built_on: dict[int, int] = {}
    for node in ast.walk(found[1]):
        if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and node.value.args):
            continue
        first = node.value.args[0]
        for target in node.targets:
            if (
                isinstance(target, ast.Name)
                and target.id in names
                and isinstance(first, ast.Name)
                and first.id in names
            ):
                built_on[names.index(target.id)] = names.index(first.id)
    return built_on
