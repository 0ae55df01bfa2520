"""What a count of steps is computed from: the ``len(loader)`` reads behind a scheduler's number
of training steps, followed through the file's values.

``num_training_steps=args.max_train_steps`` (transformers' ``*_no_trainer`` examples) is
computed a few statements earlier::

    num_update_steps_per_epoch = math.ceil(len(train_dataloader) / args.gradient_accumulation_steps)
    if args.max_train_steps is None:
        args.max_train_steps = args.num_train_epochs * num_update_steps_per_epoch

:meth:`StepCounts.lengths_read` finds the ``len(train_dataloader)`` there: through the names
(and ``self.`` attributes) the expression reads, every binding of each that may reach it
(whatever branch bound it), through the fields of an object it reads (``args.max_train_steps``:
the assignments to that field in the same scope that come before it, since the bindings track
names and ``self.`` attributes only), and through the arguments of the calls it makes
(``math.ceil``, ``int``, a helper of the file). A name that holds a training object (the
optimizer a scheduler is built on) is no count and is not followed. A product with the number
of processes (``* accelerator.num_processes``, ``* dist.get_world_size()``, directly or through
a name) counts every process's steps, not one process's: the lengths under it are not returned.

Flow-insensitive like the bindings: every assignment before the read counts, so a value bound
in either branch of an ``if`` is followed; an assignment after the read (the recomputation of
``args.max_train_steps`` after ``prepare``, once the scheduler is built) is not.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass, field

from regcomp_lint.analysis.accelerate_script import MAX_DEPTH
from regcomp_lint.analysis.bindings import FUNCTION_NODES, Bindings, Position, Where, binding_key
from regcomp_lint.files.parsing import children, walk

#: An attribute that holds the number of processes (``accelerator.num_processes``, ``state.num_processes``).
PROCESS_COUNT_ATTRIBUTES = ("num_processes",)

#: ``holds(expr, where)``: what training object (or prepared one) ``expr`` holds at ``where``, if any.
Holds = Callable[[ast.expr, Where], object]


@dataclass
class _Ask:
    """One question's inputs and what it has found so far."""

    holds: Holds
    #: ids of the reads of the number of processes (``dist.get_world_size()``, ``os.environ["WORLD_SIZE"]``)
    process_counts: set[int]
    found: list[tuple[ast.expr, Where]] = field(default_factory=list)
    seen: set[int] = field(default_factory=set)


