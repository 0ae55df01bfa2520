"""``scripts/new_rule.py`` scaffolds a rule that passes every test a rule must pass.

It runs against a copy of the repository in a temporary folder (the real tree is never
touched); then the real tests that every rule meets (examples, metadata, pages, fixtures and
goldens) run in that copy, with the copy's package first on ``PYTHONPATH``.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree

import pytest

ROOT = Path(__file__).resolve().parent.parent
COPIED = ("regcomp_lint", "rules", "README.md", "pyproject.toml", "scripts", "fixtures/lint", "tests")
CODE, NAME = "RC599", "scaffolded-example"
MODULE = "rc599_scaffolded_example"


def copy_repository(dest: Path) -> Path:
    for name in COPIED:
        source, target = ROOT / name, dest / name
        if source.is_dir():
            shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    return dest


def run(repo: Path, *args: str, timeout: int = 300) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(repo), NO_COLOR="1")
    return subprocess.run([sys.executable, *args], cwd=repo, env=env, capture_output=True, text=True, timeout=timeout)


def tree(repo: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(repo)): p.read_bytes()
        for p in sorted(repo.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    }


@pytest.fixture(scope="module")
def scaffolded(tmp_path_factory) -> Path:
    repo = copy_repository(tmp_path_factory.mktemp("repo"))
    proc = run(repo, "scripts/new_rule.py", CODE, NAME, "Reports a call of the scaffold's placeholder function.")
    assert proc.returncode == 0, proc.stderr
    return repo


def test_scaffold_writes_the_rule_fixtures_goldens_and_pages(scaffolded):
    assert (scaffolded / "regcomp_lint" / "checks" / f"{MODULE}.py").is_file()
    fixtures = scaffolded / "fixtures" / "lint"
    positive = (fixtures / f"{MODULE}.expected").read_text(encoding="utf-8")
    assert positive.startswith(f"{MODULE}.py:2:1: {CODE} ")
    assert (fixtures / "rc599_negative_scaffolded_example.expected").read_text(encoding="utf-8") == ""
    assert (scaffolded / "rules" / f"{CODE}.md").read_text(encoding="utf-8").startswith(f"# {CODE} {NAME}\n")
    assert f"[{CODE}](rules/{CODE}.md)" in (scaffolded / "README.md").read_text(encoding="utf-8")
    assert not (ROOT / "regcomp_lint" / "checks" / f"{MODULE}.py").exists()


def test_the_copy_is_what_the_subprocesses_import(scaffolded):
    proc = run(scaffolded, "-c", "import regcomp_lint; print(regcomp_lint.__file__)")
    assert Path(proc.stdout.strip()).is_relative_to(scaffolded), proc.stdout


def test_rule_pages_are_up_to_date_after_the_scaffold(scaffolded):
    proc = run(scaffolded, "-m", "regcomp_lint.lint.rule_docs", "--check")
    assert proc.returncode == 0, proc.stderr


def test_scaffolded_rule_passes_the_tests_every_rule_must_pass(scaffolded, tmp_path):
    report = tmp_path / "report.xml"
    proc = run(
        scaffolded,
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        f"--junitxml={report}",
        "tests/checks/test_rule_examples.py",
        "tests/test_docs.py",
        "tests/test_fixtures_golden.py",
        "-k",
        f"{CODE} or {CODE.lower()}",
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    cases = [case.get("name", "") for case in ElementTree.parse(report).iter("testcase")]
    # examples: 2 valid + 1 invalid + metadata; docs: the page; fixtures: the pair, then purpose,
    # claim, golden and intent of each fixture. Counted so the new rule cannot be filtered away.
    assert len(cases) == 14, cases
    assert all(CODE in name or CODE.lower() in name for name in cases), cases


def test_scaffolded_rule_is_clean_under_ruff(scaffolded):
    rule = f"regcomp_lint/checks/{MODULE}.py"
    assert run(scaffolded, "-m", "ruff", "check", "--no-cache", rule).returncode == 0
    assert run(scaffolded, "-m", "ruff", "format", "--no-cache", "--check", rule).returncode == 0


def load_script():
    spec = importlib.util.spec_from_file_location("new_rule_script", ROOT / "scripts" / "new_rule.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    "summary",
    [
        "Reports a call of `thing()`.",
        "Reports `torch.compile(model, mode='max-autotune')` given \"options\" too.",
        'Reports a "quoted" call.',
        "Reports a summary long enough to need parentheses around the message string, and only a little longer. Really.",
        "Reports " + "a very long summary that goes on and on " * 6 + "until it wraps.",
    ],
)
def test_rendered_rule_is_formatted_as_ruff_formats_it(summary):
    text = load_script().render_rule("RC598", "some-rule", summary)
    ast.parse(text)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "ruff",
            "format",
            "--no-cache",
            "--check",
            "--stdin-filename",
            "rc598_some_rule.py",
            "-",
        ],
        cwd=ROOT,
        input=text,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize(
    "code,name,why",
    [
        ("RC107", "brand-new-name", "RC107 suppress-errors already exists"),
        ("RC598", "suppress-errors", "RC107 suppress-errors already exists"),
        (CODE, "another-name", f"{CODE} {NAME} already exists"),
        ("RC601", "brand-new-name", "is not a rule code"),
        ("RC100", "brand-new-name", "is not a rule code"),
        ("RC1234", "brand-new-name", "is not a rule code"),
        ("XX101", "brand-new-name", "is not a rule code"),
        ("RC598", "Bad_Name", "is not a kebab-case name"),
        ("RC598", "trailing-", "is not a kebab-case name"),
    ],
)
def test_refuses_without_writing_anything(scaffolded, code, name, why):
    before = tree(scaffolded)
    proc = run(scaffolded, "scripts/new_rule.py", code, name, "Reports something.")
    assert proc.returncode == 2
    assert why in proc.stderr
    assert tree(scaffolded) == before
