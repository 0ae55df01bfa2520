"""Whether a function of the script is a generator: a hand-written batch source that
``accelerator.prepare()`` hands back unchanged, so the conversion must not count it as a loader."""

from __future__ import annotations

import ast

from regcomp_lint.files.parsing import children

_OWN_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def is_generator(function: ast.FunctionDef) -> bool:
    """``function`` yields in its own body (a nested function's or class's ``yield`` does not count)."""
    todo: list[ast.AST] = list(function.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.Yield, ast.YieldFrom)):
            return True
        if not isinstance(node, _OWN_SCOPES):
            todo.extend(children(node))
    return False
