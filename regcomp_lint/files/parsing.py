"""One ``ast`` parse per text while a fix runs.

``regcomp-fix`` reads each script's syntax tree in several places: the conversion's parse check,
the lint's view of the script the converter asks about, the lint of the converted text (after the
safety check parsed it), the lint of the original and its compile question. Inside
:func:`shared_parses`, :func:`parse` parses a text once and hands the same tree to every later ask
for that text; outside it, it is plain ``ast.parse``. Nothing in the package changes an ``ast``
tree it is given, so sharing one changes no answer; the trees go when the outermost block ends.
"""

from __future__ import annotations

import ast
import warnings
from collections.abc import Iterator
from contextlib import contextmanager

#: the trees parsed inside the open blocks, by their text (None: no block is open)
_trees: dict[str, ast.Module] | None = None
_depth = 0


@contextmanager
def shared_parses() -> Iterator[None]:
    """Inside, :func:`parse` parses each text once (nested blocks share the outer one's trees)."""
    global _trees, _depth
    if _depth == 0:
        _trees = {}
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1
        if _depth == 0:
            _trees = None


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
