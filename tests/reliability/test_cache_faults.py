"""The cache through the real CLI: damage never changes results, never crashes, and is repaired;
two ``regcomp-lint`` processes at once on one tree agree and leave a valid cache."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from tests.reliability._helpers import assert_no_traceback, command, env, run

FILES = {
    "train.py": "import torch\nmodel = torch.compile(torch.nn.Linear(2, 2), backend='indcutor')\n",
    "clean.py": "x = 1\n",
    "broken.py": "def f(:\n",
    "cfg.py": "import torch._dynamo\ntorch._dynamo.config.suppress_errors = True\n",
}


@pytest.fixture
def project(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.regcomp-lint]\n")
    for i in range(30):
        for name, text in FILES.items():
            (tmp_path / f"pkg{i}").mkdir(exist_ok=True)
            (tmp_path / f"pkg{i}" / name).write_text(text)
    return tmp_path


def lint(project, *extra, cache_dir=None):
    extra_env = {"REGCOMP_CACHE_DIR": str(cache_dir)} if cache_dir else {}
    proc = run("regcomp-lint", "--format", "json", *extra, ".", cwd=project, extra_env=extra_env)
    assert_no_traceback(proc)
    return proc


def cache_files(folder):
    return sorted(folder.glob("lint-*.json"))


@pytest.mark.parametrize("damage", ["truncated", "garbage", "not-json-object", "directory"])
def test_damaged_cache_changes_nothing_and_is_rebuilt(project, damage):
    expected = lint(project, "--no-cache")
    cold = lint(project)
    assert (cold.returncode, cold.stdout) == (expected.returncode, expected.stdout) == (1, expected.stdout)
    [path] = cache_files(project / ".regcomp_cache")
    if damage == "truncated":
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    elif damage == "garbage":
        path.write_bytes(os.urandom(4096))
    elif damage == "not-json-object":
        path.write_text('["entries"]')
    else:  # a folder where the cache file should be: unreadable and unreplaceable, even for root
        path.unlink()
        path.mkdir()
    damaged = lint(project)
    assert (damaged.returncode, damaged.stdout) == (expected.returncode, expected.stdout)
    if damage == "directory":
        assert "warning" in damaged.stderr and path.is_dir()
        return
    json.loads(path.read_bytes())  # rebuilt
    warm = lint(project)
    assert (warm.returncode, warm.stdout) == (expected.returncode, expected.stdout)


def test_cache_dir_that_cannot_be_created_only_warns(project):
    """As root a read-only folder is writable, so the cache "folder" is a regular file."""
    blocker = project / "not-a-folder"
    blocker.write_text("")
    expected = lint(project, "--no-cache")
    proc = lint(project, cache_dir=blocker / "cache")
    assert (proc.returncode, proc.stdout) == (expected.returncode, expected.stdout)
    assert "regcomp-lint: warning: cannot write the cache" in proc.stderr


def test_two_processes_at_once_agree_and_leave_a_valid_cache(project):
    expected = lint(project, "--no-cache")
    for round_ in range(3):
        procs = [
            subprocess.Popen(
                [*command("regcomp-lint"), "--format", "json", "--jobs", "1", "."],
                cwd=project,
                env=env(),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(2)
        ]
        outs = [p.communicate(timeout=300) for p in procs]
        for p, (out, err) in zip(procs, outs):
            assert "Traceback" not in err
            assert (p.returncode, out) == (expected.returncode, expected.stdout), (round_, err)
        for path in cache_files(project / ".regcomp_cache"):
            json.loads(path.read_bytes())
        assert [n for n in os.listdir(project / ".regcomp_cache") if n.endswith(".tmp")] == []
        (project / "pkg0" / "clean.py").write_text(f"x = {round_}\n")  # some misses next round
