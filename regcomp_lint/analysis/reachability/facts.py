"""What one function's body binds, calls and returns (:class:`FunctionFacts`), collected from the
engine's single walk (:class:`FactsCollector`) or by walking one function on its own, and the
``is_compiling()`` guards under which dynamo skips code."""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import cast

from regcomp_lint.files.source import Positioned


@dataclass
class FunctionFacts:
    """What one pass over a function body (nested defs and lambdas included) finds.

    ``bindings``: name → every value bound to it: ``("value", expr, index)`` for an assignment
    (``index``: position in a tuple target), ``("iter", expr, index)`` for a ``for`` or
    comprehension target over ``expr``, ``("param", arg, None)`` for a parameter of the function,
    ``("unknown", node, None)`` for anything else (``with ... as``, a nested function's
    parameter, ``global``, an import). ``self_assigns``: ``(attr, value)`` of ``self.attr = value``.
    """

    bindings: dict[str, list[tuple[str, ast.AST, int | None]]] = field(default_factory=dict)
    calls: list[ast.Call] = field(default_factory=list)
    returns: list[ast.expr] = field(default_factory=list)
    self_assigns: list[tuple[str, ast.expr]] = field(default_factory=list)


class FactsCollector:
    """Builds :class:`FunctionFacts` for every function of a file from the engine's single walk
    (:meth:`walk_handlers`: ``enter``/``visit``/``leave`` in walk order), or for one function on its own
    (:func:`function_facts`). A node inside nested functions counts for each of them."""

    #: Node types :meth:`visit` looks at (besides the function nodes).
    NODE_TYPES = (
        ast.If,
        ast.Call,
        ast.Assign,
        ast.AnnAssign,
        ast.AugAssign,
        ast.NamedExpr,
        ast.For,
        ast.AsyncFor,
        ast.comprehension,
        ast.withitem,
        ast.Return,
        ast.Global,
        ast.Nonlocal,
        ast.ExceptHandler,
        ast.Import,
        ast.ImportFrom,
    )
    FUNCTION_TYPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)

    def __init__(self) -> None:
        self.facts: dict[int, FunctionFacts] = {}
        self._stack: list[FunctionFacts] = []
        #: The function nodes enclosing the node being walked, outermost first.
        self.defs: list[ast.AST] = []
        #: ``defs`` as a tuple, made once per function entered or left: every node of one
        #: function shares it (the RC2xx rules key their candidates' places on it).
        self.defs_key: tuple[ast.AST, ...] = ()
        #: ``(start, end)`` positions of statements dynamo skips: the body of
        #: ``if not torch.compiler.is_compiling():``, the ``else`` of ``if is_compiling():``.
        self.untraced: list[tuple[tuple[int, int], tuple[int, int]]] = []

    def walk_handlers(self) -> tuple[dict[type, Callable[[ast.AST], None]], dict[type, Callable[[ast.AST], None]]]:
        """What a walk of the whole file calls, by node type, on visiting a node and on leaving it."""
        visit: dict[type, Callable[[ast.AST], None]] = dict.fromkeys(self.NODE_TYPES, self.visit)
        visit.update(dict.fromkeys(self.FUNCTION_TYPES, self.enter))
        return visit, dict.fromkeys(self.FUNCTION_TYPES, self.leave)

    def is_untraced(self, node: ast.AST) -> bool:
        if not self.untraced:
            return False
        if isinstance(node, ast.comprehension):  # no position of its own: where its target is
            node = node.target
        # Every other node asked about is a candidate of a rule (an expression or a statement)
        at = cast(Positioned, node)
        where = (at.lineno, at.col_offset)
        return any(start <= where <= end for start, end in self.untraced)

    def enter(self, func: ast.AST) -> None:
        assert isinstance(func, self.FUNCTION_TYPES)  # the walk calls it for these types only
        stack = self._stack
        args = _arguments(func.args)
        for outer in stack:  # a nested function's names are unknown values to its parents
            for arg in args:
                outer.bindings.setdefault(arg.arg, []).append(("unknown", arg, None))
            if not isinstance(func, ast.Lambda):
                outer.bindings.setdefault(func.name, []).append(("unknown", func, None))
        facts = FunctionFacts()
        for arg in args:
            facts.bindings.setdefault(arg.arg, []).append(("param", arg, None))
        self.facts[id(func)] = facts
        stack.append(facts)
        self.defs.append(func)
        self.defs_key = (*self.defs_key, func)

    def leave(self, func: ast.AST) -> None:
        if self._stack:
            self._stack.pop()
            self.defs.pop()
            self.defs_key = self.defs_key[:-1]

    def visit(self, node: ast.AST) -> None:
        stack = self._stack
        if not stack:
            return
        if type(node) is ast.If:
            guard = compiling_guard(node.test)
            if guard is not None:
                skipped = node.orelse if guard else node.body
                if skipped:
                    last = skipped[-1]
                    self.untraced.append(
                        (
                            (skipped[0].lineno, skipped[0].col_offset),
                            (last.end_lineno or last.lineno, last.end_col_offset or 0),
                        )
                    )
        elif type(node) is ast.Call:
            for facts in stack:
                facts.calls.append(node)
        elif type(node) is ast.Assign:
            for target in node.targets:
                self._bind(target, "value", node.value)
        elif type(node) is ast.AnnAssign or type(node) is ast.NamedExpr:
            if node.value is not None:
                self._bind(node.target, "value", node.value)
        elif type(node) is ast.AugAssign:
            self._bind(node.target, "value", ast.BinOp(node.target, node.op, node.value))
        elif type(node) is ast.For or type(node) is ast.AsyncFor or type(node) is ast.comprehension:
            self._bind(node.target, "iter", node.iter)
        elif type(node) is ast.withitem:
            if node.optional_vars is not None:
                self._bind(node.optional_vars, "unknown", node)
        elif type(node) is ast.Return:
            if node.value is not None:
                stack[-1].returns.append(node.value)
        elif type(node) is ast.Global or type(node) is ast.Nonlocal:
            for name in node.names:
                self._add(name, ("unknown", node, None))
        elif type(node) is ast.ExceptHandler:
            if node.name:
                self._add(node.name, ("unknown", node, None))
        elif type(node) is ast.Import or type(node) is ast.ImportFrom:
            for alias in node.names:
                self._add((alias.asname or alias.name).split(".")[0], ("unknown", node, None))

    def _add(self, name: str, binding: tuple[str, ast.AST, int | None]) -> None:
        for facts in self._stack:
            facts.bindings.setdefault(name, []).append(binding)

    def _bind(self, target: ast.AST, kind: str, value: ast.AST) -> None:
        if type(target) is ast.Name:
            self._add(target.id, (kind, value, None))
        elif type(target) is ast.Attribute:
            # (a "value" binding's value is always an expression)
            if (
                kind == "value"
                and isinstance(value, ast.expr)
                and type(target.value) is ast.Name
                and target.value.id == "self"
            ):
                for facts in self._stack:
                    facts.self_assigns.append((target.attr, value))
        elif type(target) is ast.Tuple or type(target) is ast.List:
            for i, elt in enumerate(target.elts):
                if type(elt) is ast.Starred:
                    self._bind(elt.value, "unknown", value)
                elif type(elt) is ast.Name:
                    self._add(elt.id, (kind, value, i))
                else:
                    self._bind(elt, "unknown", value)


