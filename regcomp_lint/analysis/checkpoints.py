"""The checkpoints a training script writes and reads back: which save writes which object's
state and which ``load_state_dict`` reads it in again, by dataflow.

RC404 (is a compiled model's state dict saved, or only kept in memory and loaded back?) and
``regcomp-fix`` (which ``torch.save`` becomes ``accelerator.save``, which load goes into the
unwrapped model) read this one answer, so they never disagree about what a script saves.

- a *state read* is ``X.state_dict()``;
- a *save* is a call that writes a state dict out (``torch.save``, ``accelerator.save``,
  safetensors' ``save_file``: :data:`~regcomp_lint.knowledge.torch_api.STATE_WRITERS`). It
  writes a state read when the read is inside its arguments (``torch.save(model.state_dict(),
  p)``) or a name it is given holds the read, through assignments
  (``state = {"model": model.state_dict()}`` ... ``torch.save(state, p)``);
- a save *from the main process* sits in the body of an ``if`` on the rank (``if rank == 0:``,
  ``if master_process:``, ``if accelerator.is_main_process:``);
- a *load* is ``X.load_state_dict(...)``, with the ``torch.load`` calls whose result it reads
  (``model.load_state_dict(torch.load(p))``, ``ckpt = torch.load(p)`` ...
  ``model.load_state_dict(ckpt["model"])``).

Fed by the engine's walk through :class:`~regcomp_lint.analysis.training_roles.TrainingRoles`
(where each call sits needs the walk's bindings and ancestors); asked after it.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass

from regcomp_lint.analysis.bindings import Bindings, Where, binding_key
from regcomp_lint.analysis.file_context import FileContext
from regcomp_lint.files.parsing import walk
from regcomp_lint.knowledge.torch_api import (
    MAIN_PROCESS_FLAGS,
    PROCESS_LOCAL_FILES,
    STATE_WRITERS,
    TORCH_LOAD,
    TORCH_SAVE,
)

#: How many assignments a saved or loaded name is followed back through.
MAX_HOPS = 3


@dataclass(frozen=True)
class StateRead:
    """``receiver.state_dict()``; ``statement``: the statement holding it."""

    call: ast.Call
    receiver: ast.expr
    where: Where
    statement: ast.stmt | None


@dataclass(frozen=True)
class Save:
    """A call that writes a state dict out. ``torch_save``: ``torch.save`` itself (the call
    ``accelerator.save`` replaces); ``main_process``: it runs in the main process only."""

    call: ast.Call
    where: Where
    torch_save: bool
    main_process: bool


@dataclass(frozen=True)
class Load:
    """``receiver.load_state_dict(...)``; ``reads``: the ``torch.load`` calls it loads from."""

    call: ast.Call
    receiver: ast.expr
    where: Where
    reads: tuple[ast.Call, ...]


@dataclass(frozen=True)
class CheckpointPair:
    """What one object's state goes through: ``state`` is whatever identifies the object (its
    origin, as the caller's ``identify`` gives it)."""

    state: object
    reads: tuple[StateRead, ...]
    saves: tuple[Save, ...]
    loads: tuple[Load, ...]


