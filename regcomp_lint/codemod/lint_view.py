"""The script as the lint sees it, for the converter: one ``ast`` parse, the file's bindings,
training roles (:mod:`~regcomp_lint.analysis.training_roles`) and model finder, and a map from
the converter's libcst nodes to the ``ast`` expressions at the same source position.

So the converter never decides a role on its own: which loaders train, which are sharded by a
``DistributedSampler``, how often a scheduler steps and which models have repeated blocks are
the answers RC402 and RC501 read, asked about the expression a libcst node stands for.
"""

from __future__ import annotations

import ast
import builtins
import weakref
from bisect import bisect_left, bisect_right
from collections.abc import Iterable

import libcst as cst
from libcst.metadata import PositionProvider

from regcomp_lint.analysis.bindings import Where
from regcomp_lint.analysis.dead_code import Span, dead_spans
from regcomp_lint.analysis.devices import Devices
from regcomp_lint.analysis.distributed_setup import DistributedSetup
from regcomp_lint.analysis.file_context import FileContext
from regcomp_lint.analysis.models import ModelFinder
from regcomp_lint.analysis.training_roles import Origin, TrainingRoles, constant_slot
from regcomp_lint.checks.base import Rule
from regcomp_lint.codemod.local_modules import importer_of
from regcomp_lint.codemod.tree import Tree
from regcomp_lint.files.parsing import parse
from regcomp_lint.files.source import Positioned, SourceFile
from regcomp_lint.lint.engine import walk

#: The expressions the view can answer for (anything else holds no object).
_ASKABLE = (ast.Call, ast.Name, ast.Attribute)
#: (line, character column) of a start or an end.
_Point = tuple[int, int]
#: an expression: (breadth-first rank, start, end, node)
_Entry = tuple[tuple[int, int], _Point, _Point, ast.AST]
#: a line holding more expressions than this is searched by bisection (:meth:`LintView._outermost`)
_BISECT_FROM = 16


def lint_view(tree: Tree) -> LintView:
    """The view of ``tree``'s script, built once per tree."""
    view = _views.get(tree)
    if view is None:
        view = _views[tree] = LintView(tree)
    return view


class _Recorder(Rule):
    """Remembers where each askable expression sits (the walk feeds the file's shared analyses)."""

    code, name, message = "RC000", "lint-view", ""

    def __init__(self, ctx: FileContext) -> None:
        super().__init__(ctx)
        self.bindings = ctx.semantic.bindings
        self.roles = ctx.semantic.training_roles  # asked before the walk: fed by it
        self.wheres: dict[int, Where] = {}

    def _record(self, node: ast.expr) -> None:
        self.wheres[id(node)] = self.bindings.here(node)

    visit_Call = visit_Name = visit_Attribute = _record


