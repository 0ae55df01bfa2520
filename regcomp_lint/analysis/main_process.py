"""Where a script's own tests of the rank keep code on the main process only.

One answer for the lint (a *save from the main process* in
:class:`~regcomp_lint.analysis.checkpoints.Checkpoints`) and ``regcomp-fix``
(``codemod/checkpoint_writes.under_rank_test``: which writes need no
``if accelerator.is_main_process:``). Before, only the fixer saw a flag or an early exit, so a
helper that saved under ``if is_main:`` was a checkpoint writer every process ran to one and
guarded already to the other.

A statement runs on the main process only, within its function, when

- it sits in the body of an ``if`` whose test holds on the main process only: a rank test
  (:func:`is_main_process_test`), a conjunction with such a part, or a name the function binds
  only to such tests (``is_main = rank == 0``; :func:`main_process_condition`);
- a statement before it in the same block sends every other process away:
  ``if not is_main: continue`` (``break``, ``return``; ``if rank != 0:``, ``if rank > 0:``;
  :func:`sends_others_away`);
- the test is a call of a function of the module each of whose returns is such a test
  (``if not is_main(rank): return`` with ``def is_main(rank): return rank == 0``, survey 21a
  drift_dit): when the caller gives the module;
- the test is a disjunction of such a test with "one process only": ``not dist.is_initialized()``,
  ``not dist.is_available()``, ``dist.get_world_size() == 1``, ``args.local_rank == -1`` (survey 23c
  psma_segresnet's ``is_rank0()``; :func:`_one_process_only`), when the caller gives the module
  (whose imports say what ``dist`` is). After a conversion Accelerate has set up the group on
  every process of a launch of more than one, so the test still picks the main process alone.

In a worker ``mp.spawn(worker, ...)`` starts (the caller gives the module; ``fn=worker``,
``start_processes`` and ``functools.partial(worker, ...)`` too), the worker's first parameter (the
first after those a ``partial`` binds) is its process index, the rank on one machine, whatever its name: ``if gpu == 0:``
(survey 24a simclr_branch, :func:`spawn_index`). On several machines it is the local index, and the
test holds on each machine's first process, in the original and the conversion alike.
"""

from __future__ import annotations

import ast
import weakref
from collections.abc import Sequence

from regcomp_lint.analysis.distributed_setup import SpawnedWorker, spawned_worker
from regcomp_lint.analysis.name_resolution import module_imports
from regcomp_lint.analysis.training_loops import own_nodes
from regcomp_lint.files.parsing import split_block, walk
from regcomp_lint.knowledge.torch_api import GET_WORLD_SIZE, GROUP_QUERIES, MAIN_PROCESS_FLAGS, PARTIAL, SPAWN

#: A scope: the names a flag test reads are looked up in its assignments.
Scope = ast.Module | ast.FunctionDef | ast.AsyncFunctionDef
#: How many helpers deep a test is followed (``is_main(rank)`` calling ``get_rank() == 0`` ...).
_MAX_HELPERS = 3
#: What a block that sends a process away holds, alone.
_LEAVES = (ast.Continue, ast.Break, ast.Return)


def main_process_only(ancestors: Sequence[ast.AST]) -> bool:
    """The last node of ``ancestors`` (outermost first, as the lint's walk keeps them) runs on
    the main process only, by a test inside its own function (see the module docstring)."""
    scope = next((a for a in reversed(ancestors) if isinstance(a, Scope)), None)
    module = ancestors[0] if ancestors and isinstance(ancestors[0], ast.Module) else None
    for index in range(len(ancestors) - 1, 0, -1):
        parent, child = ancestors[index - 1], ancestors[index]
        if isinstance(parent, ast.Lambda | ast.ClassDef):
            return False
        if (
            isinstance(parent, ast.If)
            and any(child is s for s in parent.body)
            and main_process_condition(parent.test, scope, module)
        ):
            return True
        if _left_before(parent, child, scope, module):
            return True
        if isinstance(parent, ast.FunctionDef | ast.AsyncFunctionDef):
            return False
    return False


def _left_before(parent: ast.AST, child: ast.AST, scope: Scope | None, module: ast.Module | None) -> bool:
    """A statement before ``child`` in the block of ``parent`` holding it sends the others away."""
    around = split_block(parent, child)
    return around is not None and any(sends_others_away(stmt, scope, module) for stmt in around[0])


