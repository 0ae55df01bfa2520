"""The engine: decoding, RC001 locations, the prefilter, the one walk, suppressions (RC002/RC003)."""

from __future__ import annotations

import ast
import sys

import pytest

from regcomp_lint.analysis.file_context import FileContext
from regcomp_lint.checks.base import Rule
from regcomp_lint.files.source import SourceFile
from regcomp_lint.lint import engine
from regcomp_lint.lint.config import Settings
from regcomp_lint.lint.engine import lint_bytes, lint_text
from regcomp_lint.lint.fixes import apply_fixes

ALL = Settings().enabled
SUPPRESS = "torch._dynamo.config.suppress_errors = True"


def found(data: bytes | str, enabled: frozenset[str] = ALL) -> list[tuple[str, int, int]]:
    diags = lint_bytes(data, "f.py", enabled) if isinstance(data, bytes) else lint_text(data, "f.py", enabled)
    return [(d.code, d.location.row, d.location.column) for d in diags]


def messages(data: bytes | str) -> list[str]:
    diags = lint_bytes(data, "f.py", ALL) if isinstance(data, bytes) else lint_text(data, "f.py", ALL)
    return [d.message for d in diags]


# -- RC001: where a file stops being Python ----------------------------------------------------


@pytest.mark.parametrize(
    "data,location,message",
    [
        (b"x = 1\ndef f(:\n    pass\n", (2, 7), "SyntaxError: invalid syntax"),
        (b"print 'hello'\n", (1, 1), "Missing parentheses"),
        (b"x = '''abc\n\n", (1, 5), "unterminated triple-quoted string"),
        (b"if x:\n\tpass\n        pass\n", (3, 1), "inconsistent use of tabs and spaces"),
        (b"x = " + b"(" * 300 + b")" * 300 + b"\n", None, "too deeply nested"),
        # columns count characters, not UTF-8 bytes
        ("s = 'éé'; y = )\n".encode(), (1, 15), "unmatched ')'"),
        # undecodable bytes: the row and column of the first bad byte
        (b"x = 1\ny = 'ab\xffcd'\n", (2, 8), "not valid utf-8"),
        (b"x = 1\ny = '\xc3\xa9\xff'\n", (2, 7), "not valid utf-8"),  # after an "é"
        (b"\xef\xbb\xbfy = '\xc3\xa9\xff'\n", (1, 7), "not valid utf-8"),  # the BOM is no character
        (b"x = 1\ny = 2\x00\n", (2, 1), "NUL byte"),
        (b"# coding: klingon\nx = 1\n", (1, 1), "unknown encoding: klingon"),
        ("# coding: utf-8\ns = 'caf\xe9'\n".encode("latin-1"), (2, 9), "not valid utf-8"),
        # a BOM is not a character of the first line
        (b"\xef\xbb\xbfx = (\n", (1, 5), "was never closed"),
        # CRLF endings count as one line break
        (b"x = 1\r\ny = )\r\n", (2, 5), "unmatched ')'"),
        (b"x = 1\r\n\r\n\r\ny = )\r\n", (4, 5), "unmatched ')'"),
    ],
)
def test_rc001_location_and_message(data, location, message):
    diags = lint_bytes(data, "f.py", ALL)
    assert [d.code for d in diags] == ["RC001"]
    if location is not None:
        assert (diags[0].location.row, diags[0].location.column) == location
    assert message in diags[0].message


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"# only a comment\n",
        b"\xef\xbb\xbf",
        b"x = 1",  # no final newline
        "# -*- coding: latin-1 -*-\ns = 'caf\xe9'\n".encode("latin-1"),
        b"x = 1\r\ny = 2\r\n",
        b"x = 1\ry = 2\r",  # old Mac line endings
        b"def f():\n\treturn 1\n",
        b"x = '\\d'\n",  # invalid escape: a SyntaxWarning, never a finding
    ],
)
def test_valid_files_have_no_rc001(data):
    assert found(data) == []


def test_rc001_is_not_reported_when_not_enabled():
    assert found(b"def f(:\n", ALL - {"RC001"}) == []
    assert found(b"\x00", ALL - {"RC001"}) == []


