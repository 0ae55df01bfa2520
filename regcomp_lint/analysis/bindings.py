"""What a name holds at a given point of a file: the cheap, approximate data flow rules need.

One :class:`Bindings` per file, shared by every rule (``ctx.semantic.bindings``), is fed the
nodes of the engine's single walk (:meth:`Bindings.walk_handlers`: before the children, and
after them on leaving a scope); a rule keeps :meth:`Bindings.here` of a node it visits and asks
:meth:`Bindings.lookup` in ``finish()`` which expression a name (``model``) or a ``self``
attribute (``self.model``) was last assigned before that use.

Deliberately simple and flow-insensitive in branches and loops: the binding that comes last in
the source before the use wins. Scopes follow Python: a name bound anywhere in a function is
local to it (parameters included) and comprehension variables do not leak; otherwise the
enclosing functions, then the module (its last binding, since a function usually runs after the
module body). A name a function declares ``global`` is a module name there: what the function
assigns to it is the module's binding (NNI's ``prepare()`` fills the globals ``train()`` reads).
``self.x`` is looked up across the methods of the enclosing class. Names bound in
a class body are class attributes and are not tracked.
"""

from __future__ import annotations

import ast
from bisect import bisect_right
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from types import MethodType
from typing import Any

from regcomp_lint.files.source import Positioned

Position = tuple[int, int]
FUNCTION_NODES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
COMPREHENSION_NODES = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
#: A node that opens a scope of names (one of ``FUNCTION_NODES`` or ``COMPREHENSION_NODES``).
ScopeNode = (
    ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ListComp | ast.SetComp | ast.DictComp | ast.GeneratorExp
)


@dataclass(frozen=True)
class Where:
    """A point in the file: its enclosing function and comprehension scopes (outermost first),
    the class whose method it is in (what ``self`` means there) and its position."""

    functions: tuple[ScopeNode, ...]
    cls: ast.ClassDef | None
    pos: Position

    @property
    def function(self) -> ScopeNode | None:
        return self.functions[-1] if self.functions else None

    def at(self, node: Positioned) -> Where:
        """The same scope at another node's start (the right-hand side of an assignment)."""
        return Where(self.functions, self.cls, (node.lineno, node.col_offset))


@dataclass(frozen=True)
class Bound:
    """One binding. ``value``: the assigned expression, the ``FunctionDef``/``ClassDef`` of a
    definition, or None when unknown (a parameter, a ``for`` target, ``with ... as``).
    ``index``: the position inside a tuple target (``a, b = ...``). ``where``: the point at
    which ``value`` is evaluated. ``end``: where the binding takes effect."""

    value: ast.AST | None
    index: int | None
    where: Where
    end: Position


@dataclass(frozen=True)
class _Frame:
    node: ScopeNode | ast.ClassDef | None  # None for the module
    kind: str  # "module" | "function" | "comprehension" | "class"
    method_cls: ast.ClassDef | None


def binding_key(target: ast.AST) -> str | None:
    """``model`` for a name, ``self.model`` for an attribute of ``self``; None otherwise."""
    if isinstance(target, ast.Name):
        return target.id
    if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
        return f"self.{target.attr}"
    return None


def _end(node: Positioned) -> Position:
    return (node.end_lineno or node.lineno, node.end_col_offset or 0)