class Checkpoints:
    """The state reads, saves and loads of one file (see the module docstring)."""

    def __init__(self, ctx: FileContext, bindings: Bindings) -> None:
        self.ctx = ctx
        self.bindings = bindings
        self.reads: list[StateRead] = []
        self.saves: list[Save] = []
        self.loads: list[Load] = []
        self._reads_by_call: dict[int, StateRead] = {}
        #: id of a save call -> the state reads it writes (filled on first ask)
        self._written: dict[int, set[int]] | None = None

    # -- feeding, from the walk ------------------------------------------------------------
    def visit_call(self, node: ast.Call, where: Where) -> None:
        func = node.func
        if isinstance(func, ast.Attribute) and not self.ctx.imports.root_is_import(func.value):
            if func.attr == "state_dict":
                read = StateRead(node, func.value, where, self._statement())
                self.reads.append(read)
                self._reads_by_call[id(node)] = read
            elif func.attr == "load_state_dict":
                self.loads.append(Load(node, func.value, where, ()))
        if self._is_writer(func):
            self.saves.append(Save(node, where, self.ctx.resolves_to(func, *TORCH_SAVE), self._main_process_only()))

    def _is_writer(self, func: ast.expr) -> bool:
        if isinstance(func, ast.Attribute):
            return func.attr in STATE_WRITERS
        return isinstance(func, ast.Name) and func.id in STATE_WRITERS and self.ctx.imports.imported(func.id)

    def _statement(self) -> ast.stmt | None:
        return next((a for a in reversed(self.ctx.ancestors) if isinstance(a, ast.stmt)), None)

    def _main_process_only(self) -> bool:
        """The call being visited runs in the body of an ``if`` on the main process."""
        ancestors = self.ctx.ancestors
        for index in range(len(ancestors) - 1, 0, -1):
            parent, child = ancestors[index - 1], ancestors[index]
            if isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                return False
            if (
                isinstance(parent, ast.If)
                and any(child is s for s in parent.body)
                and is_main_process_test(parent.test)
            ):
                return True
        return False

    # -- questions, after the walk -----------------------------------------------------------
    def read_at(self, call: ast.AST | None) -> StateRead | None:
        """The state read ``call`` is, if it is one."""
        return self._reads_by_call.get(id(call)) if call is not None else None

    def save_at(self, call: ast.AST | None) -> Save | None:
        """The save ``call`` is, if it is one."""
        return next((save for save in self.saves if save.call is call), None) if call is not None else None

    def in_memory(self, save: Save) -> bool:
        """``torch.save(state, buf)`` into a file object of this process alone: ``buf`` is bound
        (by assignment or ``with ... as buf``, on every branch) only to an ``io.BytesIO()`` or an
        anonymous temporary file (:data:`PROCESS_LOCAL_FILES`). Every process must write it: it
        is how the script broadcasts, hashes or copies the weights, not a checkpoint on disk."""
        call = save.call
        target = call.args[1] if len(call.args) > 1 else next((kw.value for kw in call.keywords if kw.arg == "f"), None)
        if target is None or any(isinstance(a, ast.Starred) for a in call.args[:2]):
            return False
        if isinstance(target, ast.Call):
            return self._process_local(target)
        if not isinstance(target, ast.Name):
            return False
        values = [bound.value for bound in self.bindings.every_binding(target, save.where)]
        if any(value is not None for value in values):
            return all(isinstance(value, ast.Call) and self._process_local(value) for value in values)
        # `with io.BytesIO() as buf:` binds no value the bindings know: read the with statements
        scope = save.where.function if save.where.function is not None else self.ctx.tree
        items = [
            item
            for node in walk(scope)
            if isinstance(node, (ast.With, ast.AsyncWith))
            for item in node.items
            if isinstance(item.optional_vars, ast.Name) and item.optional_vars.id == target.id
        ]
        return bool(items) and all(
            isinstance(item.context_expr, ast.Call) and self._process_local(item.context_expr) for item in items
        )

    def _process_local(self, call: ast.Call) -> bool:
        return self.ctx.resolves_to(call.func, *PROCESS_LOCAL_FILES)

    def saves_of(self, read: StateRead) -> list[Save]:
        """The saves that write ``read`` (see the module docstring)."""
        if self._written is None:
            self._written = {id(save.call): self._reads_written(save) for save in self.saves}
        return [save for save in self.saves if id(read.call) in self._written[id(save.call)]]

    def _reads_written(self, save: Save) -> set[int]:
        args = [*save.call.args, *(kw.value for kw in save.call.keywords)]
        return {id(read.call) for arg in args for read in self._reads_in(arg, save.where, 0)}

    def _reads_in(self, expr: ast.AST, where: Where, hops: int) -> list[StateRead]:
        """The state reads ``expr`` holds: inside it, or in what the names it reads were bound to."""
        found: list[StateRead] = []
        for node in walk(expr):
            if isinstance(node, ast.Call) and id(node) in self._reads_by_call:
                found.append(self._reads_by_call[id(node)])
            elif hops < MAX_HOPS and binding_key(node) is not None and isinstance(node, (ast.Name, ast.Attribute)):
                for value, at in self._bound_values(node, where):
                    found += self._reads_in(value, at, hops + 1)
        return found

    def _bound_values(self, expr: ast.expr, where: Where) -> list[tuple[ast.AST, Where]]:
        """What the name ``expr`` may hold at ``where``: each binding's value (the element of a
        tuple display for ``a, b = x, y``)."""
        found: list[tuple[ast.AST, Where]] = []
        for bound in self.bindings.candidates(expr, where):
            value = bound.value
            if value is None or isinstance(value, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                continue
            if bound.index is not None:
                if not isinstance(value, (ast.Tuple, ast.List)) or bound.index >= len(value.elts):
                    continue
                value = value.elts[bound.index]
            found.append((value, bound.where))
        return found

    def loaded_into(self) -> set[str]:
        """The receivers of every ``X.load_state_dict(...)``, as written."""
        return {self.ctx.source.segment(load.receiver) for load in self.loads}

    def loads_with_reads(self) -> list[Load]:
        """Every load, with the ``torch.load`` calls it reads from."""
        return [Load(load.call, load.receiver, load.where, tuple(self._torch_loads(load))) for load in self.loads]

    def _torch_loads(self, load: Load) -> list[ast.Call]:
        found: list[ast.Call] = []
        frontier: list[tuple[ast.AST, Where, int]] = [(arg, load.where, 0) for arg in load.call.args]
        frontier += [(kw.value, load.where, 0) for kw in load.call.keywords]
        while frontier:
            expr, where, hops = frontier.pop(0)
            for node in walk(expr):
                if isinstance(node, ast.Call) and self.ctx.resolves_to(node.func, *TORCH_LOAD):
                    found.append(node)
                elif hops < MAX_HOPS and isinstance(node, (ast.Name, ast.Attribute)) and binding_key(node):
                    frontier += [(value, at, hops + 1) for value, at in self._bound_values(node, where)]
        return list({id(c): c for c in found}.values())

    def whole_module_saves(self, is_model: Callable[[ast.expr, Where], bool]) -> list[Save]:
        """``torch.save(model, path)``: the module pickled whole, not its state dict."""
        return [
            save
            for save in self.saves
            if save.torch_save
            and save.call.args
            and not isinstance(save.call.args[0], ast.Starred)
            and is_model(save.call.args[0], save.where)
        ]

    def pairs(self, identify: Callable[[ast.expr, Where], object]) -> list[CheckpointPair]:
        """Each object whose state the script reads or loads, with its reads, the saves that
        write them, and the loads into it; ``identify`` names the object an expression holds
        (None: unknown, left out)."""
        groups: dict[int, tuple[object, list[StateRead], list[Load]]] = {}
        for read in self.reads:
            state = identify(read.receiver, read.where)
            if state is not None:
                groups.setdefault(id(state), (state, [], []))[1].append(read)
        for load in self.loads_with_reads():
            state = identify(load.receiver, load.where)
            if state is not None:
                groups.setdefault(id(state), (state, [], []))[2].append(load)
        found: list[CheckpointPair] = []
        for state, reads, loads in groups.values():
            saves = {id(s.call): s for read in reads for s in self.saves_of(read)}
            found.append(CheckpointPair(state, tuple(reads), tuple(saves.values()), tuple(loads)))
        return found


def is_main_process_test(test: ast.expr) -> bool:
    """``master_process``, ``accelerator.is_main_process``, ``rank == 0``, ``dist.get_rank() == 0``,
    ``args.local_rank in (-1, 0)``, ``not rank``, ``utils.is_main_process()`` (the DeiT /
    torchvision-references helper: ``get_rank() == 0``, asked with no argument), or a conjunction
    holding one of them."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return any(is_main_process_test(value) for value in test.values)
    if isinstance(test, ast.Call) and not test.args and not test.keywords:
        test = test.func
    if isinstance(test, ast.Name):
        return test.id in MAIN_PROCESS_FLAGS
    if isinstance(test, ast.Attribute):
        return test.attr in MAIN_PROCESS_FLAGS
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _names_rank(test.operand)
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        left, op, right = test.left, test.ops[0], test.comparators[0]
        if isinstance(op, ast.Eq):
            return (_names_rank(left) and _is_zero(right)) or (_names_rank(right) and _is_zero(left))
        if isinstance(op, ast.In) and isinstance(right, (ast.Tuple, ast.List, ast.Set)):
            return _names_rank(left) and any(_is_zero(e) for e in right.elts)
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


def _names_rank(expr: ast.expr) -> bool:
    """``rank``, ``args.local_rank``, ``dist.get_rank()``, ``int(os.environ["RANK"])``."""
    for node in walk(expr):
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
    return isinstance(expr, ast.Constant) and expr.value == 0 and not isinstance(expr.value, bool)