IS_COMPILING = frozenset({"is_compiling", "is_dynamo_compiling", "is_torchdynamo_compiling", "is_exporting"})
#: Also true while dynamo traces, and called with arguments: transformers' ``is_tracing(tensor)``
#: (``torch.jit.is_tracing()`` is false under dynamo: taking it for true only loses findings).
IS_TRACING = frozenset({"is_tracing"})


def compiling_guard(test: ast.AST) -> bool | None:
    """True for ``is_compiling()``, False for ``not is_compiling()``, None for other tests
    (``torch.compiler.is_compiling``, ``torch._dynamo.is_compiling``, transformers'
    ``is_torchdynamo_compiling`` and ``is_tracing(t)``: dynamo sees them as constant True while
    tracing). Through ``and``/``or``: ``cond and not is_compiling()`` is False (the body never
    runs under dynamo), ``cond or is_compiling()`` is True (the ``else`` never runs)."""
    if type(test) is ast.BoolOp:
        found = [compiling_guard(v) for v in test.values]
        if type(test.op) is ast.And and False in found:
            return False
        if type(test.op) is ast.Or and True in found:
            return True
        return None
    negated = False
    if type(test) is ast.UnaryOp and type(test.op) is ast.Not:
        negated, test = True, test.operand
    if type(test) is ast.Call:
        func = test.func
        name = func.attr if type(func) is ast.Attribute else func.id if type(func) is ast.Name else None
        if (name in IS_COMPILING and not test.args) or name in IS_TRACING:
            return not negated
    return None