class Bindings:
    def __init__(self) -> None:
        self._frames: list[_Frame] = [_Frame(None, "module", None)]
        self._scopes: list[ScopeNode] = []  # function and comprehension nodes, outermost first
        self._scope_tuple: tuple[ScopeNode, ...] = ()
        # (id of scope node, or None for the module; key) -> bindings in source order
        self._names: dict[tuple[int | None, str], list[Bound]] = defaultdict(list)
        # (id of class node, "self.attr") -> bindings in that class's methods, in source order
        self._attrs: dict[tuple[int, str], list[Bound]] = defaultdict(list)
        self._returns: dict[int, list[tuple[ast.expr, Where]]] = defaultdict(list)
        #: id of a bindings list of ``_names`` -> the ends of its bindings, and whether they only grow
        self._ends: dict[int, tuple[list[Position], bool]] = {}
        #: id of a function -> the names it declares ``global`` (bound in the module's scope)
        self._globals: dict[int, set[str]] = {}
        #: Every class defined in the file, by name (the last definition wins), at any depth.
        self.classes: dict[str, ast.ClassDef] = {}

    # -- feeding, from the engine's walk ----------------------------------------------------
    def here(self, node: Positioned) -> Where:
        return Where(self._scope_tuple, self._frames[-1].method_cls, (node.lineno, node.col_offset))

    def visit(self, node: ast.AST) -> None:
        """Record what ``node`` binds and enter its scope; call before its children."""
        handler = _VISITORS.get(type(node))
        if handler is not None:
            handler(self, node)

    def leave(self, node: ast.AST) -> None:
        """Leave ``node``'s scope, if it opens one; call after its children."""
        if isinstance(node, FUNCTION_NODES + COMPREHENSION_NODES):
            self._leave_scope(node)
        elif isinstance(node, ast.ClassDef):
            self._leave_class(node)

    def walk_handlers(self) -> tuple[dict[type, Callable[[ast.AST], None]], dict[type, Callable[[ast.AST], None]]]:
        """What a walk calls, by node type: on visiting a node (before its children), and on
        leaving it (after them). Fed these, in walk order, the bindings follow the walk."""
        visit: dict[type, Callable[[ast.AST], None]] = {
            node_type: MethodType(handler, self) for node_type, handler in _VISITORS.items()
        }
        leave: dict[type, Callable[[ast.AST], None]] = dict.fromkeys(
            FUNCTION_NODES + COMPREHENSION_NODES, self._leave_scope
        )
        leave[ast.ClassDef] = self._leave_class
        return visit, leave

    def _leave_scope(self, node: ast.AST) -> None:
        self._frames.pop()
        self._scopes.pop()
        self._scope_tuple = tuple(self._scopes)

    def _leave_class(self, node: ast.AST) -> None:
        self._frames.pop()

    def _visit_function(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> None:
        if not isinstance(node, ast.Lambda):
            self._bind_key(node.name, node, None, self.here(node), _end(node))
        parent = self._frames[-1]
        # (a "class" frame's node is its ClassDef)
        method_cls = parent.node if isinstance(parent.node, ast.ClassDef) else parent.method_cls
        self._enter(node, "function", method_cls)
        self._bind_parameters(node)

    def _visit_comprehension_scope(self, node: ast.ListComp | ast.SetComp | ast.DictComp | ast.GeneratorExp) -> None:
        self._enter(node, "comprehension", self._frames[-1].method_cls)

    def _visit_class(self, node: ast.ClassDef) -> None:
        self._bind_key(node.name, node, None, self.here(node), _end(node))
        self.classes[node.name] = node
        self._frames.append(_Frame(node, "class", None))

    def _visit_assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            self._bind_target(target, node.value, node)

    def _visit_assign_one(self, node: ast.AnnAssign | ast.NamedExpr) -> None:
        if node.value is not None:
            self._bind_target(node.target, node.value, node)

    def _visit_unknown_value(self, node: ast.AugAssign | ast.For | ast.AsyncFor | ast.comprehension) -> None:
        self._bind_target(node.target, None, node if isinstance(node, ast.AugAssign) else node.target)

    def _visit_withitem(self, node: ast.withitem) -> None:
        if node.optional_vars is not None:
            self._bind_target(node.optional_vars, None, node.optional_vars)

    def _visit_global(self, node: ast.Global) -> None:
        frame = self._frames[-1]
        if frame.kind == "function":
            self._globals.setdefault(id(frame.node), set()).update(node.names)

    def _visit_return(self, node: ast.Return) -> None:
        function = self._innermost_function()
        if node.value is not None and function is not None:
            self._returns[id(function)].append((node.value, self.here(node)))

    def _enter(self, node: ScopeNode, kind: str, method_cls: ast.ClassDef | None) -> None:
        self._frames.append(_Frame(node, kind, method_cls))
        self._scopes.append(node)
        self._scope_tuple = tuple(self._scopes)

    def _innermost_function(self) -> ast.AST | None:
        for frame in reversed(self._frames):
            if frame.kind == "function":
                return frame.node
        return None

    def _bind_parameters(self, func: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> None:
        args = func.args
        where = self.here(func)
        for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]:
            if arg is not None:
                self._names[(id(func), arg.arg)].append(Bound(None, None, where, where.pos))

    def _bind_target(self, target: ast.expr, value: ast.expr | None, stmt: ast.stmt | ast.expr) -> None:
        where = self.here(value if value is not None else stmt)
        if isinstance(target, (ast.Tuple, ast.List)):
            for i, elt in enumerate(target.elts):
                if isinstance(elt, ast.Starred):
                    value = None  # positions after a starred target are unknown
                    elt = elt.value
                key = binding_key(elt)
                if key:
                    self._bind_key(key, value, i if value is not None else None, where, _end(stmt))
            return
        key = binding_key(target)
        if key:
            self._bind_key(key, value, None, where, _end(stmt))

    def _bind_key(self, key: str, value: ast.AST | None, index: int | None, where: Where, end: Position) -> None:
        bound = Bound(value, index, where, end)
        frame = self._frames[-1]
        if key.startswith("self."):
            if frame.method_cls is not None:
                self._attrs[(id(frame.method_cls), key)].append(bound)
            return
        if frame.kind == "class":
            return  # a class attribute, not a name of any function or module scope
        if frame.node is None or key in self._globals.get(id(frame.node), ()):
            self._names[(None, key)].append(bound)
            return
        self._names[(id(frame.node), key)].append(bound)

    # -- questions, after the walk ----------------------------------------------------------
    def lookup(self, expr: ast.AST, where: Where) -> Bound | None:
        """The binding of ``expr`` (a name or ``self.attr``) visible at ``where``, if known."""
        key = binding_key(expr)
        if key is None:
            return None
        if key.startswith("self."):
            return self._lookup_attr(key, where)
        for depth in range(len(where.functions) - 1, -1, -1):
            found = self._names.get((id(where.functions[depth]), key))
            if found:
                if _runs_in_place(where.functions[depth + 1 :]):
                    return self._latest_before(found, where.pos)
                return found[-1]  # a closure sees the enclosing function's latest value
        found = self._names.get((None, key))
        if not found:
            return None
        if _runs_in_place(where.functions):
            return self._latest_before(found, where.pos)
        return found[-1]

    def _latest_before(self, found: list[Bound], pos: Position) -> Bound | None:
        """``_last_before(found, pos)`` by bisection when the bindings' ends only grow (the
        common case: a scope's statements one after another), so a name bound thousands of times
        is not rescanned at every read of it. The ends are extended as the walk appends."""
        ends, ordered = self._ends.get(id(found), ([], True))
        for bound in found[len(ends) :]:
            ordered = ordered and (not ends or ends[-1] <= bound.end)
            ends.append(bound.end)
        self._ends[id(found)] = (ends, ordered)
        if not ordered:
            return _last_before(found, pos)
        index = bisect_right(ends, pos)
        return found[index - 1] if index else None

    def every_binding(self, expr: ast.AST, where: Where) -> list[Bound]:
        """Every binding of the name ``expr`` that may reach ``where``, whatever the branch taken:
        ``s = DistributedSampler(d) if ddp else None`` and ``if ddp: s = ...`` / ``else: s = None``
        alike (``lookup`` gives only the latest)."""
        key = binding_key(expr)
        if key is None or key.startswith("self."):
            return self.candidates(expr, where)
        for scope in [*reversed(where.functions), None]:
            found = self._names.get((id(scope) if scope is not None else None, key))
            if found:
                if scope is where.function:
                    return [b for b in found if _last_before([b], where.pos) is not None]
                return list(found)
        return []

    def call_value(self, expr: ast.AST, where: Where) -> ast.Call | None:
        """``expr`` itself when it is a call, else the call it is bound to whole (not unpacked
        from a tuple) at ``where``: what ``plugin`` in ``Accelerator(dynamo_plugin=plugin)`` was
        built by."""
        if isinstance(expr, ast.Call):
            return expr
        bound = self.lookup(expr, where)
        value = bound.value if bound is not None and bound.index is None else None
        return value if isinstance(value, ast.Call) else None

    def _lookup_attr(self, key: str, where: Where) -> Bound | None:
        candidates = self._attr_candidates(key, where)
        return candidates[0] if candidates else None

    def candidates(self, expr: ast.AST, where: Where) -> list[Bound]:
        """The bindings ``expr`` may hold at ``where``, most likely first: one for a name; for
        ``self.x`` the latest earlier assignment in the same method, or else every assignment
        in the class's other methods (latest first), since any method may have filled it."""
        key = binding_key(expr)
        if key is not None and key.startswith("self."):
            return self._attr_candidates(key, where)
        bound = self.lookup(expr, where)
        return [bound] if bound is not None else []

    def _attr_candidates(self, key: str, where: Where) -> list[Bound]:
        if where.cls is None:
            return []
        found = self._attrs.get((id(where.cls), key), [])
        same_method = _last_before([b for b in found if b.where.function is where.function], where.pos)
        if same_method is not None:
            return [same_method]
        return [b for b in reversed(found) if b.where.function is not where.function]

    def returns(self, function: ast.AST) -> list[tuple[ast.expr, Where]]:
        """The ``return`` values of a function, with the point each is evaluated at."""
        return self._returns.get(id(function), [])


#: By node type, the method that records what a node of that type binds (its only argument).
_VISITORS: dict[type[ast.AST], Callable[[Bindings, Any], None]] = {
    ast.FunctionDef: Bindings._visit_function,
    ast.AsyncFunctionDef: Bindings._visit_function,
    ast.Lambda: Bindings._visit_function,
    ast.ClassDef: Bindings._visit_class,
    ast.Assign: Bindings._visit_assign,
    ast.AnnAssign: Bindings._visit_assign_one,
    ast.NamedExpr: Bindings._visit_assign_one,
    ast.AugAssign: Bindings._visit_unknown_value,
    ast.For: Bindings._visit_unknown_value,
    ast.AsyncFor: Bindings._visit_unknown_value,
    ast.comprehension: Bindings._visit_unknown_value,
    ast.withitem: Bindings._visit_withitem,
    ast.Return: Bindings._visit_return,
    ast.Global: Bindings._visit_global,
    **{kind: Bindings._visit_comprehension_scope for kind in COMPREHENSION_NODES},
}


def _runs_in_place(scopes: tuple[ScopeNode, ...]) -> bool:
    """Do these inner scopes run where they are written? A list, set or dict comprehension does
    (``{k: v for k, v in model.config.label2id.items()}`` reads ``model`` as bound above it); a
    function, lambda or generator expression may run later and sees the latest binding."""
    return all(isinstance(scope, (ast.ListComp, ast.SetComp, ast.DictComp)) for scope in scopes)


def _last_before(bindings: list[Bound], pos: Position) -> Bound | None:
    best = None
    for bound in bindings:
        if bound.end <= pos:
            best = bound
    return best