def test_positions_on_bom_crlf_and_latin1_files():
    assert found(b"\xef\xbb\xbfimport torch\n" + SUPPRESS.encode() + b"\n") == [("RC107", 2, 1)]
    assert found(b"import torch\r\n\r\n" + SUPPRESS.encode() + b"\r\n") == [("RC107", 3, 1)]
    latin1 = ("# -*- coding: latin-1 -*-\nimport torch\ns = 'caf\xe9'; " + SUPPRESS + "\n").encode("latin-1")
    diags = lint_bytes(latin1, "f.py", ALL)
    assert [(d.code, d.location.row, d.location.column, d.end_location.column) for d in diags] == [("RC107", 3, 13, 56)]


# -- the prefilter ------------------------------------------------------------------------------


def test_files_without_any_trigger_are_never_walked(monkeypatch):
    walked = []
    monkeypatch.setattr(engine, "walk", lambda ctx, rules: walked.append([r.code for r in rules]))
    lint_text("import os\nprint(os.getcwd())\n", "f.py", ALL)
    assert walked == []
    lint_text("import torch\n" + SUPPRESS + "\n", "f.py", ALL)
    assert walked and "RC107" in walked[0]


def test_only_rules_whose_triggers_occur_run():
    names = [rule.code for rule in engine.active_rules("x.suppress_errors = 1", ALL)]
    assert "RC107" in names and "RC105" not in names
    assert engine.active_rules("x = 1", ALL) == []
    assert engine.active_rules("suppress_errors", frozenset({"RC105"})) == []


def test_prefilter_words_can_be_names_of_their_own_and_alternatives():
    """Issue 16: ``compile``/``optimize`` only as whole names, and ``required`` alternatives.
    transformers' model files say ``_can_compile_fullgraph = True``, ``is_torchdynamo_compiling()``,
    ``optimizer`` and ``backend``, and configure no compile: no rule judging compile calls walks them."""

    def codes(text: str) -> set[str]:
        return {rule.code for rule in engine.active_rules(text, ALL)}

    model_file = (
        "from .utils import is_torchdynamo_compiling\n"
        "class M:\n    _can_compile_fullgraph = True\n    backend = optimizer = None\n"
        "    attn_mode = 'x'\n    options = dynamic = 1\n"
    )
    assert codes(model_file) & {"RC101", "RC102", "RC103", "RC104", "RC210", "RC302", "RC501"} == set()
    assert {"RC101", "RC104", "RC501"} <= codes("import torch\nm = torch.compile(m, backend='x')\n")
    assert {"RC101", "RC104"} <= codes("from torch._dynamo import optimize\nf = optimize('x')(f)\n")
    assert "RC104" in codes("from accelerate.utils import compile_regions as cr\n")
    assert "RC101" in codes("from accelerate import Accelerator\na = Accelerator(dynamo_backend='x')\n")
    assert {"RC101", "RC102", "RC501"} <= codes("TrainingArguments(torch_compile_backend='x', torch_compile_mode='y')")
    assert "RC210" in codes("torch.compile(m,fullgraph=True)") and "RC210" in codes("f(\n    fullgraph = True)")
    # RC404 judges only files that say compile or dynamo (any case)
    assert "RC404" not in codes("sd = model.state_dict()\n")
    assert "RC404" in codes("sd = model.state_dict()\n# DynaMo\n") and "RC404" in codes("model.state_dict()\ncompile")


def test_a_word_holding_an_absent_shorter_one_is_not_looked_for():
    """The plan's shortcut (``torch_compile`` is absent where ``compile`` is) changes no answer."""
    from pathlib import Path

    def plain(text: str, enabled: frozenset[str]) -> list[type[Rule]]:
        def has(word) -> bool:
            return word in text if isinstance(word, str) else word.search(text) is not None

        return [
            rule
            for rule in engine._visitor_rules(enabled)
            if all(any(map(has, r)) if isinstance(r, tuple) else has(r) for r in rule.required)
            and (not rule.triggers or any(map(has, rule.triggers)))
        ]

    assert engine._prefilter_plan(ALL)[1]["torch_compile"] == ("compile",)
    root = Path(__file__).resolve().parent.parent
    texts = [path.read_text(encoding="utf-8", errors="replace") for path in (root / "fixtures").rglob("*.py")]
    texts += ["torch_compile=1", "compile", "x.DynamoPlugin()", "TorchDynamoPlugin(", "print(1)", ""]
    for enabled in (ALL, frozenset({"RC101", "RC501"}), frozenset({"RC105", "RC203"})):
        for text in texts:
            assert engine.active_rules(text, enabled) == plain(text, enabled)


def test_prefiltered_file_still_gets_rc001():
    assert found("def f(:\n") == [("RC001", 1, 7)]


# -- the walk -----------------------------------------------------------------------------------


