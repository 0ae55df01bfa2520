"""Default scope (issue 13): RC2xx/RC3xx findings only where a compile of the linted project
reaches the module, everywhere when selected by name; RC501 off under prefer-steady-state."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from regcomp_lint.analysis.compiled_scope import compiled_among, compiles, imported_names
from regcomp_lint.api import lint_paths
from regcomp_lint.checks import ALL_RULES
from regcomp_lint.lint.config import Settings, load
from regcomp_lint.lint.scope import scoped_codes

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"

PLAIN_MODULE = textwrap.dedent(
    """
    import torch
    from torch import nn


    class M(nn.Module):
        def forward(self, x):
            print(x)
            if x.sum() > 0:
                return x.item()
            return x
    """
)
BREAKS = {"RC201", "RC202", "RC203"}


def codes(paths, settings=None) -> set[str]:
    return {d.code for d in lint_paths([str(p) for p in paths], settings or Settings(), use_cache=False)}


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_a_module_nobody_compiles_gets_no_graph_break_findings(tmp_path):
    model = write(tmp_path, "model.py", PLAIN_MODULE)
    assert codes([model]) == set()


def test_a_module_a_script_of_the_project_compiles_does(tmp_path):
    write(tmp_path, "model.py", PLAIN_MODULE)
    write(tmp_path, "train.py", "import torch\nfrom model import M\nm = torch.compile(M())\n")
    assert codes([tmp_path]) == BREAKS


def test_compiled_through_a_chain_of_project_imports(tmp_path):
    write(tmp_path, "pkg/__init__.py", "")
    write(tmp_path, "pkg/layers.py", PLAIN_MODULE)
    write(tmp_path, "pkg/model.py", "from .layers import M\n")
    write(tmp_path, "train.py", "from accelerate.utils import TorchDynamoPlugin\nfrom pkg.model import M\n")
    write(tmp_path, "other.py", PLAIN_MODULE)  # imported by nobody who compiles
    found = {(Path(d.filename).name, d.code) for d in lint_paths([str(tmp_path)], Settings(), use_cache=False)}
    assert {name for name, _ in found} == {"layers.py"}


def test_a_file_that_asks_for_fullgraph_is_in_scope(tmp_path):
    model = write(tmp_path, "model.py", PLAIN_MODULE + "\nFULLGRAPH = dict(fullgraph=True)\n")
    assert codes([model]) == BREAKS


@pytest.mark.parametrize("selector", ["RC2", "RC203", "print-or-logging"])
def test_an_explicit_selection_reports_everywhere(tmp_path, selector):
    model = write(tmp_path, "model.py", PLAIN_MODULE)
    found = codes([model], Settings(extend_select=(selector,)))
    assert found and found <= BREAKS
    assert "RC203" in found


def test_all_is_not_an_explicit_selection():
    assert "RC203" in scoped_codes(Settings(select=("ALL",)))
    assert "RC203" not in scoped_codes(Settings(select=("RC203",)))


def test_scoped_rules_are_the_ones_that_judge_model_code():
    scoped = {code for code, rule in ALL_RULES.items() if rule.needs_compiled_module}
    assert {f"RC20{i}" for i in range(1, 10)} | {"RC301"} <= scoped
    assert not scoped & {"RC210", "RC302", "RC501", "RC101", "RC404"}  # these sit at a compile already


def test_compile_signals():
    assert compiles("m = torch.compile(m)") and compiles("model.compile()") and compiles("p = TorchDynamoPlugin()")
    assert compiles("args = TrainingArguments(torch_compile=True)") and compiles("fullgraph = True")
    assert compiles("from accelerate.utils import compile_regions\n")
    assert compiles("import os\nos.environ['ACCELERATE_DYNAMO_BACKEND'] = 'inductor'\n")
    assert not compiles("import re\nPAT = re.compile(r'x')\n") and not compiles("class M(nn.Module): pass\n")
    # a mention in a docstring or a comment is not a compile (the transformers tree is full of them)
    assert not compiles('def f():\n    """Works with torch.compile(fullgraph=True)."""\n    # torch.compile(m)\n')


def test_imported_names_cover_relative_and_submodule_imports():
    import ast

    tree = ast.parse("import a.b\nfrom . import layers\nfrom ..pkg import mod\nfrom x import *\n")
    assert imported_names(tree) == ["a.b", ".layers", "..pkg", "..pkg.mod", "x"]


def test_in_memory_sources_without_imports():
    assert compiled_among({"a.py": "torch.compile(m)", "b.py": "x = 1"}) == {str(Path("a.py").resolve())}


def test_stdin_is_a_project_of_one_file(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from regcomp_lint.cli.commands import main

    monkeypatch.chdir(tmp_path)
    plain = CliRunner().invoke(main, ["--format", "concise", "-"], input=PLAIN_MODULE)
    assert plain.exit_code == 0 and "RC20" not in plain.stdout
    compiled = CliRunner().invoke(main, ["--format", "concise", "-"], input=PLAIN_MODULE + "m = torch.compile(M())\n")
    assert compiled.exit_code == 1 and "RC203" in compiled.stdout


def test_prefer_steady_state_turns_rc501_off(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.regcomp-lint]\nprefer-steady-state = true\n")
    settings = load(start=str(tmp_path))
    assert settings.prefer_steady_state and "RC501" not in settings.enabled
    assert "RC501" not in Settings(select=("RC501",), prefer_steady_state=True).enabled
    assert "RC501" in Settings().enabled


def test_rc501_is_off_on_a_script_tuned_for_steady_state(tmp_path):
    script = write(
        tmp_path,
        "train.py",
        textwrap.dedent(
            """
            import torch
            from torch import nn

            class Block(nn.Module):
                def forward(self, x):
                    return x

            class GPT(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.blocks = nn.ModuleList([Block() for _ in range(4)])

                def forward(self, x):
                    for b in self.blocks:
                        x = b(x)
                    return x

            model = torch.compile(GPT())
            """
        ),
    )
    assert codes([script]) == {"RC501"}
    assert codes([script], Settings(prefer_steady_state=True)) == set()


def test_a_changed_model_file_alone_is_judged_against_its_project(tmp_path, monkeypatch):
    """pre-commit passes only model.py: the train.py that compiles it is found under the config's root."""
    model = write(tmp_path, "model.py", PLAIN_MODULE)
    write(tmp_path, "train.py", "import torch\nfrom model import M\nm = torch.compile(M())\n")
    assert codes([model]) == set()  # no config: the files given are the whole project
    write(tmp_path, "pyproject.toml", "[tool.regcomp-lint]\n")
    monkeypatch.chdir(tmp_path)
    assert codes([model], load(start=str(model))) == BREAKS


def test_the_lint_learns_each_files_scope_from_its_own_parse(tmp_path, monkeypatch):
    """The scope question after a run reads and parses no file the lint already read."""
    from regcomp_lint.analysis import compiled_scope
    from regcomp_lint.lint import runner

    write(tmp_path, "pkg/__init__.py", "")
    write(tmp_path, "pkg/layers.py", PLAIN_MODULE)
    write(tmp_path, "pkg/model.py", "from .layers import M\n")
    write(tmp_path, "train.py", "import torch\nfrom pkg.model import M\nm = torch.compile(M())\n")
    expected = codes([tmp_path])

    def must_not_parse(text):
        raise AssertionError("the scope question parsed a file again")

    monkeypatch.setattr(compiled_scope, "_parse", must_not_parse)
    monkeypatch.setattr(runner, "_read_text", must_not_parse)
    settings = Settings(root=str(tmp_path))
    assert {d.code for d in runner.run([str(tmp_path)], settings, jobs=1, use_cache=False).diagnostics} == expected
    runner.run([str(tmp_path)], settings, jobs=1)  # cold, cached
    warm = runner.run([str(tmp_path)], settings, jobs=1)  # warm: the cache kept each file's facts
    assert warm.cached == 4 and {d.code for d in warm.diagnostics} == expected == BREAKS


def test_file_scope_is_what_compiles_and_imported_names_say():
    import ast

    from regcomp_lint.analysis.compiled_scope import FileScope, file_scope

    text = "import torch\nfrom .layers import M\nm = torch.compile(M())\n"
    assert file_scope(text, ast.parse(text), parsed=True) == FileScope(True, ("torch", ".layers", ".layers.M"))
    assert file_scope(text, None, parsed=False) == FileScope(True, ("torch", ".layers", ".layers.M"))
    assert file_scope("import os\n", None, parsed=True) == FileScope(False, ())  # a syntax error: no tree
    assert file_scope("import os\n", None, parsed=False) == FileScope(False, ())  # not Python: no imports
    assert file_scope(None, None, parsed=False) == FileScope(False, ())  # unreadable


def test_imported_names_visit_nested_statements_in_walk_order():
    import ast

    tree = ast.parse(
        "try:\n    import a\nexcept ImportError:\n    import b\nelse:\n    import c\nfinally:\n    import d\n"
        "def f():\n    if x:\n        import e\n    match y:\n        case 1:\n            from g import h\n"
        "class C:\n    import i\nimport j\n"
    )
    walked = [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]
    assert imported_names(tree) == [
        name for node in walked for name in imported_names(ast.Module(body=[node], type_ignores=[]))
    ]
    assert set(imported_names(tree)) == set("abcdefij") - {"f"} | {"g", "g.h"}


@pytest.mark.parametrize(
    "text",
    [
        # blocks without the word are left out, those with it (or a docstring saying it) entered
        "def f():\n    '''import x'''\n    return 1\nclass C:\n    def g(self):\n        import a\n"
        "    def h(self):\n        pass\nimport b\n",
        # a continued import: its keyword on the block's second row
        "if x:\n    from pkg \\\n        import mod\nelse:\n    y = 1\n",
        "try:\n    import a\nexcept ImportError:\n    import b\nfinally:\n    import c\n",
        "match y:\n    case 1:\n        from g import h\n    case _:\n        import k\n",
        "@decorator(1)\ndef f():\n    import a\n\n\nimport b\n",
        "x = 1\r\nif x:\r\n    import a\r\n",  # \r: every block entered
        "x = 1\rif x:\r    import a\r",
        "import a; import b\nfor i in x:\n    import c; d = 1\n",
        "y = 1\n",
    ],
)
def test_imported_names_from_the_text_rows_are_the_walk_order_ones(text):
    import ast

    tree = ast.parse(text)
    assert imported_names(tree, text) == imported_names(tree)


@pytest.mark.parametrize(
    "text",
    [
        "torch.compile(m)",
        "xtorch.compile(m)",
        "torch .\ncompile",
        "re.compile(x)",
        "regex.compile(x)",
        "are.compile(x)",
        "_re.compile(",
        "m.compile (",
        "a_dynamo.optimize",
        "_dynamo . optimize",
        "torch._dynamo.optimize('x')",
        "fullgraph",
        "xfullgraph",
        "éfullgraph",
        "fullgraphs",
        "compile_regions",
        "acompile_regions",
        "compile_repeated_blocks()",
        "nested_compile_region",
        "ACCELERATE_DYNAMO_X",
        "TorchDynamoPlugin",
        "MyTorchDynamoPlugin",
        "torch_compile=",
        "dynamo_backend",
        "dynamo_plugin=p",
        "xdynamo_plugin",
        "# nothing here",
        "",
    ],
)
def test_the_fast_compile_signal_matches_what_the_plain_one_does(text):
    """COMPILE_SIGNAL is written for speed (literal first characters); this is its plain spelling."""
    import re

    from regcomp_lint.analysis.compiled_scope import COMPILE_SIGNAL

    plain = re.compile(
        r"\btorch\s*\.\s*compile\b|(?<!\bre)(?<!\bregex)\.compile\s*\("
        r"|\b(?:compile_regions|compile_repeated_blocks|TorchDynamoPlugin|nested_compile_region)\b"
        r"|\b_dynamo\s*\.\s*optimize\b|\b(?:dynamo_backend|dynamo_plugin|torch_compile|fullgraph)\b|ACCELERATE_DYNAMO_"
    )
    assert [m.span() for m in COMPILE_SIGNAL.finditer(text)] == [m.span() for m in plain.finditer(text)]


def test_the_split_compile_signal_finds_what_the_one_pattern_does():
    """``_mentions_compile`` looks for COMPILE_SIGNAL's alternatives one by one (issue 16)."""
    from regcomp_lint.analysis import compiled_scope
    from regcomp_lint.analysis.compiled_scope import COMPILE_SIGNAL

    pieces = "torch . compile ( re.compile( regex.compile( x.compile (  compile_regions compile_repeated_blocks".split()
    pieces += "TorchDynamoPlugin _dynamo.optimize dynamo_backend dynamo_plugin torch_compile fullgraph".split()
    pieces += ["ACCELERATE_DYNAMO_X", "_can_compile_fullgraph", "xtorch.compile", "torch_compile_mode", "\n", " "]
    texts = [a + b for a in pieces for b in pieces] + [a + " " + b for a in pieces for b in pieces]
    texts += [path.read_text(encoding="utf-8", errors="replace") for path in FIXTURES.rglob("*.py")]
    for text in texts:
        assert compiled_scope._mentions_compile(text) == (COMPILE_SIGNAL.search(text) is not None), text


# -- the second pass (issue 16): scoped rules run only on the files a compile reaches -----------


def _reference(paths, settings):
    """The findings as one pass gives them: every rule on every file, then the scope's filter."""
    from regcomp_lint.files.discovery import discover
    from regcomp_lint.lint import runner, scope
    from regcomp_lint.lint.engine import lint_bytes

    files = discover([str(p) for p in paths], settings).files
    found = [d for path in files for d in lint_bytes(Path(path).read_bytes(), path, settings.enabled_for(path))]
    kept = scope.limit_to_compiled(found, settings, files, runner._read_text)
    return sorted(settings.apply_severities(kept), key=lambda d: d.sort_key())


SUPPRESSED_MODULES = {
    # a directive of ours naming a scoped rule: the file's RC002 needs every rule's findings
    "noqa_ours.py": PLAIN_MODULE.replace("print(x)", "print(x)  # noqa: RC203")
    + "\ndef f(x):\n    return x  # noqa: RC201\n",
    "ignore_bare.py": PLAIN_MODULE.replace("print(x)", "print(x)  # regcomp: ignore"),
    "ignore_unused.py": PLAIN_MODULE + "\ny = 1  # regcomp: ignore[RC202]\n",
    # foreign and bare noqa: the second pass silences the findings alone
    "noqa_foreign.py": PLAIN_MODULE.replace("print(x)", "print(x)  # noqa: E501"),
    "noqa_bare.py": PLAIN_MODULE.replace("print(x)", "print(x)  # noqa"),
    "plain.py": PLAIN_MODULE,
}


@pytest.mark.parametrize("compiled", [False, True])
def test_two_passes_find_what_one_pass_finds(tmp_path, compiled):
    from regcomp_lint.lint import runner

    for name, text in SUPPRESSED_MODULES.items():
        write(tmp_path, name, text)
    if compiled:
        imports = "".join(f"import {name[:-3]}\n" for name in SUPPRESSED_MODULES)
        write(tmp_path, "train.py", "import torch\n" + imports + "m = torch.compile(plain.M())\n")
    settings = Settings(root=str(tmp_path))
    expected = _reference([tmp_path], settings)
    assert {d.code for d in expected} & {"RC002", "RC203"}
    assert runner.run([str(tmp_path)], settings, jobs=1, use_cache=False).diagnostics == expected


def test_a_file_that_compiles_is_linted_whole_in_the_first_pass(tmp_path, monkeypatch):
    """Its own compile reaches it: no second pass (and no second parse) for it."""
    from regcomp_lint.lint import runner
    from regcomp_lint.lint.engine import lint_bytes

    write(tmp_path, "model.py", PLAIN_MODULE + "\nm = torch.compile(M())\n")
    settings = Settings(root=str(tmp_path))
    linted = []

    def recording_lint(data, filename, enabled, defer=None):
        found = lint_bytes(data, filename, enabled, defer)
        linted.append(defer.pending if defer is not None else None)
        return found

    monkeypatch.setattr(runner, "lint_bytes", recording_lint)
    result = runner.run([str(tmp_path)], settings, jobs=1, use_cache=False)
    assert linted == [frozenset()]
    assert {d.code for d in result.diagnostics} == BREAKS
    assert result.diagnostics == _reference([tmp_path], settings)


def test_a_cached_file_gets_its_put_off_findings_once_a_compile_reaches_it(tmp_path, monkeypatch):
    """The cache records the rules a file's entry lacks: a run that finds the file compiled
    (a training script added beside it) adds their findings, and caches them."""
    from regcomp_lint.lint import runner

    write(tmp_path, "model.py", PLAIN_MODULE)
    settings = Settings(root=str(tmp_path))
    assert runner.run([str(tmp_path)], settings, jobs=1).diagnostics == []
    write(tmp_path, "train.py", "import torch\nfrom model import M\nm = torch.compile(M())\n")
    expected = _reference([tmp_path], settings)
    assert {d.code for d in expected} == BREAKS
    added = runner.run([str(tmp_path)], settings, jobs=1)
    assert added.cached == 1 and added.diagnostics == expected

    def must_not_lint(*args, **kwargs):
        raise AssertionError("a warm run must not lint")

    monkeypatch.setattr(runner, "lint_bytes", must_not_lint)
    warm = runner.run([str(tmp_path)], settings, jobs=1)
    assert warm.cached == 2 and warm.diagnostics == expected


def test_the_second_pass_lints_only_the_files_a_compile_reaches(tmp_path, monkeypatch):
    """A file reached by a compile that the runner's guess (before the lint) missed: here the
    compile follows a quote on its line, so the guess takes it for a string."""
    from regcomp_lint.lint import runner
    from regcomp_lint.lint.engine import lint_bytes

    write(tmp_path, "model.py", PLAIN_MODULE)
    write(tmp_path, "other.py", PLAIN_MODULE)
    write(tmp_path, "train.py", "import torch\nfrom model import M\nquote = '\"'; m = torch.compile(M())\n")
    seen = []

    def recording_lint(data, filename, enabled, defer=None):
        seen.append((Path(filename).name, bool(enabled & BREAKS)))
        return lint_bytes(data, filename, enabled, defer)

    monkeypatch.setattr(runner, "lint_bytes", recording_lint)
    result = runner.run([str(tmp_path)], Settings(root=str(tmp_path)), jobs=1, use_cache=False)
    assert {(Path(d.filename).name, d.code) for d in result.diagnostics} == {("model.py", c) for c in BREAKS}
    assert sorted(seen) == [("model.py", True), ("model.py", True), ("other.py", True), ("train.py", True)]


def test_files_guessed_reached_are_linted_whole_once(tmp_path, monkeypatch):
    """The runner guesses from the bytes which files a compile reaches and lints those whole in
    the first pass (no second parse); the others put their scoped rules off as before."""
    from regcomp_lint.lint import runner
    from regcomp_lint.lint.engine import lint_bytes

    write(tmp_path, "model.py", PLAIN_MODULE)
    write(tmp_path, "other.py", PLAIN_MODULE)
    write(tmp_path, "train.py", "import torch\nfrom model import M\nm = torch.compile(M())\n")
    seen = []

    def recording_lint(data, filename, enabled, defer=None):
        found = lint_bytes(data, filename, enabled, defer)
        seen.append((Path(filename).name, bool(defer is not None and defer.pending)))
        return found

    monkeypatch.setattr(runner, "lint_bytes", recording_lint)
    settings = Settings(root=str(tmp_path))
    result = runner.run([str(tmp_path)], settings, jobs=1, use_cache=False)
    assert sorted(seen) == [("model.py", False), ("other.py", True), ("train.py", False)]  # (file, rules put off)
    assert result.diagnostics == _reference([tmp_path], settings)


def test_a_wrong_guess_changes_no_finding(tmp_path):
    """Guessed reached but not (the import is in a string), or reached but not guessed (an
    import after ``;``): the findings are those of one pass over every file."""
    write(tmp_path, "model.py", PLAIN_MODULE)
    write(tmp_path, "unreached.py", PLAIN_MODULE)
    write(tmp_path, "hidden.py", PLAIN_MODULE)
    write(
        tmp_path,
        "train.py",
        'import torch\nNOTE = """\nfrom unreached import M\n"""\nx = 1; from hidden import M\nm = torch.compile(M())\n',
    )
    settings = Settings(root=str(tmp_path))
    expected = _reference([tmp_path], settings)
    assert {Path(d.filename).name for d in expected} == {"hidden.py"}
    assert lint_paths([str(tmp_path)], settings, use_cache=False) == expected


def test_guessed_imports_and_compiles_follow_the_parse_on_plain_code():
    from regcomp_lint.analysis.compiled_scope import guessed_compiles, guessed_imports

    source = textwrap.dedent(
        """
        import os, torch.nn as nn
        from . import layers
        from ..pkg.mod import (  # the blocks
            Block as B,
            Head,
        )
        from .ops import \\
            scale
        if True:
            import numpy  # a comment: import nothing
        m = torch.compile(model)
        """
    )
    import ast

    assert set(guessed_imports(source.encode())) == set(imported_names(ast.parse(source)))
    assert guessed_compiles(source.encode()) and compiles(source)
    for not_code in ("# torch.compile(m)\n", 'x = "use torch.compile(m)"\n', '"""\ntorch.compile(m)\n"""\n'):
        assert not guessed_compiles(not_code.encode())
