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
"""

from __future__ import annotations

import ast

from regcomp_lint.files.parsing import walk
from regcomp_lint.knowledge.torch_api import COMPILE_WRAPPER_ATTRIBUTE

#: String methods that take the prefix away when given it as their first argument.
STRIP_METHODS = ("replace", "removeprefix")


def strips_compile_prefix(tree: ast.AST) -> bool:
    """Whether ``tree`` strips ``_orig_mod.`` from state-dict keys somewhere (module docstring)."""
    names = _prefix_names(tree)

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


def _prefix_names(tree: ast.AST) -> set[str]:
    """Names assigned a ``_orig_mod`` literal (``unwanted_prefix = '_orig_mod.'``)."""
    return {
        target.id
        for node in walk(tree)
        if isinstance(node, ast.Assign) and _is_prefix_literal(node.value)
        for target in node.targets
        if isinstance(target, ast.Name)
    }