class Recorder(Rule):
    code = "RC999"
    name = "recorder"
    message = "test"

    def __init__(self, ctx):
        super().__init__(ctx)
        self.events: list[tuple] = []

    def visit_Call(self, node):
        self.events.append(("visit", ast.unparse(node.func), [type(a).__name__ for a in self.ctx.ancestors]))

    def leave_Call(self, node):
        self.events.append(("leave", ast.unparse(node.func), len(self.ctx.ancestors)))

    def visit_Name(self, node):
        self.events.append(("name", node.id, self.ctx.qualname(node)))

    def finish(self):
        self.events.append(("finish",))


def walk(text: str) -> list[tuple]:
    source = SourceFile("f.py", text)
    ctx = FileContext(source, ast.parse(text))
    rule = Recorder(ctx)
    engine.walk(ctx, [rule])
    return rule.events


def test_walk_visits_in_source_order_with_ancestors_and_leaves_after_children():
    events = walk("def f():\n    g(h(1))\nk()\n")
    calls = [e for e in events if e[0] in ("visit", "leave")]
    assert calls == [
        ("visit", "g", ["Module", "FunctionDef", "Expr"]),
        ("visit", "h", ["Module", "FunctionDef", "Expr", "Call"]),
        ("leave", "h", 4),
        ("leave", "g", 3),
        ("visit", "k", ["Module", "Expr"]),
        ("leave", "k", 2),
    ]
    assert events[-1] == ("finish",)


def test_imports_are_known_to_rules_from_the_point_they_appear():
    events = walk("a = T\nimport torch as T\nb = T\n")
    names = [e for e in events if e[0] == "name"]
    assert names == [("name", "a", "a"), ("name", "T", "T"), ("name", "b", "b"), ("name", "T", "torch")]


def test_deeply_nested_code_is_walked_without_recursion(monkeypatch):
    depth = 90  # the parser's own limit is 100 levels of indentation
    text = "".join("    " * i + "if x:\n" for i in range(depth)) + "    " * depth + "f()\n"
    text += "if a:\n    pass\n" + "".join(f"elif a == {i}:\n    g{i}()\n" for i in range(600))  # 600 nested Ifs
    source = SourceFile("f.py", text)
    ctx = FileContext(source, ast.parse(text))
    rule = Recorder(ctx)
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(150)  # far below the depth of the tree: a recursive walk would fail
    try:
        engine.walk(ctx, [rule])
    finally:
        sys.setrecursionlimit(limit)
    visits = [e for e in rule.events if e[0] == "visit"]
    assert len(visits) == 601
    assert len(visits[0][2]) == depth + 2  # Module, the ifs, Expr
    assert len(visits[-1][2]) == 601 + 2  # Module, the if and its 600 elifs, Expr


def test_too_deep_to_parse_is_rc001():
    text = "if a:\n    pass\n" + "".join(f"elif a == {i}:\n    g{i}()\n" for i in range(3000))
    diags = lint_text(text, "f.py", ALL)
    assert [d.code for d in diags] == ["RC001"] and "too deeply nested" in diags[0].message


@pytest.mark.parametrize(
    "fixture",
    [
        "rc201_item_in_attention.py",
        "rc301_gpt2_layer_idx_scaling.py",
        "nanogpt_train.py",
        "rc402_unprepared_scheduler.py",
    ],
)
def test_a_lint_leaves_no_reference_cycle_holding_the_tree(fixture):
    """Everything a file's lint builds is freed by reference counting when it ends: a cycle
    (a rule keeping its own bound method, analyses keeping each other's) would hold the whole
    tree until the cyclic collector runs, which cost seconds on a large tree (issue 16)."""
    import gc
    from pathlib import Path

    data = (Path(__file__).parent.parent / "fixtures" / "lint" / fixture).read_bytes()
    lint_bytes(data, fixture, ALL)  # first use: lazy imports and caches
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        assert lint_bytes(data, fixture, ALL)
        gc.collect()
        held = sorted(
            {
                type(o).__name__
                for o in gc.garbage
                if isinstance(o, ast.AST) or type(o).__module__.startswith("regcomp_lint")
            }
        )
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    assert held == []


# -- suppressions -------------------------------------------------------------------------------

TORCH = "import torch\n"


