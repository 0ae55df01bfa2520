"""``files.parsing``: inside ``shared_parses()`` each text is parsed once; outside, every ask parses.

regcomp-fix asks for the tree of the same text in several places (the conversion's parse check,
the lint view, the lint of the converted text and of the original); these tests pin what sharing
promises: the same tree object for the same text, inside one block only, the interpreter's own
errors for a text that does not parse, and no warning printed about the user's code.
"""

from __future__ import annotations

import ast
import warnings

import pytest

from regcomp_lint.cli.fix_command import FixOptions, convert_options, process_text
from regcomp_lint.codemod.convert import convert_source
from regcomp_lint.files import parsing
from regcomp_lint.files.parsing import parse, shared_parses
from regcomp_lint.lint.config import Settings

SCRIPT = """import torch

model = torch.nn.Linear(2, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    loss = model(torch.ones(2)).sum()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
"""


def test_outside_a_block_every_ask_parses() -> None:
    first, second = parse("a = 1\n"), parse("a = 1\n")
    assert first is not second
    assert ast.dump(first) == ast.dump(second) == ast.dump(ast.parse("a = 1\n"))


def test_inside_a_block_one_tree_per_text() -> None:
    with shared_parses():
        first = parse("a = 1\n", "one.py")
        assert parse("a = 1\n", "other.py") is first  # (the name only words a syntax error)
        assert parse("".join(["a = ", "1\n"])) is first  # equal text, another string object
        assert parse("a = 2\n") is not first
        with shared_parses():  # a nested block shares the outer one's trees
            assert parse("a = 1\n") is first
        assert parse("a = 1\n") is first  # ... and leaves them to it
    assert parse("a = 1\n") is not first  # gone with the outermost block


def test_the_trees_go_when_the_block_raises() -> None:
    with pytest.raises(KeyError), shared_parses():
        parse("a = 1\n")
        raise KeyError
    assert parsing._trees is None and parsing._depth == 0


def test_a_text_that_does_not_parse_raises_each_time_with_its_file_name() -> None:
    with shared_parses():
        for name in ("a.py", "b.py"):
            with pytest.raises(SyntaxError) as caught:
                parse("def f(:\n", name)
            assert caught.value.filename == name


def test_no_warning_about_the_users_code() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        parse('x = 1\nif x is 1:\n    pass\ny = "\\d"\n')


def test_a_conversion_parses_the_script_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The parse check, the lint view, the lint of both texts and the compile question share:
    regcomp-fix parses the original once and the converted text once."""
    parsed: list[str] = []
    real = ast.parse

    def counting(text, *args, **kwargs):
        parsed.append(text)
        return real(text, *args, **kwargs)

    monkeypatch.setattr(parsing.ast, "parse", counting)
    result = process_text(SCRIPT, "train.py", Settings(), convert_options(FixOptions()), unsafe=False)
    assert result.converted
    assert parsed.count(SCRIPT) == 1
    assert len(parsed) == len(set(parsed))  # the converted text (and a lint-fixed one) once each too


def test_shared_trees_give_the_same_conversion() -> None:
    alone = convert_source(SCRIPT, "train.py")
    with shared_parses():
        parse(SCRIPT)  # the tree is already there: the conversion reads it
        shared = convert_source(SCRIPT, "train.py")
        again = convert_source(SCRIPT, "train.py")
    assert alone.changed and (alone.text, alone.notes) == (shared.text, shared.notes) == (again.text, again.notes)
