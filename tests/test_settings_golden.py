"""Golden tests over the settings files in ``fixtures/settings/``: accelerate config YAML,
launch scripts, Makefiles, Dockerfiles, CI workflows, ``.env`` and HfArgumentParser JSON.

Each ``<name>`` is linted by its real path (RC406 reads the script a launch command starts,
beside it) and its findings, one ``<name>:ROW:COL: CODE message`` line each, must equal
``<name>.expected``; where the fixes (unsafe ones included) change the file, the result must
equal ``<name>.fixed``, which must still parse and keep every comment. Regenerate with
``REGCOMP_UPDATE_GOLDEN=1`` and review the diff.

Intent, independent of messages: ``rcNNN_*`` gives at least one RCNNN, ``rcNNN_negative_*`` none.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from regcomp_lint.analysis.compile_settings import hash_comments, parses_as
from regcomp_lint.api import lint_source
from regcomp_lint.checks import ALL_RULES
from regcomp_lint.files.kinds import Kind, kind_of
from regcomp_lint.lint.config import Settings
from regcomp_lint.lint.fixes import fix_source

FIXTURE_DIR = Path(__file__).resolve().parent.parent / "fixtures" / "settings"
GOLDEN_SUFFIXES = (".expected", ".fixed")
FIXTURES = sorted(p for p in FIXTURE_DIR.iterdir() if p.suffix not in GOLDEN_SUFFIXES and p.suffix != ".py")
UPDATE = os.environ.get("REGCOMP_UPDATE_GOLDEN", "") not in ("", "0")
RULE_NAME = re.compile(r"^rc(\d{3})_")
IDS = [p.name for p in FIXTURES]


def lint_fixture(path: Path):
    return lint_source(path.read_bytes(), str(path), Settings())


def render(path: Path) -> str:
    found = sorted(lint_fixture(path), key=lambda d: (d.location.row, d.location.column, d.code, d.message))
    return "".join(f"{path.name}:{d.location.row}:{d.location.column}: {d.code} {d.message}\n" for d in found)


def check_golden(golden: Path, actual: str | None) -> None:
    if UPDATE:
        if actual is None:
            golden.unlink(missing_ok=True)
        elif not golden.exists() or golden.read_text(encoding="utf-8") != actual:
            golden.write_text(actual, encoding="utf-8")
        return
    if actual is None:
        assert not golden.exists(), f"{golden.name}: no fix applies any more; regenerate"
        return
    assert golden.exists(), f"missing {golden.name}; run with REGCOMP_UPDATE_GOLDEN=1 and review it"
    assert actual.splitlines() == golden.read_text(encoding="utf-8").splitlines(), golden.name


def test_every_source_has_a_fixture():
    kinds = {kind_of(p.name) for p in FIXTURES}
    assert kinds >= {Kind.YAML, Kind.JSON, Kind.SHELL, Kind.MAKEFILE, Kind.DOCKERFILE, Kind.DOTENV}, kinds


def test_every_settings_rule_has_positive_and_negative_fixture():
    for code, rule in ALL_RULES.items():
        if rule.reads_settings() and not rule.invalid:  # settings-only rules live here alone
            names = [p.name for p in FIXTURES if p.name.startswith(code.lower() + "_")]
            assert any("negative" not in n for n in names), f"no positive settings fixture for {code}"
            assert any("negative" in n for n in names), f"no negative settings fixture for {code}"


@pytest.mark.parametrize("path", FIXTURES, ids=IDS)
def test_golden_output(path):
    check_golden(path.with_name(path.name + ".expected"), render(path))


@pytest.mark.parametrize("path", FIXTURES, ids=IDS)
def test_golden_fix(path):
    text = path.read_text(encoding="utf-8")
    fixed, _ = fix_source(text, str(path), Settings(), unsafe=True)
    check_golden(path.with_name(path.name + ".fixed"), fixed if fixed != text else None)
    if fixed != text:
        kind = kind_of(path.name)
        assert parses_as(fixed, kind)
        before = [c for _, _, c in hash_comments(text.splitlines())]
        after = [c for _, _, c in hash_comments(fixed.splitlines())]
        assert before == after, "a fix lost or changed a comment"


@pytest.mark.parametrize("path", FIXTURES, ids=IDS)
def test_fixture_intent(path):
    codes = [d.code for d in lint_fixture(path)]
    assert "RC001" not in codes
    match = RULE_NAME.match(path.name)
    assert match, f"{path.name}: name it rcNNN_..."
    code = f"RC{match.group(1)}"
    if "negative" in path.name:
        assert code not in codes, codes
    else:
        assert code in codes, codes


@pytest.mark.parametrize("path", FIXTURES, ids=IDS)
def test_fixture_says_what_it_shows(path):
    if kind_of(path.name) is Kind.JSON:  # no comments in JSON
        return
    first = path.read_text(encoding="utf-8").splitlines()[0]
    assert first.startswith("# ") and len(first) > 10


def test_no_orphan_golden_files():
    orphans = [p.name for p in FIXTURE_DIR.iterdir() if p.suffix in GOLDEN_SUFFIXES and not p.with_suffix("").exists()]
    assert not orphans
