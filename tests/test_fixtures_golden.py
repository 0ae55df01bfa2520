"""Golden tests over the hand-written training scripts in ``fixtures/lint/``.

Each ``fixtures/lint/<name>.py`` is linted through the library API with default settings and its
findings, rendered one per line as ``<name>.py:ROW:COL: CODE message`` (sorted), must equal
``fixtures/lint/<name>.expected`` (an empty file for a script with no findings).

Regenerate the golden files after an intended change, then review the diff by eye::

    REGCOMP_UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/test_fixtures_golden.py

A regenerated golden file cannot bless a broken rule on its own: the *intent* tests below hold
independently of exact messages:

- ``rcNNN_*.py`` must produce at least one RCNNN finding; ``rcNNN_negative_*.py`` must produce
  none of RCNNN; no fixture but ``rc001_*`` may produce RC001 (the fixtures are valid Python);
- whole scripts (not named for one rule) produce exactly the set of codes in ``SCRIPT_CODES``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from regcomp_lint.api import lint_source
from regcomp_lint.checks import ALL_RULES
from regcomp_lint.lint.config import Settings

FIXTURE_DIR = Path(__file__).resolve().parent.parent / "fixtures" / "lint"
FIXTURES = sorted(FIXTURE_DIR.glob("*.py"))
UPDATE = os.environ.get("REGCOMP_UPDATE_GOLDEN", "") not in ("", "0")
RULE_NAME = re.compile(r"^rc(\d{3})_")

#: Every rule needs a positive and a negative fixture: a new rule without them fails here (a rule
#: that reads settings files only has its fixtures in fixtures/settings: test_settings_golden.py).
EVERY_RULE = tuple(code for code, rule in ALL_RULES.items() if rule.invalid)

#: Fixtures that are whole scripts rather than one rule's example: the exact set of codes found.
SCRIPT_CODES: dict[str, set[str]] = {
    "nanogpt_train": {"RC501"},
    "nlp_example": {"RC501"},
    "aliased_imports": {"RC101", "RC102", "RC103", "RC104", "RC105", "RC106", "RC107"},
    "clean_regional_training": set(),
    "suppressions_in_use": set(),
}


def lint_fixture(path: Path):
    return lint_source(path.read_bytes(), path.name, Settings())


def render(path: Path, diagnostics=None) -> str:
    diagnostics = sorted(
        lint_fixture(path) if diagnostics is None else diagnostics,
        key=lambda d: (d.location.row, d.location.column, d.code, d.message),
    )
    return "".join(f"{path.name}:{d.location.row}:{d.location.column}: {d.code} {d.message}\n" for d in diagnostics)


def fixture_ids(paths):
    return [p.stem for p in paths]


def test_enough_fixtures():
    assert len(FIXTURES) >= 25, [p.name for p in FIXTURES]


@pytest.mark.parametrize("code", EVERY_RULE)
def test_every_rule_has_positive_and_negative_fixture(code):
    prefix = code.lower() + "_"
    names = [p.stem for p in FIXTURES if p.stem.startswith(prefix)]
    assert any("negative" not in n for n in names), f"no positive fixture for {code}"
    assert any("negative" in n for n in names), f"no negative fixture for {code}"


@pytest.mark.parametrize("path", FIXTURES, ids=fixture_ids(FIXTURES))
def test_fixture_starts_with_one_line_purpose(path):
    first = path.read_text(encoding="utf-8").splitlines()[0]
    assert first.startswith("# ") and len(first) > 10, f"{path.name}: first line must say what it demonstrates"


@pytest.mark.parametrize("path", FIXTURES, ids=fixture_ids(FIXTURES))
def test_fixture_is_claimed(path):
    """Every fixture is either named for a rule or listed in SCRIPT_CODES (so it has an intent)."""
    match = RULE_NAME.match(path.stem)
    if match:
        assert f"RC{match.group(1)}" in ALL_RULES, path.name
    else:
        assert path.stem in SCRIPT_CODES, f"{path.name}: name it rcNNN_... or add it to SCRIPT_CODES"


@pytest.mark.parametrize("path", FIXTURES, ids=fixture_ids(FIXTURES))
def test_golden_output(path):
    expected_path = path.with_suffix(".expected")
    actual = render(path)
    if UPDATE:
        if not expected_path.exists() or expected_path.read_text(encoding="utf-8") != actual:
            expected_path.write_text(actual, encoding="utf-8")
        return
    assert expected_path.exists(), f"missing {expected_path.name}; run with REGCOMP_UPDATE_GOLDEN=1 and review it"
    expected = expected_path.read_text(encoding="utf-8")
    assert actual.splitlines() == expected.splitlines(), (
        f"{path.name}: findings differ from {expected_path.name}; if intended, regenerate with "
        "REGCOMP_UPDATE_GOLDEN=1 and review the diff"
    )


@pytest.mark.parametrize("path", FIXTURES, ids=fixture_ids(FIXTURES))
def test_fixture_intent(path):
    codes = [d.code for d in lint_fixture(path)]
    match = RULE_NAME.match(path.stem)
    if match:
        code = f"RC{match.group(1)}"
        assert code in ALL_RULES, f"{path.name}: rule {code} is not registered in regcomp_lint.checks"
        if "negative" in path.stem:
            assert code not in codes, f"{path.name}: false positive {code}: {codes}"
        else:
            assert code in codes, f"{path.name}: {code} did not fire (found {codes})"
    else:
        assert set(codes) == SCRIPT_CODES[path.stem], f"{path.name}: codes {sorted(set(codes))}"
    if not path.stem.startswith("rc001_"):
        assert "RC001" not in codes, f"{path.name} must be valid Python"


#: Fixtures that import each other (RC2xx across files): linted by their real path, since where
#: a file is decides what its imports find; kept out of fixtures/lint (whose files are linted
#: by bare name too, and must give the same results there).
CROSS_FILE = sorted((FIXTURE_DIR.parent / "cross_file").glob("*.py"))


@pytest.mark.parametrize("path", CROSS_FILE, ids=fixture_ids(CROSS_FILE))
def test_cross_file_golden_output(path):
    expected_path = path.with_suffix(".expected")
    actual = render(path, lint_source(path.read_bytes(), str(path), Settings()))
    if UPDATE:
        if not expected_path.exists() or expected_path.read_text(encoding="utf-8") != actual:
            expected_path.write_text(actual, encoding="utf-8")
        return
    assert expected_path.exists(), f"missing {expected_path.name}; run with REGCOMP_UPDATE_GOLDEN=1 and review it"
    assert actual.splitlines() == expected_path.read_text(encoding="utf-8").splitlines()


def test_cross_file_fixtures_report_the_helpers_break_at_the_call_only():
    codes = {p.stem: [d.code for d in lint_source(p.read_bytes(), str(p), Settings())] for p in CROSS_FILE}
    assert codes == {
        "rc203_helpers_module": [],
        "rc203_print_in_imported_helper": ["RC203"],
        "rc501_nanogpt_model": [],
        "rc501_nanogpt_train": ["RC501"],  # the model class is judged in its own file
    }


def test_no_orphan_golden_files():
    orphans = [p.name for p in FIXTURE_DIR.glob("*.expected") if not p.with_suffix(".py").exists()]
    assert not orphans, f"golden files without a fixture: {orphans}"


def test_golden_line_format():
    """The golden files are concise-format lines naming their own fixture, sorted by position."""
    line_re = re.compile(r"^(?P<file>[\w.]+\.py):(?P<row>\d+):(?P<col>\d+): (?P<code>RC\d{3}) \S")
    for expected_path in sorted(FIXTURE_DIR.glob("*.expected")):
        keys = []
        for line in expected_path.read_text(encoding="utf-8").splitlines():
            m = line_re.match(line)
            assert m, f"{expected_path.name}: bad line {line!r}"
            assert m["file"] == expected_path.with_suffix(".py").name
            keys.append((int(m["row"]), int(m["col"]), m["code"]))
        assert keys == sorted(keys), f"{expected_path.name} is not sorted"


def test_bundled_example_shows_findings():
    """``scripts/demo.sh`` lints ``examples/train_gpt.py``; it must keep showing these findings."""
    example = FIXTURE_DIR.parent.parent / "examples" / "train_gpt.py"
    codes = {d.code for d in lint_source(example.read_bytes(), "examples/train_gpt.py", Settings())}
    assert codes == {"RC102", "RC105", "RC107", "RC402", "RC501"}, sorted(codes)


def test_cli_concise_output_matches_golden_files(tmp_path):
    """End to end: ``regcomp-lint --format concise`` prints exactly the golden lines."""
    import subprocess
    import sys

    root = FIXTURE_DIR.parent.parent
    if not (root / "regcomp_lint" / "__main__.py").exists():
        pytest.skip("no `python -m regcomp_lint` entry point yet")
    if UPDATE:
        pytest.skip("golden files are being regenerated")
    config = tmp_path / "pyproject.toml"  # default settings, like the API calls above
    # RC2xx/RC3xx named, so they report outside compiled files too, as lint_source does
    config.write_text('[tool.regcomp-lint]\nextend-select = ["RC2", "RC3"]\n', encoding="utf-8")
    names = [p.name for p in FIXTURES]
    env = dict(os.environ, NO_COLOR="1")
    proc = subprocess.run(
        [sys.executable, "-m", "regcomp_lint", "--config", str(config), "--no-cache", "--format", "concise", *names],
        cwd=FIXTURE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 1, proc.stderr
    finding = re.compile(r"^[\w.]+\.py:\d+:\d+: RC\d{3} ")
    # the severity tag (checked against the rule's own), ruff's marker of a safe fix, the unsafe-fix note
    tagged = re.compile(r"^(\S+ (RC\d{3})) \[(\w+)\] (?:\[\*\] )?(.*?)(?: \(fixable with --unsafe-fixes\))?$")
    printed = []
    for line in proc.stdout.splitlines():
        if finding.match(line):
            match = tagged.match(line)
            assert match and match.group(3) == ALL_RULES[match.group(2)].severity.value, line
            printed.append(f"{match.group(1)} {match.group(4)}")
    printed.sort()
    golden = sorted(
        line for p in FIXTURES for line in p.with_suffix(".expected").read_text(encoding="utf-8").splitlines()
    )
    assert printed == golden