class LintView:
    """One script as the lint sees it (see the module docstring)."""

    def __init__(self, tree: Tree) -> None:
        self._positions = tree.wrapper.resolve(PositionProvider)
        self.roles: TrainingRoles | None = None
        self.model_finder: ModelFinder | None = None
        self.devices: Devices | None = None
        self.distributed_setup: DistributedSetup | None = None
        self._wheres: dict[int, Where] = {}
        #: askable expressions by the line they start on: (breadth-first index, start, end, node)
        self._spans: dict[int, list[_Entry]] = {}
        #: every expression the same way, indexed on first ask (:meth:`any_expression_at`)
        self._all_spans: dict[int, list[_Entry]] | None = None
        self._expressions: list[_Entry] = []
        #: (id of a spans dict, line): that line's entries sorted by start, and the starts
        self._line_order: dict[tuple[int, int], tuple[list[_Point], list[_Entry]]] = {}
        #: (id of a node, id of a spans dict): the node, and the expression found at it (the
        #: planners ask about the same nodes again and again: 2,414 of 4,181 asks on the fixtures)
        self._found_at: dict[tuple[int, int], tuple[cst.CSTNode, ast.expr | None]] = {}
        # the script's own path: the lint's answers follow its imports into the project's other
        # modules (nanoGPT's GPT in model.py is a stack of repeated blocks: RC501's question)
        self._source = source = SourceFile(importer_of(tree.filename) if tree.filename else "<regcomp-fix>", tree.text)
        self._parsed: ast.Module | None = None
        self._dead: list[Span] | None = None  # dead regions, found on first ask (:meth:`is_dead`)
        self._statements: dict[_Point, ast.stmt] = {}
        try:
            parsed = parse(source.text)  # (the conversion's parse check's tree, shared)
        except (SyntaxError, ValueError):
            return
        self._ctx = ctx = FileContext(source, parsed)  # kept: the semantic model holds it weakly
        recorder = _Recorder(ctx)
        walk(ctx, [recorder])
        self.roles = recorder.roles
        self.model_finder = ModelFinder(ctx, recorder.bindings)
        self.devices = ctx.semantic.devices
        self.distributed_setup = ctx.semantic.distributed_setup
        self._parsed = parsed
        self._wheres = recorder.wheres
        self._statements, self._expressions = _walk(source, parsed)
        self._spans = _by_line(entry for entry in self._expressions if isinstance(entry[3], _ASKABLE))

    @property
    def parsed(self) -> ast.Module | None:
        """The script's ``ast`` (None when it does not parse)."""
        return self._parsed

    def is_dead(self, node: cst.CSTNode) -> bool:
        """``node`` starts in code a constant-false flag keeps from running (``milti_gpus = False``
        above ``if milti_gpus: model = DistributedDataParallel(model)``;
        :mod:`~regcomp_lint.analysis.dead_code`)."""
        span = self._positions.get(node)
        if span is None or self._parsed is None:
            return False
        if self._dead is None:
            self._dead = dead_spans(self._parsed, self._source.text)
        where = (span.start.line, span.start.column)
        return any((s[0], s[1]) <= where < (s[2], s[3]) for s in self._dead)

    def is_builtin(self, name: str) -> bool:
        """``name`` is Python's builtin here: the script does not import one of that name."""
        return hasattr(builtins, name) and self.roles is not None and not self._ctx.imports.imported(name)

    def expression_at(self, node: cst.CSTNode) -> ast.expr | None:
        """The outermost askable ``ast`` expression inside ``node``'s source range (libcst
        counts enclosing parentheses into a node, ast does not)."""
        return self._outermost(node, self._spans)

    def any_expression_at(self, node: cst.CSTNode) -> ast.expr | None:
        """The ``ast`` expression ``node`` is, whatever its kind (a test, a conditional expression)."""
        if self._parsed is None:
            return None
        if self._all_spans is None:
            self._all_spans = _by_line(self._expressions)
        return self._outermost(node, self._all_spans)

    def _outermost(self, node: cst.CSTNode, spans: dict[int, list[_Entry]]) -> ast.expr | None:
        key = (id(node), id(spans))
        hit = self._found_at.get(key)
        if hit is not None and hit[0] is node:
            return hit[1]
        found = self._find_outermost(node, spans)
        self._found_at[key] = (node, found)  # (the node kept in the entry: its id cannot be reused)
        return found

    def _find_outermost(self, node: cst.CSTNode, spans: dict[int, list[_Entry]]) -> ast.expr | None:
        span = self._positions.get(node)
        if span is None:
            return None
        start, end = (span.start.line, span.start.column), (span.end.line, span.end.column)
        # the first expression (in pre-order: an expression before its parts) that lies inside
        # the range: only the lines of the range are looked at (scanning every expression of the
        # file for each node was quadratic). Any order that puts a node before its descendants
        # gives the same answer: an expression spanning the range holds all the others inside it
        inside = []
        for row in range(start[0], end[0] + 1):
            entries = spans.get(row)
            if not entries:
                continue
            if len(entries) > _BISECT_FROM:
                # one long line of many expressions (``nn.Sequential(Block0(), ..., Block831())``):
                # only those starting inside the range, found by bisection (asking for each of
                # them scanned the whole line: quadratic in the line's length)
                starts, by_start = self._sorted_line(spans, row, entries)
                entries = by_start[bisect_left(starts, start) : bisect_right(starts, end)]
            inside += [entry for entry in entries if start <= entry[1] and entry[2] <= end]
        if not inside:
            return None
        _, first, last, expr = min(inside, key=lambda entry: entry[0])
        if _spans_all_but_parentheses(first, last, start, end, node):
            return expr  # type: ignore[return-value]
        return None

    def _sorted_line(
        self, spans: dict[int, list[_Entry]], row: int, entries: list[_Entry]
    ) -> tuple[list[_Point], list[_Entry]]:
        """One line's entries sorted by where they start, and those starts (made once per line)."""
        key = (id(spans), row)
        found = self._line_order.get(key)
        if found is None:
            by_start = sorted(entries, key=lambda entry: entry[1])
            found = self._line_order[key] = ([entry[1] for entry in by_start], by_start)
        return found

    def statement_at(self, node: cst.CSTNode) -> ast.stmt | None:
        """The ``ast`` statement that starts where the libcst statement ``node`` does."""
        span = self._positions.get(node)
        return self._statements.get((span.start.line, span.start.column)) if span is not None else None

    def where(self, expr: ast.AST) -> Where:
        return self._wheres[id(expr)]

    def where_inside(self, expr: ast.expr) -> Where | None:
        """Where ``expr`` is evaluated, also for a subscript or a tuple display (whose first
        element, or the subscripted value, is evaluated at the same point); None when unknown."""
        while id(expr) not in self._wheres:
            if isinstance(expr, ast.Subscript):
                expr = expr.value
            elif isinstance(expr, ast.Tuple) and expr.elts:
                expr = expr.elts[0]
            else:
                return None
        return self.where(expr)

    def text(self, expr: ast.expr) -> str:
        """``expr``'s source text."""
        return self._ctx.source.segment(expr)

    def origin(self, node: cst.BaseExpression, callers: bool = False) -> Origin | None:
        """The object the expression ``node`` builds or holds, as the lint's roles see it.
        ``callers``: a parameter is followed to what the function's callers pass."""
        expr = self.expression_at(node)
        if expr is None and isinstance(node, cst.Subscript):  # `parts["optimizer"]` of a helper's dict
            expr = self.any_expression_at(node)
            expr = expr if expr is not None and constant_slot(expr) is not None else None
        if expr is None or self.roles is None:
            return None
        where = self.where_inside(expr)
        if where is None:
            return None
        found = self.roles.passed_origin(expr, where) if callers else self.roles.origin(expr, where)
        return found if isinstance(found, Origin) else None


