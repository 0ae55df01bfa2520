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


def returns_a_generator(function: ast.FunctionDef, functions: dict[str, ast.FunctionDef]) -> bool:
    """``function`` returns what a generator function of ``functions`` makes, alone or first in a
    tuple, directly or through a name it binds (llama_mmqa's ``get_metamathqa()``: ``data_iter =
    _data_iter_padding(...)``, ``return data_iter, len(ds)``)."""
    bound: dict[str, ast.expr] = {}
    returned: list[ast.expr] = []
    todo: list[ast.AST] = list(function.body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            bound[node.targets[0].id] = node.value
        elif isinstance(node, ast.Return) and node.value is not None:
            returned.append(node.value)
        if not isinstance(node, _OWN_SCOPES):
            todo.extend(children(node))
    for value in returned:
        first = value.elts[0] if isinstance(value, ast.Tuple) and value.elts else value
        first = bound.get(first.id, first) if isinstance(first, ast.Name) else first
        if not (isinstance(first, ast.Call) and isinstance(first.func, ast.Name)):
            return False
        maker = functions.get(first.func.id)
        if maker is None or not is_generator(maker):
            return False
    return bool(returned)