@pytest.mark.parametrize(
    "text",
    [
        TORCH + SUPPRESS + "  # noqa\n",
        TORCH + SUPPRESS + "  # noqa: RC107\n",
        TORCH + SUPPRESS + "  # NOQA:rc107\n",
        TORCH + SUPPRESS + "  # regcomp: ignore\n",
        TORCH + SUPPRESS + "  # regcomp: ignore[RC107]\n",
        TORCH + "# regcomp: ignore[RC107]\n" + SUPPRESS + "\n",
        TORCH + "# regcomp: ignore[RC107]\ntorch._dynamo.config.suppress_errors = (\n    True\n)\n",
        # the finding is on a later line of a multi-line statement; the comment is above it
        TORCH + "# regcomp: ignore[RC101]\nmodel = torch.compile(\n    model,\n    backend='inductr',\n)\n",
    ],
)
def test_suppressed(text):
    assert found(text) == []


DECORATED = "class M:\n    @torch.compile(backend='inductr')\n    def f(self):\n        pass\n"


def test_comment_above_the_decorators_silences_a_finding_in_them():
    assert found(TORCH + DECORATED) == [("RC101", 3, 28)]
    assert found(TORCH + DECORATED.replace("    @torch", "    # regcomp: ignore[RC101]\n    @torch")) == []


def test_comment_above_a_block_does_not_silence_its_body():
    assert found(TORCH + "# regcomp: ignore[RC101]\n" + DECORATED) == [("RC002", 2, 1), ("RC101", 4, 28)]


def test_the_multi_line_example_really_fires_without_the_comment():
    assert found(TORCH + "model = torch.compile(\n    model,\n    backend='inductr',\n)\n") == [("RC101", 4, 13)]


@pytest.mark.parametrize(
    "text,expected",
    [
        # a noqa comment for another rule or another line does not silence
        (TORCH + SUPPRESS + "  # noqa: RC101\n", [("RC107", 2, 1), ("RC002", 2, 46)]),
        (TORCH + "# noqa\n" + SUPPRESS + "\n", [("RC107", 3, 1)]),
        # `# regcomp: ignore` two lines above, or above a different statement, does not silence
        (TORCH + "# regcomp: ignore[RC107]\n\n" + SUPPRESS + "\n", [("RC002", 2, 1), ("RC107", 4, 1)]),
        (TORCH + "# regcomp: ignore[RC107]\nif x:\n    " + SUPPRESS + "\n", [("RC002", 2, 1), ("RC107", 4, 5)]),
    ],
)
def test_not_suppressed(text, expected):
    assert found(text) == expected


@pytest.mark.parametrize(
    "text,expected_code,fixed",
    [
        ("x = 1  # noqa: RC107\n", "RC002", "x = 1\n"),
        ("x = 1  # noqa: RC107, E501\n", "RC002", "x = 1  # noqa: E501\n"),
        ("x = 1  # NOQA:rc107\n", "RC002", "x = 1\n"),
        ("# regcomp: ignore\nx = 1\n", "RC002", "x = 1\n"),
        ("x = 1  # regcomp: ignore[RC107]\n", "RC002", "x = 1\n"),
        ("x = 1  # regcomp: ignore[RC107] keep this note\n", "RC002", "x = 1  # keep this note\n"),
        ("x = 1  # noqa: RC999\n", "RC003", None),
        ("x = 1  # regcomp: ignore[XYZ1]\n", "RC003", None),
    ],
)
def test_unused_and_unknown_suppressions_without_any_other_finding(text, expected_code, fixed):
    diags = lint_text(text, "f.py", ALL)
    assert [d.code for d in diags] == [expected_code]
    after, _ = apply_fixes(text, diags)
    assert after == (fixed if fixed is not None else text)


@pytest.mark.parametrize(
    "text",
    [
        "x = 1  # noqa\n",  # bare noqa belongs to every linter
        "x = 1  # noqa: E501\n",  # foreign codes are left alone
        "x = 1  # noqa: E501, W291\n",
        "s = 'not a # noqa: RC107 comment'\n",  # inside a string
    ],
)
def test_foreign_and_bare_noqa_are_left_alone(text):
    assert found(text) == []


def test_suppression_rules_can_be_turned_off():
    assert found("x = 1  # noqa: RC107\n", ALL - {"RC002"}) == []
    assert found("x = 1  # noqa: RC999\n", ALL - {"RC003"}) == []
    assert found(TORCH + SUPPRESS + "  # noqa: RC107\n", ALL - {"RC002", "RC003"}) == []


def test_suppressing_a_rule_that_is_not_enabled_is_not_unused():
    assert found("x = 1  # noqa: RC107\n", ALL - {"RC107"}) == []
