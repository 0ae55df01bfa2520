"""The edits a conversion makes, recorded against nodes of the original tree.

The planner decides everything first (so it can refuse before touching anything); the applier
in ``command.py`` then makes these edits in one libcst pass. Edits are keyed on original nodes:
``replace`` functions receive the already-updated node, so edits of a node and of its children
compose. Removing a statement never loses a comment: its comments move to the next statement
(or the block's footer).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar, cast

import libcst as cst

from regcomp_lint.codemod.tree import comment_counts, comments_in, find_all

Replace = Callable[[cst.CSTNode], cst.CSTNode]
N = TypeVar("N", bound=cst.CSTNode)


#: how statements inserted into a block are glued (see ``EditPlan.insert``)
AFTER, BEFORE, UNDER_COMMENTS = "after", "before", "under comments"


def replaced_by(node: cst.CSTNode) -> Replace:
    """An edit that puts ``node`` where the (updated) node was."""
    return lambda _updated: node


@dataclass
class EditPlan:
    replace: dict[cst.CSTNode, list[Replace]] = field(default_factory=dict)
    #: statements (lines, compound statements) or small statements to delete
    remove: set[cst.CSTNode] = field(default_factory=set)
    #: block (Module / IndentedBlock of the original tree) -> index -> groups of statements to
    #: insert there, each glued to the statement before it (``AFTER``), to the one after it
    #: (``BEFORE``: it then takes over that statement's blank lines above), or put into the one
    #: after it (``UNDER_COMMENTS``: it takes over all the lines above it, its comments included)
    insert: dict[cst.CSTNode, dict[int, list[tuple[str, list[cst.BaseStatement]]]]] = field(default_factory=dict)

    def on(self, node: N, fn: Callable[[N], cst.CSTNode]) -> None:
        """``fn`` gets ``node`` as updated by the edits of its children: a node of the same type
        (the edits recorded on one node keep its type, so a later one can read its fields)."""
        self.replace.setdefault(node, []).append(cast(Replace, fn))

    def add_statements(
        self,
        block: cst.CSTNode,
        index: int,
        statements: list[cst.BaseStatement],
        *,
        after: bool,
        under_comments: bool = False,
    ) -> None:
        """Insert before ``block.body[index]``; ``after``: the statements belong with what precedes
        them; ``under_comments``: they open what follows, so the comment lines above
        ``block.body[index]`` move above them (``# Initialize accelerator`` stays over the plugin
        and the ``Accelerator(...)`` it is made for, and blank lines after a function stay)."""
        glue = AFTER if after else UNDER_COMMENTS if under_comments else BEFORE
        self.insert.setdefault(block, {}).setdefault(index, []).append((glue, statements))

    @property
    def empty(self) -> bool:
        return not (self.replace or self.remove or self.insert)


# -- comment rescue -------------------------------------------------------------------------


def comment_line(text: str) -> cst.EmptyLine:
    return cst.EmptyLine(indent=True, whitespace=cst.SimpleWhitespace(""), comment=cst.Comment(text))


def rescued_lines(stmt: cst.CSTNode) -> list[cst.EmptyLine]:
    """Lines that carry every comment of a statement being deleted, in source order.

    The statement's own comment lines above it are kept as they were (with any blank lines
    between them); comments from inside it (trailing, or within brackets) become lines.
    """
    own: list[cst.EmptyLine] = list(getattr(stmt, "leading_lines", ()))
    if not any(line.comment for line in own):
        own = []
    else:  # drop blank lines after the last comment: the next statement brings its own spacing
        while own and own[-1].comment is None:
            own.pop()
    inner = Counter(comments_in(stmt)) - Counter(line.comment.value for line in own if line.comment)
    extra: list[cst.EmptyLine] = []
    for comment in find_all(stmt, cst.Comment):
        if inner[comment.value] > 0:
            inner[comment.value] -= 1
            extra.append(comment_line(comment.value))
    return own + extra


def missing_comments(original: cst.CSTNode, updated: cst.CSTNode) -> list[str]:
    """Comments of ``original`` that ``updated`` no longer has (multiset difference)."""
    before = comments_in(original)
    if not before:  # nothing to lose: the rebuilt tree is not searched (most edited statements)
        return []
    lost = Counter(before) - comment_counts(updated)
    out: list[str] = []
    for text in before:
        if lost[text] > 0:
            lost[text] -= 1
            out.append(text)
    return out
