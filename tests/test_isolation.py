"""Static lint needs neither torch nor its friends, and never runs the code it reads.

(a) Subprocesses get a ``sitecustomize`` (on ``PYTHONPATH``, so pool workers and child
    interpreters get it too) that installs a meta-path finder refusing ``torch``, ``accelerate``
    and ``transformers``; it logs every attempt and, at exit, every such module found in
    ``sys.modules``. All fixtures are linted there through the API and the CLI, and the results
    must equal the ones from this (unrestricted) process.
(b) A file whose import or execution would write marker files (top-level ``open``,
    ``os.system``, class body, default argument, decorator, ``__main__`` guard, a package
    ``__init__``) is linted through every entry point; no marker may appear.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from regcomp_lint.api import lint_paths, lint_source
from regcomp_lint.lint.config import Settings

ROOT = Path(__file__).resolve().parent.parent
FIXTURE_DIR = ROOT / "fixtures" / "lint"
BLOCKED = ("torch", "accelerate", "transformers")

SITECUSTOMIZE = textwrap.dedent(
    '''
    """Test harness: make torch, accelerate and transformers unimportable, and record attempts."""
    import atexit
    import os
    import sys

    _BLOCKED = {blocked!r}
    _LOG = os.environ["REGCOMP_BLOCK_LOG"]


    def _log(line):
        with open(_LOG, "a", encoding="utf-8") as handle:
            handle.write(line + "\\n")


    class RegcompBlocker:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in _BLOCKED:
                _log("attempt %d %s" % (os.getpid(), name))
                raise ModuleNotFoundError("%s is blocked by regcomp-lint's isolation test" % name, name=name)
            return None

        def find_module(self, name, path=None):  # pragma: no cover - legacy protocol
            return None


    sys.meta_path.insert(0, RegcompBlocker())


    @atexit.register
    def _report_loaded():
        loaded = sorted(m for m in sys.modules if m.split(".")[0] in _BLOCKED)
        _log("exit %d %s" % (os.getpid(), " ".join(loaded)))
    '''
).format(blocked=BLOCKED)


@pytest.fixture()
def blocked_env(tmp_path):
    site_dir = tmp_path / "site"
    site_dir.mkdir()
    (site_dir / "sitecustomize.py").write_text(SITECUSTOMIZE, encoding="utf-8")
    log = tmp_path / "blocked.log"
    log.write_text("", encoding="utf-8")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(site_dir), str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["REGCOMP_BLOCK_LOG"] = str(log)
    env.pop("PYTHONSTARTUP", None)
    env["NO_COLOR"] = "1"
    return env, log


def read_log(log: Path) -> tuple[list[str], list[str]]:
    lines = log.read_text(encoding="utf-8").splitlines()
    attempts = [line for line in lines if line.startswith("attempt ")]
    loaded = [line for line in lines if line.startswith("exit ") and len(line.split()) > 2]
    return attempts, loaded


def run_python(args: list[str], env: dict, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=300)


def test_blocker_really_blocks(blocked_env, tmp_path):
    """Control: the harness makes ``import torch``/``transformers`` fail and notices attempts."""
    env, log = blocked_env
    for name in BLOCKED:
        proc = run_python(["-c", f"import {name}"], env, tmp_path)
        assert proc.returncode != 0
        assert "blocked by regcomp-lint's isolation test" in proc.stderr
    attempts, _ = read_log(log)
    assert {line.split()[2] for line in attempts} == set(BLOCKED)


API_SCRIPT = textwrap.dedent(
    """
    import json
    import sys
    from pathlib import Path

    assert any(type(f).__name__ == "RegcompBlocker" for f in sys.meta_path), "harness not active"

    from regcomp_lint.api import lint_paths, lint_source
    from regcomp_lint.checks import ALL_RULES
    from regcomp_lint.lint.config import Settings

    fixture_dir = Path(sys.argv[1])
    per_file = {}
    for path in sorted(fixture_dir.glob("*.py")):
        per_file[path.name] = [[d.code, d.location.row, d.location.column] for d in lint_source(path.read_bytes(), path.name, Settings())]
    # RC2xx/RC3xx named explicitly: lint_paths then reports them outside compiled files too,
    # as lint_source (one text, no project) always does
    everywhere = Settings(extend_select=("RC2", "RC3"))
    via_paths = [[Path(d.filename).name, d.code, d.location.row, d.location.column] for d in lint_paths([str(fixture_dir)], everywhere)]
    loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("torch", "accelerate", "transformers"))
    print(json.dumps({"per_file": per_file, "paths": via_paths, "rules": sorted(ALL_RULES), "loaded": loaded}))
    """
)


def test_api_lints_every_fixture_without_torch(blocked_env, tmp_path):
    env, log = blocked_env
    proc = run_python(["-c", API_SCRIPT, str(FIXTURE_DIR)], env, tmp_path)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["loaded"] == []
    attempts, loaded = read_log(log)
    assert attempts == [] and loaded == [], (attempts, loaded)

    # same results as in this unrestricted process: nothing depends on torch being importable
    from regcomp_lint.checks import ALL_RULES

    assert result["rules"] == sorted(ALL_RULES)
    expected = {
        p.name: [[d.code, d.location.row, d.location.column] for d in lint_source(p.read_bytes(), p.name, Settings())]
        for p in sorted(FIXTURE_DIR.glob("*.py"))
    }
    assert result["per_file"] == expected
    assert len(expected) >= 25
    assert sum(map(len, expected.values())) > 0, "the fixtures must produce findings"
    by_paths = sorted(tuple(x) for x in result["paths"])
    by_file = sorted((name, *f) for name, found in expected.items() for f in found)
    assert by_paths == by_file


def cli_command() -> list[str] | None:
    if (ROOT / "regcomp_lint" / "__main__.py").exists():
        return ["-m", "regcomp_lint"]
    if (ROOT / "regcomp_lint" / "cli.py").exists():
        return [
            "-c",
            "import sys; sys.argv[0] = 'regcomp-lint'; from regcomp_lint.cli.commands import main; sys.exit(main())",
        ]
    return None


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_cli_lints_every_fixture_without_torch(blocked_env, tmp_path, jobs):
    command = cli_command()
    if command is None:
        pytest.skip("regcomp_lint/cli/commands.py does not exist yet")
    env, log = blocked_env
    config = tmp_path / "pyproject.toml"  # defaults, whatever the repository's own pyproject says
    config.write_text("[tool.regcomp-lint]\n", encoding="utf-8")
    args = ["--config", str(config), "--no-cache", "--jobs", jobs, "--format", "json", str(FIXTURE_DIR)]
    proc = run_python([*command, *args], env, tmp_path)
    assert proc.returncode == 1, proc.stderr  # findings exist, and nothing crashed (that would be 2)
    found = json.loads(proc.stdout)
    expected = lint_paths([str(FIXTURE_DIR)], Settings())
    assert sorted((Path(d["filename"]).name, d["code"], d["location"]["row"]) for d in found) == sorted(
        (Path(d.filename).name, d.code, d.location.row) for d in expected
    )
    attempts, loaded = read_log(log)
    assert attempts == [] and loaded == [], (attempts, loaded)
    assert any(line.startswith("exit ") for line in log.read_text().splitlines()), "harness did not run"


# -- (b) nothing from the linted files runs -------------------------------------------------

EVIL = textwrap.dedent(
    """
    # Would leave marker files behind if it were ever imported or executed.
    import os

    open({m}["module"], "w").write("module body ran")
    __import__("os").system("echo ran > " + {m}["system"])


    def _mark(func):
        open({m}["decorator"], "w").write("decorator ran")
        return func


    class Config:
        open({m}["class_body"], "w").write("class body ran")

        @_mark
        def method(self, flag=open({m}["default_arg"], "w")):
            return flag


    import torch
    import torch._dynamo

    torch._dynamo.config.suppress_errors = True
    model = torch.compile(torch.nn.Linear(2, 2), backend="indcutor")

    if __name__ == "__main__":
        open({m}["main"], "w").write("main ran")
    """
)


def write_evil(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    markers_dir = tmp_path / "markers"
    markers_dir.mkdir()
    names = ("module", "system", "decorator", "class_body", "default_arg", "main")
    markers = {name: str(markers_dir / f"{name}.marker") for name in names}
    project = tmp_path / "project"
    (project / "pkg").mkdir(parents=True)
    body = EVIL.format(m=repr(markers))
    (project / "train_evil.py").write_text(body, encoding="utf-8")
    (project / "pkg" / "__init__.py").write_text(body, encoding="utf-8")
    (project / "pkg" / "__main__.py").write_text(body, encoding="utf-8")
    (project / "setup.py").write_text(body, encoding="utf-8")
    (project / "conftest.py").write_text(body, encoding="utf-8")
    return project, markers


def markers_present(markers: dict[str, str]) -> list[str]:
    return sorted(name for name, path in markers.items() if os.path.exists(path))


def test_evil_file_markers_work(tmp_path, blocked_env):
    """Control: executing the file does create markers, so their absence below means something."""
    env, _ = blocked_env
    project, markers = write_evil(tmp_path)
    proc = run_python(
        ["-c", "import runpy, sys; runpy.run_path(sys.argv[1], run_name='__main__')", str(project / "train_evil.py")],
        env,
        tmp_path,
    )
    assert proc.returncode != 0 and "blocked" in proc.stderr  # it got as far as `import torch`
    assert markers_present(markers) == ["class_body", "decorator", "default_arg", "module", "system"]


def test_lint_executes_nothing(tmp_path, blocked_env, monkeypatch):
    env, log = blocked_env
    project, markers = write_evil(tmp_path)
    monkeypatch.chdir(project)
    monkeypatch.syspath_prepend(str(project))
    files = sorted(project.rglob("*.py"))
    assert len(files) == 5

    for path in files:
        found = lint_source(path.read_bytes(), str(path), Settings())
        assert "RC107" in {d.code for d in found}, "the file was not really linted"
    found = lint_paths([str(project)], Settings())
    assert {Path(d.filename).name for d in found if d.code == "RC107"} == {p.name for p in files}

    command = cli_command()
    if command is not None:
        for extra in (
            ["--jobs", "2", str(project)],
            [str(project / "train_evil.py")],
            ["-", "--stdin-filename", "pkg/__main__.py"],
        ):
            stdin = (project / "train_evil.py").read_text() if extra[0] == "-" else None
            proc = subprocess.run(
                [sys.executable, *command, "--no-cache", *extra],
                env=env,
                cwd=project,
                input=stdin,
                capture_output=True,
                text=True,
                timeout=300,
            )
            assert proc.returncode == 1, (extra, proc.stdout, proc.stderr)
            assert "RC107" in proc.stdout
        attempts, loaded = read_log(log)
        assert attempts == [] and loaded == []

    assert markers_present(markers) == []
    assert sorted(p.name for p in (tmp_path / "markers").iterdir()) == []
