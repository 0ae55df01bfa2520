"""The builtins ``next()`` and ``iter()`` as a script calls them, resolved by qualified name.

Two refusals read them: :mod:`~regcomp_lint.codemod.iterator_loaders` (``next(loader)`` of a loader
that is its own iterator) and :mod:`~regcomp_lint.codemod.drawn_batches` (``next(it)`` counted from
the whole data's length). Both must agree on what a call of the builtin is: a script's own
``def next(...)`` or an imported ``next`` shadows it and is not one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from regcomp_lint.codemod.tree import find_all, single_target

if TYPE_CHECKING:
    from regcomp_lint.codemod.tree import Tree


def next_calls(tree: Tree, root: cst.CSTNode, *, enter_functions: bool = True) -> list[cst.Call]:
    """Each ``next(it)`` / ``next(it, default)`` of the builtin under ``root``."""
    return [
        call
        for call in find_all(root, cst.Call, enter_functions=enter_functions)
        if call.args and call.args[0].keyword is None and tree.resolves_to(call.func, "builtins.next")
    ]


def iterator_starts(
    tree: Tree, root: cst.CSTNode, *, enter_functions: bool = True
) -> list[tuple[str, cst.Assign, cst.BaseExpression]]:
    """``(it, statement, iterated)`` for each ``it = iter(iterated)`` of the builtin under ``root``."""
    found = []
    for assign in find_all(root, cst.Assign, enter_functions=enter_functions):
        target = single_target(assign)
        if target is None or not isinstance(target[1], cst.Call) or not target[1].args:
            continue
        if tree.resolves_to(target[1].func, "builtins.iter"):
            found.append((target[0], assign, target[1].args[0].value))
    return found
