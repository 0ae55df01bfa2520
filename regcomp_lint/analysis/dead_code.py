"""Code that never runs because a constant-false flag guards it: findings there are dropped.

A script often keeps a compile it has switched off: ``use_compile = False`` a few lines above
``if use_compile: model = torch.compile(model)``. Advice about that compile (RC501) or about
code only it runs is noise. Dead, here, means only what the file itself makes certain:

- ``if False:`` / ``if 0:`` / ``if None:`` bodies (and the ``else`` of ``if True:``);
- a flag bound exactly once in the whole file, to ``False``, ``0`` or ``None`` (no other
  assignment, parameter, ``global``, loop or ``with`` target of that name anywhere): the body of
  ``if flag:`` / ``if flag and ...:``, the ``else`` of ``if not flag:``, and the matching arm of
  ``a if flag else b``.

A flag read from ``argparse``, the environment or a config is never constant, so it is never
dead code: only what the code says. A module-level flag above ``exec(...)`` or
``globals().update(...)`` (nanoGPT's configurator, ``analysis/global_rebinders.py``) is a default
the command line may override, never a constant.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from collections.abc import Callable
from typing import Any

from regcomp_lint.analysis.global_rebinders import rebinds_globals
from regcomp_lint.files.parsing import walk

#: (start row, start col, end row, end col) of a dead region, in ast positions (col 0-based).
Span = tuple[int, int, int, int]


#: A constant test: ``if False:``, ``while 0:``, the ``else`` of ``if True:``.
_CONSTANT_TEST = re.compile(r"\b(?:if|elif|while)[ \t(]*(?:not[ \t(]*)?(?:False|True|None|0)\b")
#: ``name = False`` / ``name: bool = None`` / ``name = 0`` on a line of its own: a flag candidate.
_FALSY_ASSIGNMENT = re.compile(r"^[ \t]*([A-Za-z_]\w*)[ \t]*(?::[^=\n]*)?=[ \t]*(?:False|None|0)[ \t]*(?:#.*)?$", re.M)


def may_have_dead_code(text: str) -> bool:
    """A cheap test on the text: a constant test, or a falsy-assigned name that some
    ``if``/``while``/``and``/``or``/conditional expression reads. False means no dead region."""
    if _CONSTANT_TEST.search(text):
        return True
    names = set(_FALSY_ASSIGNMENT.findall(text))
    if not names:
        return False
    # one scan for all the candidates (a search per name was most of the cost in large files)
    alternatives = "|".join(re.escape(name) for name in sorted(names))
    return re.search(rf"\b(?:if|elif|while|and|or)\b[ \t(]*(?:not\b[ \t(]*)?(?:{alternatives})\b", text) is not None


def dead_spans(tree: ast.Module, text: str | None = None) -> list[Span]:
    """Regions of ``tree`` that a constant-false condition keeps from running (``text``, when
    given, answers most files without walking the tree). The lint's own walk feeds a
    :class:`DeadCode` instead (``ctx.semantic.dead_code``): no walk of its own."""
    if text is not None and not may_have_dead_code(text):
        return []
    dead = DeadCode(tree)
    visit, _ = dead.walk_handlers()
    for node in walk(tree):
        handler = visit.get(type(node))
        if handler is not None:
            handler(node)
    return dead.spans()


class DeadCode:
    """The dead regions of one file, from facts gathered by a walk that feeds it (the engine's).

    What it keeps of each node: the conditionals (``if``, ``while``, conditional expressions),
    how often each name is bound anywhere in the file, and the names bound to a falsy constant.
    """

    def __init__(self, tree: ast.Module) -> None:
        self._tree = tree
        self._conditionals: list[ast.If | ast.While | ast.IfExp] = []
        self._bindings: Counter[str] = Counter()
        self._falsy: set[str] = set()

    def walk_handlers(self) -> tuple[dict[type, Callable[[Any], None]], dict[type, Callable[[Any], None]]]:
        conditional = self._conditionals.append
        visit: dict[type, Callable[[Any], None]] = dict.fromkeys((ast.If, ast.While, ast.IfExp), conditional)
        visit.update(dict.fromkeys((ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef), self._definition))
        visit.update(dict.fromkeys((ast.Import, ast.ImportFrom), self._import))
        visit.update(dict.fromkeys((ast.Global, ast.Nonlocal), self._global))
        visit.update(
            dict.fromkeys((ast.AugAssign, ast.For, ast.AsyncFor, ast.comprehension, ast.NamedExpr), self._target)
        )
        visit[ast.arg] = self._arg
        visit[ast.Assign] = self._assign
        visit[ast.AnnAssign] = self._ann_assign
        visit[ast.Delete] = self._delete
        visit[ast.withitem] = self._withitem
        return visit, {}

    def spans(self) -> list[Span]:
        if not self._conditionals:
            return []
        bindings = self._bindings
        false_flags = {name for name in self._falsy if bindings[name] == 1}
        spans: list[Span] = []
        for node in self._conditionals:
            if isinstance(node, (ast.If, ast.While)):
                truth = _truth(node.test, false_flags)
                if truth is False and node.body:
                    spans.append(_block(node.body))
                elif truth is True and isinstance(node, ast.If) and node.orelse:
                    spans.append(_block(node.orelse))
            else:
                truth = _truth(node.test, false_flags)
                if truth is False:
                    spans.append(_span(node.body))
                elif truth is True:
                    spans.append(_span(node.orelse))
        if spans and any(rebinds_globals(stmt) for stmt in self._tree.body):
            return []  # a configurator may set any module-level flag (asked last: it reads every statement)
        return spans

    # -- bindings: every way a name is bound (a Name stored or deleted is always a target) ----------

    def _stored(self, target: ast.AST) -> None:
        if isinstance(target, ast.Name):
            if isinstance(target.ctx, (ast.Store, ast.Del)):
                self._bindings[target.id] += 1
        elif isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                self._stored(element)
        elif isinstance(target, ast.Starred):
            self._stored(target.value)

    def _target(self, node: ast.AugAssign | ast.For | ast.AsyncFor | ast.comprehension | ast.NamedExpr) -> None:
        self._stored(node.target)

    def _assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            self._stored(target)
        if (
            len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.Constant)
            and node.value.value in (False, 0, None)
            and not isinstance(node.value.value, float)
        ):
            self._falsy.add(node.targets[0].id)

    def _ann_assign(self, node: ast.AnnAssign) -> None:
        self._stored(node.target)
        if (
            isinstance(node.target, ast.Name)
            and isinstance(node.value, ast.Constant)
            and node.value.value in (False, 0, None)
        ):
            self._falsy.add(node.target.id)

    def _delete(self, node: ast.Delete) -> None:
        for target in node.targets:
            self._stored(target)

    def _withitem(self, node: ast.withitem) -> None:
        if node.optional_vars is not None:
            self._stored(node.optional_vars)

    def _arg(self, node: ast.arg) -> None:
        self._bindings[node.arg] += 1

    def _global(self, node: ast.Global | ast.Nonlocal) -> None:
        for name in node.names:
            self._bindings[name] += 2  # written elsewhere, in ways this file cannot see

    def _import(self, node: ast.Import | ast.ImportFrom) -> None:
        for alias in node.names:
            self._bindings[(alias.asname or alias.name).split(".")[0]] += 1

    def _definition(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> None:
        self._bindings[node.name] += 1


def is_dead(node: ast.AST, spans: list[Span]) -> bool:
    """``node`` starts inside a dead region."""
    if not spans or not hasattr(node, "lineno"):
        return False
    where = (node.lineno, getattr(node, "col_offset", 0))
    return any((s[0], s[1]) <= where < (s[2], s[3]) or where == (s[0], s[1]) for s in spans)


def _truth(test: ast.expr, false_flags: set[str]) -> bool | None:
    """True / False when the test's value is certain, else None."""
    if isinstance(test, ast.Constant):
        return bool(test.value) if isinstance(test.value, (bool, int, type(None))) else None
    if isinstance(test, ast.Name) and test.id in false_flags:
        return False
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = _truth(test.operand, false_flags)
        return None if inner is None else not inner
    if isinstance(test, ast.BoolOp):
        values = [_truth(v, false_flags) for v in test.values]
        if isinstance(test.op, ast.And) and False in values:
            return False
        if isinstance(test.op, ast.Or) and True in values:
            return True
    return None


def _block(body: list[ast.stmt]) -> Span:
    first, last = body[0], body[-1]
    return (first.lineno, first.col_offset, last.end_lineno or last.lineno, last.end_col_offset or 0)


def _span(node: ast.expr) -> Span:
    return (node.lineno, node.col_offset, node.end_lineno or node.lineno, node.end_col_offset or 0)
