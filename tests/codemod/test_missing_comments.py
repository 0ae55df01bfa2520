"""``edits.missing_comments``: the comments of an edited statement its rebuilt form lost; a
statement without comments loses none, and the rebuilt tree is then not searched at all."""

from __future__ import annotations

import libcst as cst
import pytest

from regcomp_lint.codemod import edits


def _statement(text: str) -> cst.BaseStatement:
    return cst.parse_module(text).body[0]


def test_lost_comments_are_listed_in_source_order() -> None:
    original = _statement("if x:  # keep\n    y = 1  # dropped\n    z = 2  # dropped\n")
    updated = _statement("if x:  # keep\n    y = 1\n")
    assert edits.missing_comments(original, updated) == ["# dropped", "# dropped"]


def test_a_statement_without_comments_does_not_search_the_rebuilt_tree(monkeypatch: pytest.MonkeyPatch) -> None:
    def searched(_: cst.CSTNode) -> None:
        raise AssertionError("the rebuilt tree was searched")

    monkeypatch.setattr(edits, "comment_counts", searched)
    assert edits.missing_comments(_statement("y = f(x)\n"), _statement("y = g(x)  # new\n")) == []
