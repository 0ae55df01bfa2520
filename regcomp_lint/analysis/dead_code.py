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

from regcomp_lint.analysis.global_rebinders import rebinds_globals

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
    for name in set(_FALSY_ASSIGNMENT.findall(text)):
        if re.search(rf"\b(?:if|elif|while|and|or)\b[ \t(]*(?:not\b[ \t(]*)?{re.escape(name)}\b", text):
            return True
    return False


def dead_spans(tree: ast.Module, text: str | None = None) -> list[Span]:
    """Regions of ``tree`` that a constant-false condition keeps from running (``text``, when
    given, answers most files without walking the tree)."""
    if text is not None and not may_have_dead_code(text):
        return []
    conditionals: list[ast.If | ast.While | ast.IfExp] = []
    false_flags = _false_flags(tree, conditionals)
    spans: list[Span] = []
    for node in conditionals:  # (gathered by the same walk: one pass over the tree, not two)
        if isinstance(node, (ast.If, ast.While)):
            truth = _truth(node.test, false_flags)
            if truth is False and node.body:
                spans.append(_block(node.body))
            elif truth is True and isinstance(node, ast.If) and node.orelse:
                spans.append(_block(node.orelse))
        elif isinstance(node, ast.IfExp):
            truth = _truth(node.test, false_flags)
            if truth is False:
                spans.append(_span(node.body))
            elif truth is True:
                spans.append(_span(node.orelse))
    return spans


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


def _false_flags(tree: ast.Module, conditionals: list[ast.If | ast.While | ast.IfExp]) -> set[str]:
    """Names bound exactly once in the file, by ``name = False | 0 | None``; the file's ``if``,
    ``while`` and conditional expressions are appended to ``conditionals`` on the way."""
    bindings: Counter[str] = Counter()
    falsy: set[str] = set()
    if any(rebinds_globals(stmt) for stmt in tree.body):
        return set()  # a configurator may set any module-level flag
    for node in ast.walk(tree):
        if isinstance(node, (ast.If, ast.While, ast.IfExp)):
            conditionals.append(node)
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            bindings[node.id] += 1
        elif isinstance(node, ast.arg):
            bindings[node.arg] += 1
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            for name in node.names:
                bindings[name] += 2  # written elsewhere, in ways this file cannot see
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                bindings[(alias.asname or alias.name).split(".")[0]] += 1
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bindings[node.name] += 1
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.Constant)
            and node.value.value in (False, 0, None)
            and not isinstance(node.value.value, float)
        ):
            falsy.add(node.targets[0].id)
        elif (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and isinstance(node.value, ast.Constant)
            and node.value.value in (False, 0, None)
        ):
            falsy.add(node.target.id)
    return {name for name in falsy if bindings[name] == 1}


def _block(body: list[ast.stmt]) -> Span:
    first, last = body[0], body[-1]
    return (first.lineno, first.col_offset, last.end_lineno or last.lineno, last.end_col_offset or 0)


def _span(node: ast.expr) -> Span:
    return (node.lineno, node.col_offset, node.end_lineno or node.lineno, node.end_col_offset or 0)
