"""The pre-commit hook this repository publishes (``.pre-commit-hooks.yaml``).

``pre-commit run`` with a config that names this repository at a revision installs the hook
exactly as a user's pre-commit would (a fresh virtualenv, ``pip install`` of this project) and
runs it on a temporary git repository: it must fail on a file with a finding and show it, then
pass once the file is fixed.

pre-commit clones the hook repository at a commit, so the test copies the installable part of the
working tree (pyproject, README, package, hooks file) into a fresh repository and commits it: what
is tested is the working tree, committed or not. (Not ``try-repo``: it installs the hook
environment afresh on every call, in a store of its own, a minute each on CI's 2 cores.)
Needs git and PyPI (for the hook's dependencies); ``PRE_COMMIT_HOME`` is a temporary folder.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
HOOKS_FILE = ROOT / ".pre-commit-hooks.yaml"
PRE_COMMIT = [sys.executable, "-m", "pre_commit"]

CLEAN = """\
import torch

model = torch.compile(torch.nn.Linear(4, 4), mode="reduce-overhead")
"""

BAD = """\
import torch
import torch._dynamo

torch._dynamo.config.suppress_errors = True
model = torch.compile(torch.nn.Linear(4, 4))
"""

FIXED = """\
import torch

model = torch.compile(torch.nn.Linear(4, 4))
"""


def git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True)


def init_repo(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True)
    git("init", "-q", cwd=path)
    git("config", "user.email", "tests@regcomp-lint.invalid", cwd=path)
    git("config", "user.name", "regcomp-lint tests", cwd=path)
    git("config", "commit.gpgsign", "false", cwd=path)


def copy_hook_repo(dest: Path) -> Path:
    """The installable part of the working tree, committed in a new repository."""
    init_repo(dest)
    for name in (
        "pyproject.toml",
        "README.md",
        "LICENSE",
        "setup.cfg",
        "setup.py",
        "MANIFEST.in",
        ".pre-commit-hooks.yaml",
    ):
        if (ROOT / name).exists():
            shutil.copy2(ROOT / name, dest / name)
    shutil.copytree(ROOT / "regcomp_lint", dest / "regcomp_lint", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    git("add", "-A", cwd=dest)
    git("commit", "-q", "-m", "hook under test", cwd=dest)
    return dest


def run_hook(hook_id: str, cwd: Path, hook_repo: Path, home: Path) -> subprocess.CompletedProcess:
    """``pre-commit run <hook_id> --all-files`` in ``cwd`` with every hook of ``hook_repo`` configured.

    The config lives outside the project (pre-commit would lint it, and refuses an unstaged one);
    the environment is kept in ``home`` and reused by every later call at the same revision."""
    revision = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=hook_repo, check=True, capture_output=True, text=True
    ).stdout.strip()
    hooks = "".join(f"    - id: {h['id']}\n" for h in yaml.safe_load(HOOKS_FILE.read_text(encoding="utf-8")))
    config = home.parent / "pre-commit-config.yaml"
    config.write_text(f"repos:\n  - repo: {hook_repo}\n    rev: {revision}\n    hooks:\n{hooks}", encoding="utf-8")
    env = dict(os.environ)
    env.update(
        PRE_COMMIT_HOME=str(home),
        PRE_COMMIT_COLOR="never",
        NO_COLOR="1",
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        # the hook's virtualenv gets the same pinned versions as the tests
        PIP_CONSTRAINT=str(ROOT / "constraints.txt") if (ROOT / "constraints.txt").exists() else "",
    )
    if not env["PIP_CONSTRAINT"]:
        del env["PIP_CONSTRAINT"]
    command = [*PRE_COMMIT, "run", "--config", str(config), hook_id, "--all-files"]
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)


def hooks_by_id() -> dict[str, dict]:
    return {h["id"]: h for h in yaml.safe_load(HOOKS_FILE.read_text(encoding="utf-8"))}


#: The identify tags the lint hooks take: Python and the formats compile settings live in.
LINT_TYPES = ["python", "pyi", "yaml", "json", "shell", "makefile", "dockerfile"]


def test_lint_hook_types_are_the_kinds_the_lint_reads():
    """Every tagged name pre-commit would pass is one the lint reads as Python or as settings."""
    from identify import identify

    from regcomp_lint.files.kinds import Kind, kind_by_name

    samples = ["a.py", "a.pyi", "c.yaml", "c.yml", "a.json", "run.sh", "run.bash", "Makefile", "x.mk", "Dockerfile"]
    for name in samples:
        assert identify.tags_from_filename(name) & set(LINT_TYPES), name
        assert kind_by_name(name) is not None, name
    assert kind_by_name("Containerfile") is Kind.DOCKERFILE
    assert kind_by_name("GNUmakefile") is Kind.MAKEFILE


def test_hooks_file_declares_regcomp_lint():
    hooks = yaml.safe_load(HOOKS_FILE.read_text(encoding="utf-8"))
    assert [h["id"] for h in hooks] == ["regcomp-lint", "regcomp-lint-fix", "regcomp-fix"]
    hook = hooks[0]
    assert hook["entry"] == "regcomp-lint"
    assert hook["language"] == "python"
    assert hook["types_or"] == LINT_TYPES
    assert hook["require_serial"] is True  # the tool runs its own process pool
    assert "files" not in hook and "pass_filenames" not in hook


def test_hooks_file_declares_the_safe_fixes_alone():
    hook = hooks_by_id()["regcomp-lint-fix"]
    assert hook["entry"] == "regcomp-lint --fix"  # the lint's safe fixes: no conversion, nothing unsafe
    assert hook["language"] == "python" and hook["types_or"] == LINT_TYPES
    assert hook["require_serial"] is True
    assert "files" not in hook and "pass_filenames" not in hook
    assert len({h["name"] for h in hooks_by_id().values()}) == 3  # told apart in pre-commit's output


def test_hooks_file_declares_regcomp_fix():
    hook = hooks_by_id()["regcomp-fix"]
    # writes safe fixes, and fails the commit when it changed a file
    assert hook["entry"] == "regcomp-fix --apply --exit-non-zero-on-fix"
    assert "--unsafe-fixes" not in hook["entry"]
    assert hook["language"] == "python"
    assert hook["types_or"] == ["python", "pyi"]
    assert "files" not in hook and "pass_filenames" not in hook


def test_hooks_file_is_a_valid_manifest():
    proc = subprocess.run(
        [*PRE_COMMIT, "validate-manifest", str(HOOKS_FILE)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_entry_is_a_console_script():
    import tomllib

    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["scripts"]
    hooks = yaml.safe_load(HOOKS_FILE.read_text(encoding="utf-8"))
    for hook in hooks:
        assert hook["entry"].split()[0] in scripts


NOQA = "x = 1  # noqa: RC107\n"  # RC002: a suppression that silences nothing, with a safe fix

TRAIN = """\
import torch

