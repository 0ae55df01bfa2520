"""``ast.walk`` and ``ast.iter_child_nodes`` without their generator layers: the same nodes in
the same order (breadth first, fields in ``_fields`` order), about twice as fast.

``ast.walk`` runs two nested generators per node (``iter_child_nodes`` over ``iter_fields``);
the analyses ask it hundreds of thousands of times per file, which made it the largest single
cost of ``regcomp-fix`` on large scripts. Here each node type's fields are looked up once, and
fields that never hold a node (names, flags) are not looked at.
"""

from __future__ import annotations

import ast
from collections import deque
from collections.abc import Iterator

#: Fields that only ever hold a string, a number, a flag or None (never a node or a list).
_SCALAR_FIELDS = frozenset(
    {"id", "attr", "arg", "asname", "module", "level", "kind", "type_comment", "conversion", "is_async", "name"}
)

_FIELDS: dict[type, tuple[str, ...]] = {}


def _fields(node_type: type) -> tuple[str, ...]:
    """The fields of ``node_type`` that may hold child nodes, in ``_fields`` order."""
    if node_type is ast.Constant:  # a constant's value is never a node
        fields: tuple[str, ...] = ()
    else:
        fields = tuple(f for f in getattr(node_type, "_fields", ()) if f not in _SCALAR_FIELDS)
    _FIELDS[node_type] = fields
    return fields


def children(node: ast.AST) -> list[ast.AST]:
    """``list(ast.iter_child_nodes(node))``."""
    fields = _FIELDS.get(type(node))
    if fields is None:
        fields = _fields(type(node))
    found: list[ast.AST] = []
    for name in fields:
        value = getattr(node, name, None)
        if isinstance(value, ast.AST):
            found.append(value)
        elif isinstance(value, list):
            for item in value:
                if isinstance(item, ast.AST):
                    found.append(item)
    return found


def walk(node: ast.AST) -> Iterator[ast.AST]:
    """``ast.walk(node)``: ``node`` and everything under it, breadth first. As there, a node's
    children are queued before the node is yielded."""
    todo = deque((node,))
    popleft, append = todo.popleft, todo.append
    fields_of = _FIELDS
    node_class = ast.AST
    while todo:
        node = popleft()
        fields = fields_of.get(type(node))
        if fields is None:
            fields = _fields(type(node))
        for name in fields:
            value = getattr(node, name, None)
            if isinstance(value, node_class):
                append(value)
            elif isinstance(value, list):
                for item in value:
                    if isinstance(item, node_class):
                        append(item)
        yield node
