"""Claims the RC0xx pages make about the linter itself (issue 13's re-read)."""

from __future__ import annotations

import sys

import pytest

from regcomp_lint import lint_paths
from regcomp_lint.checks import ALL_RULES


def codes(tmp_path, name: str, text: str) -> list[str]:
    path = tmp_path / name
    path.write_text(text)
    return [d.code for d in lint_paths([str(path)])]


def test_rc001_python_is_read_with_the_running_interpreters_grammar(tmp_path):
    assert codes(tmp_path, "match.py", "match x:\n    case 1:\n        pass\n") == []
    expected = [] if sys.version_info >= (3, 12) else ["RC001"]
    assert codes(tmp_path, "alias.py", "type Alias = int\n") == expected
    assert "grammar of the Python that runs the linter" in " ".join(ALL_RULES["RC001"].docs().split())


@pytest.mark.parametrize(
    ("name", "text"),
    [("accelerate_config.yaml", "dynamo_config:\n\tdynamo_backend: x\n"), ("broken.py", "def f(:\n")],
)
def test_rc001_covers_settings_files_as_well_as_python(tmp_path, name, text):
    assert codes(tmp_path, name, text) == ["RC001"]