def traced_operands(test: ast.BoolOp) -> list[ast.expr]:
    """The operands of ``and``/``or`` dynamo evaluates: none after a compiling guard that
    short-circuits (``not is_tracing(m) and m.all()``: ``m.all()`` is never run while tracing)."""
    stop = False if type(test.op) is ast.And else True
    found = []
    for value in test.values:
        found.append(value)
        if compiling_guard(value) is stop:
            break
    return found


_LEAF_FIELDS = frozenset(
    {
        "ctx",
        "id",
        "attr",
        "arg",
        "asname",
        "module",
        "level",
        "kind",
        "type_comment",
        "conversion",
        "is_async",
        "name",
        "names",
        "value_str",
    }
)
_FIELDS: dict[type[ast.AST], tuple[str, ...]] = {}


def _fields(node_type: type[ast.AST]) -> tuple[str, ...]:
    found = _FIELDS.get(node_type)
    if found is None:
        found = (
            ()
            if node_type in (ast.Constant, ast.Name)
            else tuple(f for f in node_type._fields if f not in _LEAF_FIELDS)
        )
        _FIELDS[node_type] = found
    return found


def function_facts(func: ast.FunctionDef | ast.AsyncFunctionDef) -> FunctionFacts:
    """The facts of one function, walked on its own (a function of another file, or a file the
    engine did not walk for an RC2xx rule)."""
    collector = FactsCollector()
    collector.enter(func)
    facts = collector.facts[id(func)]
    nested_types = collector.FUNCTION_TYPES
    stack: list[tuple[ast.AST, bool]] = [(stmt, False) for stmt in func.body]
    pop, push, ast_node = stack.pop, stack.append, ast.AST
    while stack:
        node, nested = pop()
        kind = type(node)
        if isinstance(node, nested_types):
            for arg in _arguments(node.args):
                facts.bindings.setdefault(arg.arg, []).append(("unknown", arg, None))
            if not isinstance(node, ast.Lambda):
                facts.bindings.setdefault(node.name, []).append(("unknown", node, None))
            nested = True
        elif not (nested and kind is ast.Return):  # a nested function's return is not ours
            collector.visit(node)
        for name in _fields(kind):
            value = getattr(node, name, None)
            if type(value) is list:
                for item in value:
                    if isinstance(item, ast_node):
                        push((item, nested))
            elif isinstance(value, ast_node):
                push((value, nested))
    return facts


def _arguments(args: ast.arguments) -> list[ast.arg]:
    found = [*args.posonlyargs, *args.args, *args.kwonlyargs]
    if args.vararg:
        found.append(args.vararg)
    if args.kwarg:
        found.append(args.kwarg)
    return found