model = torch.nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(10):
    loss = model(torch.randn(8, 4)).pow(2).mean()  # keep me
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
"""


@pytest.fixture(scope="module")
def hook_store(tmp_path_factory):
    """One hook repository and one PRE_COMMIT_HOME for every test of this module: pre-commit keys a
    hook environment by repository and revision, so it is built once and every later run reuses it."""
    if shutil.which("git") is None:
        pytest.skip("pre-commit needs git")
    root = tmp_path_factory.mktemp("pre-commit")
    return copy_hook_repo(root / "hook-repo"), root / "pre-commit-home"


def test_hooks_fail_on_finding_then_pass(tmp_path, hook_store):
    """Every hook of the repository through one hook environment."""
    hook_repo, home = hook_store
    project = tmp_path / "project"
    init_repo(project)
    (project / "clean.py").write_text(CLEAN, encoding="utf-8")
    (project / "bad.py").write_text(BAD, encoding="utf-8")
    (project / "notes.txt").write_text("suppress_errors = True\n", encoding="utf-8")  # not Python: not linted
    git("add", "-A", cwd=project)
    git("commit", "-q", "-m", "initial", cwd=project)

    failing = run_hook("regcomp-lint", project, hook_repo, home)
    output = failing.stdout + failing.stderr
    assert failing.returncode == 1, output
    assert "regcomp-lint" in output and "Failed" in output, output
    assert "bad.py:4:1: RC107" in output, output
    assert "clean.py:" not in output, output  # the clean file has no finding
    assert "notes.txt" not in output, output

    (project / "bad.py").write_text(FIXED, encoding="utf-8")
    git("add", "-A", cwd=project)
    passing = run_hook("regcomp-lint", project, hook_repo, home)
    output = passing.stdout + passing.stderr
    assert passing.returncode == 0, output
    assert "Passed" in output and "RC107" not in output, output

    # regcomp-fix: converts the training script, fails because it changed a file, then passes
    (project / "train.py").write_text(TRAIN, encoding="utf-8")
    git("add", "-A", cwd=project)
    fixing = run_hook("regcomp-fix", project, hook_repo, home)
    output = fixing.stdout + fixing.stderr
    assert fixing.returncode == 1, output
    assert "regcomp-fix" in output and "Failed" in output, output
    assert "Fixed train.py (converted to Accelerate + TorchDynamoPlugin)" in output, output
    converted = (project / "train.py").read_text(encoding="utf-8")
    assert "accelerator.backward(loss)" in converted and "# keep me" in converted
    assert (project / "clean.py").read_text(encoding="utf-8") == CLEAN  # not a training script: untouched

    git("add", "-A", cwd=project)
    again = run_hook("regcomp-fix", project, hook_repo, home)
    output = again.stdout + again.stderr
    assert again.returncode == 0, output
    assert "Passed" in output, output
    assert (project / "train.py").read_text(encoding="utf-8") == converted


def test_safe_fixes_hook_and_conversion_opt_out(tmp_path, hook_store):
    """regcomp-lint-fix applies safe fixes only (no conversion); regcomp-fix fails on a refused
    script and passes once the script opts out with a comment or fix-exclude."""
    hook_repo, home = hook_store
    project = tmp_path / "project"
    init_repo(project)
    (project / "noqa.py").write_text(NOQA, encoding="utf-8")
    (project / "train.py").write_text(TRAIN, encoding="utf-8")
    git("add", "-A", cwd=project)
    git("commit", "-q", "-m", "initial", cwd=project)

    fixing = run_hook("regcomp-lint-fix", project, hook_repo, home)
    output = fixing.stdout + fixing.stderr
    assert fixing.returncode == 1, output
    assert "regcomp-lint (safe fixes)" in output and "files were modified by this hook" in output, output
    assert (project / "noqa.py").read_text(encoding="utf-8") == "x = 1\n"
    assert (project / "train.py").read_text(encoding="utf-8") == TRAIN  # never converted by this hook
    git("add", "-A", cwd=project)
    again = run_hook("regcomp-lint-fix", project, hook_repo, home)
    assert again.returncode == 0, again.stdout + again.stderr

    spawn = "import torch.multiprocessing as mp\n\n\ndef worker(rank):\n    pass\n\n\nmp.spawn(worker, nprocs=2)\n"
    (project / "spawn.py").write_text(TRAIN + spawn, encoding="utf-8")
    (project / "train.py").unlink()
    git("add", "-A", cwd=project)
    refused = run_hook("regcomp-fix", project, hook_repo, home)
    output = refused.stdout + refused.stderr
    assert refused.returncode == 1, output
    assert "exit code: 3" in output and "spawn.py: not converted" in output, output

    (project / "spawn.py").write_text("# regcomp-fix: skip\n" + TRAIN + spawn, encoding="utf-8")
    git("add", "-A", cwd=project)
    skipped = run_hook("regcomp-fix", project, hook_repo, home)
    assert skipped.returncode == 0, skipped.stdout + skipped.stderr

    (project / "spawn.py").write_text(TRAIN + spawn, encoding="utf-8")
    (project / "pyproject.toml").write_text('[tool.regcomp-lint]\nfix-exclude = ["spawn.py"]\n', encoding="utf-8")
    git("add", "-A", cwd=project)
    excluded = run_hook("regcomp-fix", project, hook_repo, home)
    assert excluded.returncode == 0, excluded.stdout + excluded.stderr
    assert (project / "spawn.py").read_text(encoding="utf-8") == TRAIN + spawn
