"""One ``ast`` parse per text while a fix runs.

``regcomp-fix`` reads each script's syntax tree in several places: the conversion's parse check,
the lint's view of the script the converter asks about, the lint of the converted text (after the
safety check parsed it), the lint of the original and its compile question. Inside
:func:`shared_parses`, :func:`parse` parses a text once and hands the same tree to every later ask
for that text; outside it, it is plain ``ast.parse``. Nothing in the package changes an ``ast``
tree it is given, so sharing one changes no answer; the trees go when the outermost block ends.

:func:`walk` and :func:`children` are ``ast.walk`` and ``ast.iter_child_nodes`` without their
generator layers: the same nodes in the same order (breadth first, fields in ``_fields`` order),
about twice as fast. ``ast.walk`` runs two nested generators per node (``iter_child_nodes`` over
``iter_fields``) and the analyses ask it hundreds of thousands of times per file; here each node
type's fields are looked up once, and fields that never hold a node (names, flags) are skipped.
"""

from __future__ import annotations

import ast
import warnings
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager

#: the trees parsed inside the open blocks, by their text (None: no block is open)
_trees: dict[str, ast.Module] | None = None
#: inside the open blocks, what :func:`walk` gave for a module, a class or a function, by the
#: node's id, and what :func:`kept_walk` gave, by the block's and the walk's ids (each with what
#: was walked, which keeps its id from being reused)
_walked: dict[object, tuple[object, list[ast.AST]]] | None = None
_depth = 0


@contextmanager
def shared_parses() -> Iterator[None]:
    """Inside, :func:`parse` parses each text once (nested blocks share the outer one's trees)."""
    global _trees, _walked, _depth
    if _depth == 0:
        _trees, _walked = {}, {}
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1
        if _depth == 0:
            _trees = _walked = None


def parse(text: str, filename: str = "<unknown>") -> ast.Module:
    """``ast.parse(text, filename)`` without the interpreter's warnings about the code (they are
    the user's, not ours to print); inside :func:`shared_parses`, once per text. Raises what
    ``ast.parse`` raises (a text that fails is parsed again when asked again, for its own error)."""
    trees = _trees
    if trees is not None:
        found = trees.get(text)
        if found is not None:
            return found
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tree = ast.parse(text, filename)
    if trees is not None:
        trees[text] = tree
    return tree


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


#: the nodes whose walks are kept inside :func:`shared_parses`: the scopes, which a fix's
#: analyses walk again and again (the whole module a dozen times per file)
_KEPT_WALKS = (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def walk(node: ast.AST) -> Iterator[ast.AST]:
    """``ast.walk(node)``: ``node`` and everything under it, breadth first. As there, a node's
    children are queued before the node is yielded. Inside :func:`shared_parses` a scope's walk
    is made once and handed out again (the trees do not change meanwhile)."""
    walked = _walked
    if walked is None or not isinstance(node, _KEPT_WALKS):
        return _walk(node)
    found = walked.get(id(node))
    if found is None or found[0] is not node:
        found = walked[id(node)] = (node, list(_walk(node)))
    return iter(found[1])


def kept_walk(block: Sequence[ast.AST], walker: Callable[[Sequence[ast.AST]], Iterable[ast.AST]]) -> Iterator[ast.AST]:
    """``walker(block)`` for a block of statements of a tree (a function's body, a loop's):
    inside :func:`shared_parses`, made once per block and walker and handed out again."""
    walked = _walked
    if walked is None:
        return iter(walker(block))
    key = (id(block), id(walker))
    found = walked.get(key)
    if found is None or found[0] is not block:
        found = walked[key] = (block, list(walker(block)))
    return iter(found[1])


def _walk(node: ast.AST) -> Iterator[ast.AST]:
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


def split_block(parent: ast.AST, child: ast.AST) -> tuple[list[ast.stmt], list[ast.stmt]] | None:
    """The statements before and after ``child`` in the block of ``parent`` that holds it (its
    ``body``, ``orelse`` or ``finalbody``); None when ``child`` is in none of them. One reading of
    "what runs before / after this statement here" for the rules and the analyses."""
    for name in ("body", "orelse", "finalbody"):
        block = getattr(parent, name, None)
        if isinstance(block, list):
            at = next((i for i, stmt in enumerate(block) if stmt is child), None)
            if at is not None:
                return block[:at], block[at + 1 :]
    return None