class StepCounts:
    """Answers what a count is computed from (see the module docstring); one per file, owned by
    :class:`~regcomp_lint.analysis.training_roles.TrainingRoles`, which hands in its own questions
    at each ask (held here, its methods would make a reference cycle that keeps the tree alive)."""

    def __init__(self, tree: ast.Module, bindings: Bindings) -> None:
        self._tree = tree
        self._bindings = bindings
        #: per scope (a function's id, None for the module): (object name, field) -> the
        #: assignments to ``object.field`` there, as (end of the statement, value)
        self._fields: dict[int | None, dict[tuple[str, str], list[tuple[Position, ast.expr]]]] = {}

    def lengths_read(
        self, expr: ast.expr, where: Where, holds: Holds, process_counts: set[int]
    ) -> list[tuple[ast.expr, Where]]:
        """The arguments ``x`` of the ``len(x)`` calls ``expr``'s value at ``where`` is computed
        from (each with the point it is read at), except under a product with the number of
        processes; in the order found, each once. ``holds``: what training object a name holds
        (those are not followed); ``process_counts``: the ids of the file's reads of the number
        of processes."""
        ask = _Ask(holds, process_counts)
        self._collect(expr, where, ask, 0)
        return ask.found

    def _collect(self, expr: ast.AST, where: Where, ask: _Ask, depth: int) -> None:
        if depth > MAX_DEPTH:
            return
        stack: list[ast.AST] = [expr]
        while stack:
            node = stack.pop()
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
                if self._counts_processes(node.left, where, ask) or self._counts_processes(node.right, where, ask):
                    continue  # every process's steps
            if isinstance(node, ast.Call):
                func = node.func
                if isinstance(func, ast.Name) and func.id == "len" and len(node.args) == 1 and not node.keywords:
                    if id(node) not in ask.seen:
                        ask.seen.add(id(node))
                        ask.found.append((node.args[0], where))
                    continue
                stack.extend(node.args)  # math.ceil(...), int(...), a helper's arguments: not what it calls
                stack.extend(kw.value for kw in node.keywords)
                continue
            if binding_key(node) is not None:
                assert isinstance(node, ast.expr)
                if ask.holds(node, where) is not None:
                    continue  # a training object (the optimizer a scheduler is built on): no count
                for value, at in self._values(node, where, ask.seen):
                    self._collect(value, at, ask, depth + 1)
                continue
            if isinstance(node, ast.Attribute):
                for value, at in self._field_values(node, where, ask.seen):
                    self._collect(value, at, ask, depth + 1)
                continue  # `args` itself: not a count
            if isinstance(node, (*FUNCTION_NODES, ast.ClassDef)):
                continue
            stack.extend(children(node))

    def _counts_processes(self, expr: ast.AST, where: Where, ask: _Ask, depth: int = 0) -> bool:
        """``expr`` reads the number of processes, there or through the names it reads."""
        if depth > MAX_DEPTH:
            return False
        for node in walk(expr):
            if isinstance(node, ast.Attribute) and node.attr in PROCESS_COUNT_ATTRIBUTES:
                return True
            if id(node) in ask.process_counts:
                return True  # `dist.get_world_size()`, `os.environ["WORLD_SIZE"]`
            if isinstance(node, ast.Name):
                for bound in self._bindings.every_binding(node, where):
                    value = bound.value
                    if (
                        value is not None
                        and bound.index is None
                        and not isinstance(value, (*FUNCTION_NODES, ast.ClassDef))
                        and self._counts_processes(value, bound.where, ask, depth + 1)
                    ):
                        return True  # `world_size = accelerator.num_processes`
        return False

    def _values(self, expr: ast.expr, where: Where, seen: set[int]) -> list[tuple[ast.AST, Where]]:
        """The values every binding of the name ``expr`` that may reach ``where`` assigned, each once."""
        values: list[tuple[ast.AST, Where]] = []
        for bound in self._bindings.every_binding(expr, where):
            value = bound.value
            if value is None or isinstance(value, (*FUNCTION_NODES, ast.ClassDef)) or id(bound) in seen:
                continue
            seen.add(id(bound))
            if bound.index is not None:
                if isinstance(value, (ast.Tuple, ast.List)) and bound.index < len(value.elts):
                    value = value.elts[bound.index]  # `steps, warmup = len(dl) * 3, 100`
                else:
                    continue  # an element of what a call returns: unknown
            values.append((value, bound.where))
        return values

    def _field_values(self, attr: ast.Attribute, where: Where, seen: set[int]) -> list[tuple[ast.AST, Where]]:
        """The values assigned to ``obj.field`` (``attr``, ``obj`` a name) in ``where``'s scope
        before ``where``, each once."""
        if not isinstance(attr.value, ast.Name):
            return []
        function = where.function
        fields = self._scope_fields(function)
        values: list[tuple[ast.AST, Where]] = []
        for end, value in fields.get((attr.value.id, attr.attr), []):
            if end <= where.pos and id(value) not in seen:
                seen.add(id(value))
                values.append((value, where.at(value)))
        return values

    def _scope_fields(self, function: ast.AST | None) -> dict[tuple[str, str], list[tuple[Position, ast.expr]]]:
        key = id(function) if function is not None else None
        if key not in self._fields:
            fields: dict[tuple[str, str], list[tuple[Position, ast.expr]]] = {}
            root = function if function is not None else self._tree
            stack = list(children(root))
            while stack:
                node = stack.pop()
                if isinstance(node, (*FUNCTION_NODES, ast.ClassDef)):
                    continue  # another scope
                if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    for target in targets:
                        if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
                            end = (node.end_lineno or node.lineno, node.end_col_offset or 0)
                            fields.setdefault((target.value.id, target.attr), []).append((end, node.value))
                stack.extend(children(node))
            self._fields[key] = fields
        return self._fields[key]