def main_process_condition(
    test: ast.expr, scope: Scope | None, module: ast.Module | None = None, depth: int = 0
) -> bool:
    """``test`` holds on the main process only: :func:`is_main_process_test`, a conjunction with
    such a part, a name ``scope`` binds only to such conditions (``is_main = rank == 0``), or a
    call of a function of ``module`` that returns only such conditions (``is_main(rank)``)."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return any(main_process_condition(value, scope, module, depth) for value in test.values)
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or):
        ranks = [v for v in test.values if not _one_process_only(v, module)]
        return len(ranks) < len(test.values) and all(main_process_condition(v, scope, module, depth) for v in ranks)
    if is_main_process_test(test, spawn_index(scope, module)):
        return True
    if isinstance(test, ast.Call):
        return _returns_main_process_test(test, module, depth)
    if not isinstance(test, ast.Name) or scope is None:
        return False
    values = [
        node.value
        for node in own_nodes(scope.body)
        if isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Name)
        and node.targets[0].id == test.id
    ]
    return bool(values) and all(
        not isinstance(value, ast.Name) and main_process_condition(value, scope, module, depth) for value in values
    )


def _returns_main_process_test(call: ast.Call, module: ast.Module | None, depth: int) -> bool:
    """``call`` names a function defined at the top of ``module`` whose every ``return`` gives a
    main-process condition (``def is_main(rank): return rank == 0``)."""
    if module is None or depth >= _MAX_HELPERS or not isinstance(call.func, ast.Name):
        return False
    name = call.func.id
    defs = [s for s in module.body if isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef) and s.name == name]
    if len(defs) != 1:
        return False
    returns = [node for node in own_nodes(defs[0].body) if isinstance(node, ast.Return)]
    return bool(returns) and all(
        r.value is not None and main_process_condition(r.value, defs[0], module, depth + 1) for r in returns
    )


def _one_process_only(test: ast.expr, module: ast.Module | None) -> bool:
    """``test`` holds only where the script runs as one process: ``not dist.is_initialized()``,
    ``not dist.is_available()`` (:data:`~regcomp_lint.knowledge.torch_api.GROUP_QUERIES`, through
    ``module``'s imports), ``dist.get_world_size() == 1``, or a rank ``== -1`` (torch.distributed.launch's
    ``--local_rank`` default: not launched)."""
    if module is None:
        return False
    imports = module_imports(module)
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        call = test.operand
        return isinstance(call, ast.Call) and not call.args and imports.resolves_to(call.func, *GROUP_QUERIES)
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return False
    left, right = test.left, test.comparators[0]
    for one, other in ((left, right), (right, left)):
        if isinstance(one, ast.Call) and imports.resolves_to(one.func, *GET_WORLD_SIZE) and _is_int(other, 1):
            return True
        if _names_rank(one) and _is_int(other, -1):
            return True
    return False


def sends_others_away(stmt: ast.stmt, scope: Scope | None, module: ast.Module | None = None) -> bool:
    """``if not is_main: continue`` (or ``break``, ``return``; ``if rank != 0:``, ``if rank > 0:``):
    every process but the main one leaves the block here."""
    if not (isinstance(stmt, ast.If) and not stmt.orelse and len(stmt.body) == 1 and isinstance(stmt.body[0], _LEAVES)):
        return False
    test = stmt.test
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return main_process_condition(test.operand, scope, module)
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], (ast.NotEq, ast.Gt)):
        equal = ast.Compare(left=test.left, ops=[ast.Eq()], comparators=test.comparators)
        return is_main_process_test(equal, spawn_index(scope, module))
    return False


#: Per parsed module: the workers its spawn calls start.
_SPAWNED: weakref.WeakKeyDictionary[ast.Module, tuple[SpawnedWorker, ...]] = weakref.WeakKeyDictionary()


def spawn_index(scope: Scope | None, module: ast.Module | None) -> frozenset[str]:
    """The name of ``scope``'s parameter that receives the process index when ``module`` starts
    ``scope`` with a spawn call (:data:`~regcomp_lint.knowledge.torch_api.SPAWN`, read by
    :func:`~regcomp_lint.analysis.distributed_setup.spawned_worker`: ``mp.spawn(worker, ...)``,
    ``fn=worker``, ``functools.partial(worker, ...)``): torch passes 0 there to the first process
    (empty otherwise). The spawn calls are found here, not in the file's ``DistributedSetup``: the
    lint asks during its walk, before that is built."""
    if module is None or not isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef):
        return frozenset()
    workers = _SPAWNED.get(module)
    if workers is None:
        imports = module_imports(module)
        workers = _SPAWNED[module] = tuple(
            worker
            for node in walk(module)  # (the module's walk, listed once per parse: the lint walks it too)
            if isinstance(node, ast.Call)
            and imports.resolves_to(node.func, *SPAWN)
            and (worker := spawned_worker(node, lambda f: imports.resolves_to(f, *PARTIAL))) is not None
        )
    return frozenset(name for w in workers if (name := w.index_parameter(scope)) is not None)


def is_main_process_test(test: ast.expr, ranks: frozenset[str] = frozenset()) -> bool:
    """``master_process``, ``accelerator.is_main_process``, ``rank == 0``, ``dist.get_rank() == 0``,
    ``args.local_rank in (-1, 0)``, ``not rank``, ``utils.is_main_process()`` (the DeiT /
    torchvision-references helper: ``get_rank() == 0``, asked with no argument), or a conjunction
    holding one of them. ``ranks``: more names that hold a rank (a spawned worker's index)."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return any(is_main_process_test(value, ranks) for value in test.values)
    if isinstance(test, ast.Call) and not test.args and not test.keywords:
        test = test.func
    if isinstance(test, ast.Name):
        return test.id in MAIN_PROCESS_FLAGS
    if isinstance(test, ast.Attribute):
        return test.attr in MAIN_PROCESS_FLAGS
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _names_rank(test.operand, ranks)
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        left, op, right = test.left, test.ops[0], test.comparators[0]
        if isinstance(op, ast.Eq):
            return (_names_rank(left, ranks) and _is_zero(right)) or (_names_rank(right, ranks) and _is_zero(left))
        if isinstance(op, ast.In) and isinstance(right, (ast.Tuple, ast.List, ast.Set)):
            return _names_rank(left, ranks) and any(_is_zero(e) for e in right.elts)
    return False


def tests_the_rank(test: ast.expr) -> bool:
    """A main-process test anywhere in ``test`` (:func:`is_main_process_test`), or a comparison of
    the rank either way (``rank != 0``, ``args.local_rank > 0``): which processes take a branch."""
    return any(
        is_main_process_test(part) or isinstance(part, ast.Compare) and _splits_the_ranks(part)
        for part in ast.walk(test)
        if isinstance(part, ast.expr)
    )


def _splits_the_ranks(compare: ast.Compare) -> bool:
    """A comparison of the rank that some ranks pass and others fail: not one with a bound every
    rank (0, 1, ...) falls on the same side of, such as ``args.local_rank != -1`` (-1 means "not
    launched distributed"; true on every process of a launch) or ``rank >= 0``."""
    sides = [compare.left, *compare.comparators]
    for op, left, right in zip(compare.ops, sides[:-1], sides[1:], strict=True):
        if _names_rank(left) and not _same_for_every_rank(op, right):
            return True
        if _names_rank(right) and not _same_for_every_rank(_MIRRORED.get(type(op), type(op))(), left):
            return True
    return False


#: ``bound < rank`` read as ``rank > bound``.
_MIRRORED: dict[type[ast.cmpop], type[ast.cmpop]] = {ast.Lt: ast.Gt, ast.Gt: ast.Lt, ast.LtE: ast.GtE, ast.GtE: ast.LtE}


def _same_for_every_rank(op: ast.cmpop, bound: ast.expr) -> bool:
    """``rank <op> bound`` holds for every rank 0, 1, 2 ... or for none (a literal bound below 0,
    or ``>= 0`` / ``< 0``)."""
    value = bound.value if isinstance(bound, ast.Constant) else None
    if isinstance(bound, ast.UnaryOp) and isinstance(bound.op, ast.USub) and isinstance(bound.operand, ast.Constant):
        value = -bound.operand.value if isinstance(bound.operand.value, int) else None
    if not isinstance(value, int) or isinstance(value, bool):
        return False
    if isinstance(op, (ast.Eq, ast.NotEq, ast.Gt, ast.LtE)):
        return value < 0
    if isinstance(op, (ast.Lt, ast.GtE)):
        return value <= 0
    return False


def _names_rank(expr: ast.expr, ranks: frozenset[str] = frozenset()) -> bool:
    """``rank``, ``args.local_rank``, ``dist.get_rank()``, ``int(os.environ["RANK"])``, or a name
    of ``ranks``."""
    for node in walk(expr):
        if isinstance(node, ast.Name) and node.id in ranks:
            return True
        name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
        if name is not None and "rank" in name.lower():
            return True
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and node.value.upper() in ("RANK", "LOCAL_RANK")
        ):
            return True
    return False


def _is_zero(expr: ast.expr) -> bool:
    return _is_int(expr, 0)


def _is_int(expr: ast.expr, value: int) -> bool:
    """``expr`` is the literal ``value`` (``-1`` written as a negation too), not a bool."""
    if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.USub):
        return _is_int(expr.operand, -value)
    return isinstance(expr, ast.Constant) and expr.value == value and not isinstance(expr.value, bool)
