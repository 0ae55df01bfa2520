"""Statements that may rebind any global name, so no module-level value is final before them.

nanoGPT's configurator (``exec(open('configurator.py').read())``) and ``globals().update(cfg)``
overwrite whatever globals the command line or a config file names: ``compile = False`` above
such a line is a default, not a constant. The lint (a flag is never constant-false: ``dead_code``)
and the converter (the plugin is built after the last such line) read this one definition.
"""

from __future__ import annotations

import ast

from regcomp_lint.files.parsing import children


def rebinds_globals(stmt: ast.AST) -> bool:
    """``stmt`` calls ``exec(...)`` or ``globals().update(...)`` (outside nested defs)."""
    for node in _own_nodes(stmt):
        if isinstance(node, ast.Call) and _is_rebinding_call(node.func):
            return True
    return False


def _is_rebinding_call(func: ast.expr) -> bool:
    if isinstance(func, ast.Name):
        return func.id == "exec"
    return (
        isinstance(func, ast.Attribute)
        and func.attr == "update"
        and isinstance(func.value, ast.Call)
        and isinstance(func.value.func, ast.Name)
        and func.value.func.id == "globals"
        and not func.value.args
    )


def _own_nodes(stmt: ast.AST):
    stack = [stmt]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue  # defined here, run elsewhere
        stack.extend(children(node))
