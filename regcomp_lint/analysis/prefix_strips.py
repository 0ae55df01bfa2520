"""Does a script strip the compile wrapper's ``_orig_mod.`` prefix from the keys it loads?

nanoGPT and the many scripts copied from it save ``model.state_dict()`` of a compiled model
(every key ``_orig_mod.<name>``) and strip the prefix on their own resume::

    unwanted_prefix = '_orig_mod.'
    for k, v in list(state_dict.items()):
        if k.startswith(unwanted_prefix):
            state_dict[k[len(unwanted_prefix):]] = state_dict.pop(k)
    model.load_state_dict(state_dict)

Such a save is the script's own checkpoint format, not a defect (RC404 stays silent on it). A
strip is the prefix (a string literal starting with ``_orig_mod``, or a name bound to one) used
as ``k[len(prefix):]``, ``k.replace(prefix, ...)``, ``k.removeprefix(prefix)`` or the pattern of
``re.sub``. ``getattr(model, "_orig_mod", model)`` is no strip: it reaches the module, not the keys.

Session 26: a strip guards a load only when its keys go into it: the strip stands in the
``load_state_dict`` call's argument, or in an assignment to a name that argument reads
(``state_dict[k[len(p):]] = state_dict.pop(k)`` then ``model.load_state_dict(state_dict)``), in the
load's function (:func:`strips_into`). A strip elsewhere (an export of clean keys) guards nothing.
A strip of the keys a read itself gives (``{k.removeprefix(p): v for k, v in
model.state_dict().items()}``, or a ``for`` loop over them) leaves no prefix to report
(:func:`strips_read`).
"""

from __future__ import annotations

import ast

from regcomp_lint.files.parsing import walk
from regcomp_lint.knowledge.torch_api import COMPILE_WRAPPER_ATTRIBUTE

#: String methods that take the prefix away when given it as their first argument.
STRIP_METHODS = ("replace", "removeprefix")


def strips_into(scope: ast.AST, argument: ast.AST, names: set[str]) -> bool:
    """Whether the keys of a load's ``argument`` (in ``scope``, the load's function) are stripped
    of ``_orig_mod.``: a strip inside ``argument``, or one in an assignment in ``scope`` to a name
    ``argument`` reads (``names``: :func:`prefix_names` of the file)."""
    if _holds_strip(argument, names):
        return True
    read = {node.id for node in walk(argument) if isinstance(node, ast.Name)}
    return any(
        _assigned_names(stmt) & read and _holds_strip(stmt, names)
        for stmt in walk(scope)
        if isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and stmt.value is not None
    )


def strips_read(tree: ast.AST, read: ast.Call, names: set[str]) -> bool:
    """Whether the keys ``read`` (a ``state_dict()`` call) gives are stripped where they are read:
    ``read`` is iterated by a comprehension whose key or element strips, or by a ``for`` loop
    whose body strips."""
    for node in walk(tree):
        if isinstance(node, (ast.DictComp, ast.ListComp, ast.SetComp, ast.GeneratorExp)):
            iterated = any(read in walk(g.iter) for g in node.generators)
            made = [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
            if iterated and any(_holds_strip(part, names) for part in made):
                return True
        elif isinstance(node, (ast.For, ast.AsyncFor)) and read in walk(node.iter):
            if any(_holds_strip(stmt, names) for stmt in node.body):
                return True
    return False


def _assigned_names(stmt: ast.Assign | ast.AugAssign | ast.AnnAssign) -> set[str]:
    """``sd`` of ``sd = ...`` and of ``sd[key] = ...``."""
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
    found = set()
    for target in targets:
        while isinstance(target, ast.Subscript):
            target = target.value
        if isinstance(target, ast.Name):
            found.add(target.id)
    return found


def _holds_strip(tree: ast.AST, names: set[str]) -> bool:
    """Whether ``tree`` holds a strip of the prefix (``names``: the names bound to it)."""

    def is_prefix(node: ast.AST) -> bool:
        if isinstance(node, ast.Name):
            return node.id in names
        return _is_prefix_literal(node)

    for node in walk(tree):
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice):
            lower = node.slice.lower
            if (
                isinstance(lower, ast.Call)
                and isinstance(lower.func, ast.Name)
                and lower.func.id == "len"
                and len(lower.args) == 1
                and is_prefix(lower.args[0])
            ):
                return True
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args:
            first = node.args[0]
            if node.func.attr in STRIP_METHODS and is_prefix(first):
                return True
            if (
                node.func.attr == "sub"
                and isinstance(first, ast.Constant)
                and isinstance(first.value, str)
                and COMPILE_WRAPPER_ATTRIBUTE in first.value
            ):
                return True
    return False


def _is_prefix_literal(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and node.value.startswith(COMPILE_WRAPPER_ATTRIBUTE)
    )


def prefix_names(tree: ast.AST) -> set[str]:
    """Names assigned a ``_orig_mod`` literal (``unwanted_prefix = '_orig_mod.'``)."""
    return {
        target.id
        for node in walk(tree)
        if isinstance(node, ast.Assign) and _is_prefix_literal(node.value)
        for target in node.targets
        if isinstance(target, ast.Name)
    }
