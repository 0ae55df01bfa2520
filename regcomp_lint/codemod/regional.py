"""Does a model have repeated blocks, so regional compilation pays off? RC501's answer.

The conversion does not decide this itself: it parses the script with ``ast`` once, finds the
expression a libcst node stands for by its source position, and asks
:class:`~regcomp_lint.analysis.models.ModelFinder` (the code RC501 asks) about it there. So
``use_regional_compilation=True`` is written exactly where the lint reports a whole-model
compile of a model with repeated blocks.
"""

from __future__ import annotations

import ast
import weakref

import libcst as cst
from libcst.metadata import PositionProvider

from regcomp_lint.analysis.bindings import Where
from regcomp_lint.analysis.file_context import FileContext
from regcomp_lint.analysis.models import ModelFinder, RepeatedBlocks
from regcomp_lint.checks.base import Rule
from regcomp_lint.codemod.tree import Tree
from regcomp_lint.files.source import Positioned, SourceFile
from regcomp_lint.knowledge.model_classes import FACTORY_METHODS
from regcomp_lint.lint.engine import walk

#: The expressions :class:`ModelFinder` can answer for (anything else holds no model).
_ASKABLE = (ast.Call, ast.Name, ast.Attribute)
#: (line, character column) of a start or an end.
_Point = tuple[int, int]


def repeated_blocks(tree: Tree, creation: cst.BaseExpression) -> str | None:
    """Why the model ``creation`` builds has repeated blocks (the note the conversion prints), or None."""
    view = _views.get(tree)
    if view is None:
        view = _views[tree] = _LintView(tree)
    return view.repeated_blocks(creation)


class _Recorder(Rule):
    """Remembers where each askable expression sits (the walk feeds the file's shared bindings)."""

    code, name, message = "RC000", "model-positions", ""

    def __init__(self, ctx: FileContext) -> None:
        super().__init__(ctx)
        self.bindings = ctx.semantic.bindings
        self.wheres: dict[int, Where] = {}

    def _record(self, node: ast.expr) -> None:
        self.wheres[id(node)] = self.bindings.here(node)

    visit_Call = visit_Name = visit_Attribute = _record


class _LintView:
    """One script as the lint sees it: its ``ast``, bindings and model finder."""

    def __init__(self, tree: Tree) -> None:
        self._positions = tree.wrapper.resolve(PositionProvider)
        source = SourceFile("<regcomp-fix>", tree.module.code)
        try:
            parsed = ast.parse(source.text)
        except (SyntaxError, ValueError):
            self._finder = None
            return
        ctx = FileContext(source, parsed)
        recorder = _Recorder(ctx)
        walk(ctx, [recorder])
        self._finder = ModelFinder(ctx, recorder.bindings)
        self._wheres = recorder.wheres
        # breadth first: an expression comes before the parts it contains
        self._spans = [
            (_start(source, node), _end(source, node), node) for node in ast.walk(parsed) if isinstance(node, _ASKABLE)
        ]

    def repeated_blocks(self, creation: cst.BaseExpression) -> str | None:
        expr = self._expression_at(creation)
        if expr is None or self._finder is None:
            return None
        found = self._finder.model_of(expr, self._wheres[id(expr)])
        return _reason(found, expr) if found is not None else None

    def _expression_at(self, node: cst.CSTNode) -> ast.AST | None:
        """The outermost askable ``ast`` expression inside ``node``'s source range (libcst
        counts enclosing parentheses into a node, ast does not)."""
        if self._finder is None:
            return None
        span = self._positions.get(node)
        if span is None:
            return None
        start, end = (span.start.line, span.start.column), (span.end.line, span.end.column)
        for first, last, expr in self._spans:
            if start <= first and last <= end:
                return expr if _spans_all_but_parentheses(first, last, start, end, node) else None
        return None


def _spans_all_but_parentheses(first: _Point, last: _Point, start: _Point, end: _Point, node: cst.CSTNode) -> bool:
    """True when the ast expression is ``node`` itself, not a part of it (``Net()`` inside
    ``[Net()]``): the same range, or one narrowed only by ``node``'s own parentheses."""
    if (first, last) == (start, end):
        return True
    return bool(getattr(node, "lpar", ())) and first > start and last < end


def _reason(found: RepeatedBlocks, expr: ast.AST) -> str:
    if found.origin == "transformers":
        func = expr.func if isinstance(expr, ast.Call) else None
        if isinstance(func, ast.Attribute) and func.attr in FACTORY_METHODS:
            return f"{found.model}.{func.attr}() builds a transformers model (a stack of identical blocks)"
        return f"{found.model} is a transformers model (a stack of identical blocks)"
    if found.block is None:  # [copy.deepcopy(layer) for _ in range(n)]
        return f"{found.model}.__init__ builds an nn.ModuleList of copies of one block"
    return f"{found.model}.__init__ builds an nn.ModuleList of repeated {found.block} blocks"


def _start(source: SourceFile, node: Positioned) -> _Point:
    return node.lineno, source.char_column(node.lineno, node.col_offset)


def _end(source: SourceFile, node: Positioned) -> _Point:
    line = node.end_lineno or node.lineno
    return line, source.char_column(line, node.end_col_offset or 0)


_views: weakref.WeakKeyDictionary[Tree, _LintView] = weakref.WeakKeyDictionary()