def _walk(source: SourceFile, parsed: ast.Module) -> tuple[dict[_Point, ast.stmt], list[_Entry]]:
    """One depth-first walk of ``parsed``: its statements by where they start, and its
    expressions as (breadth-first rank, start, end, node). The rank is (depth, index in
    pre-order): breadth first, a level's nodes come in pre-order, what ``ast.walk`` gives."""
    statements: dict[_Point, tuple[tuple[int, int], ast.stmt]] = {}
    expressions: list[_Entry] = []
    plain = source.text.isascii()  # every byte column is the character column
    stack: list[tuple[ast.AST, int]] = [(parsed, 0)]
    pop, push = stack.pop, stack.append
    kinds, fields_of = _KINDS, _CHILD_FIELDS
    index = 0
    while stack:
        node, depth = pop()
        index += 1
        node_type = type(node)
        kind = kinds.get(node_type)
        if kind is None:
            kind = kinds[node_type] = (
                1 if issubclass(node_type, ast.expr) else 2 if issubclass(node_type, ast.stmt) else 0
            )
        if kind:
            if plain:
                first = (node.lineno, node.col_offset)  # type: ignore[attr-defined]
            else:
                first = _start(source, node)  # type: ignore[arg-type]
            if kind == 2:
                # two statements starting at one place: the later breadth first wins, as in a
                # dict built from ast.walk
                seen = statements.get(first)
                if seen is None or seen[0] < (depth, index):
                    statements[first] = ((depth, index), node)  # type: ignore[assignment]
            else:
                if plain:
                    last = (node.end_lineno or node.lineno, node.end_col_offset or 0)  # type: ignore[attr-defined]
                else:
                    last = _end(source, node)  # type: ignore[arg-type]
                expressions.append(((depth, index), first, last, node))
        fields = fields_of.get(node_type)
        if fields is None:
            fields = fields_of[node_type] = (
                tuple(reversed([f for f in node_type._fields if f not in _LEAF_FIELDS]))
                if node_type is not ast.Constant
                else ()
            )
        depth += 1
        for name in fields:  # reversed: the first child is pushed last and popped first
            value = getattr(node, name, None)
            if type(value) is list:
                for item in reversed(value):
                    if isinstance(item, ast.AST):
                        push((item, depth))
            elif isinstance(value, ast.AST):
                push((value, depth))
    return {where: node for where, (_, node) in statements.items()}, expressions


#: 1: an expression, 2: a statement, 0: another node (by node type)
_KINDS: dict[type, int] = {}
#: the fields of a node type that may hold nodes, last first
_CHILD_FIELDS: dict[type, tuple[str, ...]] = {}
#: fields that never hold a node (and ``ctx``, whose Load/Store nodes are neither kind)
_LEAF_FIELDS = frozenset(
    {"ctx", "id", "attr", "arg", "asname", "module", "level", "kind", "type_comment", "conversion", "is_async"}
)


def _by_line(
    entries: Iterable[_Entry],
) -> dict[int, list[_Entry]]:
    """``entries`` (index, start, end, node) by the line they start on, in order."""
    spans: dict[int, list[_Entry]] = {}
    for entry in entries:
        row = entry[1][0]
        found = spans.get(row)
        if found is None:
            spans[row] = [entry]
        else:
            found.append(entry)
    return spans


def _spans_all_but_parentheses(first: _Point, last: _Point, start: _Point, end: _Point, node: cst.CSTNode) -> bool:
    """True when the ast expression is ``node`` itself, not a part of it (``Net()`` inside
    ``[Net()]``): the same range, or one narrowed only by ``node``'s own parentheses."""
    if (first, last) == (start, end):
        return True
    return bool(getattr(node, "lpar", ())) and first > start and last < end


def _start(source: SourceFile, node: Positioned) -> _Point:
    return node.lineno, source.char_column(node.lineno, node.col_offset)


def _end(source: SourceFile, node: Positioned) -> _Point:
    line = node.end_lineno or node.lineno
    return line, source.char_column(line, node.end_col_offset or 0)


_views: weakref.WeakKeyDictionary[Tree, LintView] = weakref.WeakKeyDictionary()
