"""Linting many files: results, stable order, cache hits, the pool, and files that misbehave."""

from __future__ import annotations

import multiprocessing
import os
import sys
from pathlib import Path

import pytest

from regcomp_lint import api
from regcomp_lint.lint import cache as cache_mod
from regcomp_lint.lint import runner
from regcomp_lint.lint.config import Settings
from regcomp_lint.lint.engine import lint_bytes

FLAGGED = "import torch\ntorch._dynamo.config.suppress_errors = True\n"
CLEAN = "x = 1\n"
BROKEN = "def f(:\n"
FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "lint"

fork_only = pytest.mark.skipif(
    not sys.platform.startswith("linux") or "fork" not in multiprocessing.get_all_start_methods(),
    reason="patching the linter inside workers needs fork",
)


@pytest.fixture(autouse=True)
def private_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv(cache_mod.ENV_VAR, str(tmp_path_factory.mktemp("cache")))


def project(tmp_path: Path, files: dict[str, str]) -> Settings:
    for rel, text in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return Settings(root=str(tmp_path))


def many_files(tmp_path: Path, count: int = 40) -> Settings:
    files = {}
    for i in range(count):
        files[f"pkg/m{i:02d}.py"] = [FLAGGED, CLEAN, BROKEN][i % 3] + f"# file {i}\n" + "y = 2\n" * (i * 5)
    return project(tmp_path, files)


def codes(result) -> list[tuple[str, str]]:
    return [(os.path.basename(d.filename), d.code) for d in result.diagnostics]


# -- results -------------------------------------------------------------------------------------


def test_lints_files_and_sorts_diagnostics(tmp_path):
    settings = project(tmp_path, {"b.py": FLAGGED, "a.py": BROKEN, "c.py": CLEAN})
    result = runner.run([str(tmp_path)], settings, jobs=1, use_cache=False)
    assert codes(result) == [("a.py", "RC001"), ("b.py", "RC107")]
    assert result.files == 3 and result.errors == [] and result.missing == [] and result.cached == 0
    assert result.diagnostics == sorted(result.diagnostics, key=lambda d: d.sort_key())


def test_missing_paths_are_listed_and_the_rest_is_linted(tmp_path):
    settings = project(tmp_path, {"a.py": FLAGGED})
    result = runner.run([str(tmp_path / "a.py"), str(tmp_path / "nope.py")], settings, jobs=1)
    assert result.missing == [str(tmp_path / "nope.py")]
    assert codes(result) == [("a.py", "RC107")] and result.files == 1


def test_overlapping_paths_lint_each_file_once(tmp_path):
    settings = project(tmp_path, {"a.py": FLAGGED})
    result = runner.run([str(tmp_path), str(tmp_path / "a.py"), str(tmp_path)], settings, jobs=1)
    assert result.files == 1 and codes(result) == [("a.py", "RC107")]


def test_per_file_ignores_apply(tmp_path):
    project(tmp_path, {"scripts/a.py": FLAGGED, "b.py": FLAGGED})
    settings = Settings(root=str(tmp_path), per_file_ignores=(("scripts/*", ("RC107",)),))
    assert codes(runner.run([str(tmp_path)], settings, jobs=1)) == [("b.py", "RC107")]


def test_api_lint_paths_uses_the_runner(tmp_path):
    settings = project(tmp_path, {"a.py": FLAGGED})
    assert [d.code for d in api.lint_paths([str(tmp_path)], settings, jobs=1)] == ["RC107"]


def test_negative_jobs_is_an_error(tmp_path):
    with pytest.raises(ValueError, match="--jobs"):
        runner.run([str(tmp_path)], Settings(root=str(tmp_path)), jobs=-1)


def test_default_jobs_is_the_number_of_usable_cpus():
    assert runner.worker_count(None) == runner.worker_count(0) == runner.available_cpus() >= 1
    assert runner.worker_count(3) == 3


def test_progress_reports_every_file_up_to_the_total(tmp_path):
    settings = many_files(tmp_path, 12)
    runner.run([str(tmp_path)], settings, jobs=1)  # warm the cache for half of the check below
    (tmp_path / "pkg" / "m00.py").write_text(CLEAN)
    calls: list[tuple[int, int]] = []
    runner.run([str(tmp_path)], settings, jobs=1, progress=lambda done, total: calls.append((done, total)))
    assert calls[0] == (11, 12)  # the cache answered 11 files at once
    assert calls[-1] == (12, 12)
    assert [d for d, _ in calls] == sorted(d for d, _ in calls)


# -- the cache through the runner ----------------------------------------------------------------


def test_warm_run_answers_everything_from_the_cache_without_linting(tmp_path, monkeypatch):
    settings = many_files(tmp_path, 9)
    cold = runner.run([str(tmp_path)], settings, jobs=1)
    assert cold.cached == 0

    def must_not_lint(*args, **kwargs):
        raise AssertionError("a warm run must not lint")

    monkeypatch.setattr(runner, "lint_bytes", must_not_lint)
    warm = runner.run([str(tmp_path)], settings, jobs=4)
    assert warm.cached == 9 and warm.workers == 0
    assert warm.diagnostics == cold.diagnostics


def test_changed_file_is_linted_again_and_others_come_from_the_cache(tmp_path):
    settings = project(tmp_path, {"a.py": FLAGGED, "b.py": CLEAN})
    runner.run([str(tmp_path)], settings, jobs=1)
    (tmp_path / "b.py").write_text(FLAGGED)
    result = runner.run([str(tmp_path)], settings, jobs=1)
    assert result.cached == 1
    assert codes(result) == [("a.py", "RC107"), ("b.py", "RC107")]


def test_cached_findings_use_the_spelling_of_this_run(tmp_path, monkeypatch):
    settings = project(tmp_path, {"a.py": FLAGGED})
    runner.run([str(tmp_path / "a.py")], settings, jobs=1)
    monkeypatch.chdir(tmp_path)
    result = runner.run(["a.py"], settings, jobs=1)
    assert result.cached == 1 and [d.filename for d in result.diagnostics] == ["a.py"]


def test_no_cache_neither_reads_nor_writes(tmp_path, monkeypatch):
    settings = project(tmp_path, {"a.py": FLAGGED})
    result = runner.run([str(tmp_path)], settings, jobs=1, use_cache=False)
    assert result.cached == 0
    assert not any(Path(os.environ[cache_mod.ENV_VAR]).iterdir())


def test_settings_change_misses_the_cache(tmp_path):
    settings = project(tmp_path, {"a.py": FLAGGED})
    runner.run([str(tmp_path)], settings, jobs=1)
    other = Settings(root=str(tmp_path), ignore=("RC107",))
    result = runner.run([str(tmp_path)], other, jobs=1)
    assert result.cached == 0 and result.diagnostics == []


# -- files that misbehave ------------------------------------------------------------------------


def test_unreadable_file_is_rc001_at_1_1_and_the_run_goes_on(tmp_path, monkeypatch):
    settings = project(tmp_path, {"a.py": FLAGGED, "locked.py": CLEAN})
    real_read = runner.read_file

    def read_file(path):
        if path.endswith("locked.py"):
            raise PermissionError(13, "Permission denied", path)
        return real_read(path)

    monkeypatch.setattr(runner, "read_file", read_file)
    result = runner.run([str(tmp_path)], settings, jobs=1)
    locked = [d for d in result.diagnostics if d.filename.endswith("locked.py")]
    assert len(locked) == 1
    assert locked[0].code == "RC001" and (locked[0].location.row, locked[0].location.column) == (1, 1)
    assert locked[0].message == "cannot read file: Permission denied"
    assert ("a.py", "RC107") in codes(result)
    # not cached: once readable it is linted
    monkeypatch.setattr(runner, "read_file", real_read)
    again = runner.run([str(tmp_path)], settings, jobs=1)
    assert not [d for d in again.diagnostics if d.filename.endswith("locked.py")]


def test_unreadable_file_with_a_cache_entry_is_rc001(tmp_path, monkeypatch):
    settings = project(tmp_path, {"a.py": CLEAN})
    runner.run([str(tmp_path)], settings, jobs=1)

    def read_file(path):
        raise PermissionError(13, "Permission denied", path)

    monkeypatch.setattr(runner, "read_file", read_file)
    result = runner.run([str(tmp_path)], settings, jobs=1)
    assert [(d.code, d.message) for d in result.diagnostics] == [("RC001", "cannot read file: Permission denied")]


def test_file_deleted_during_the_run_is_rc001(tmp_path, monkeypatch):
    settings = project(tmp_path, {"a.py": FLAGGED, "gone.py": CLEAN})
    real_discover = runner.discover

    def discover_then_delete(paths, settings):
        found = real_discover(paths, settings)
        (tmp_path / "gone.py").unlink()
        return found

    monkeypatch.setattr(runner, "discover", discover_then_delete)
    result = runner.run([str(tmp_path)], settings, jobs=1)
    gone = [d for d in result.diagnostics if d.filename.endswith("gone.py")]
    assert [d.code for d in gone] == ["RC001"]
    assert "No such file or directory" in gone[0].message and "deleted during the run" in gone[0].message


def test_read_errors_respect_rc001_being_ignored(tmp_path, monkeypatch):
    project(tmp_path, {"a.py": CLEAN})
    monkeypatch.setattr(
        runner, "read_file", lambda path: (_ for _ in ()).throw(PermissionError(13, "Permission denied"))
    )
    settings = Settings(root=str(tmp_path), ignore=("RC001",))
    assert runner.run([str(tmp_path)], settings, jobs=1).diagnostics == []


def exploding_lint(data, filename, enabled, defer=None):
    if filename.endswith("boom.py") or "m05" in filename:
        raise RuntimeError("kaboom")
    return lint_bytes(data, filename, enabled, defer)


def test_internal_error_becomes_a_finding_for_that_file_only(tmp_path, monkeypatch):
    settings = project(tmp_path, {"a.py": FLAGGED, "boom.py": CLEAN})
    monkeypatch.setattr(runner, "lint_bytes", exploding_lint)
    result = runner.run([str(tmp_path)], settings, jobs=1)
    boom = [d for d in result.diagnostics if d.filename.endswith("boom.py")]
    assert len(boom) == 1 and boom[0].code == "RC001" and (boom[0].location.row, boom[0].location.column) == (1, 1)
    assert "internal error" in boom[0].message and "RuntimeError: kaboom" in boom[0].message
    assert "please report" in boom[0].message
    assert ("a.py", "RC107") in codes(result)
    # an internal error is not cached: fixed code gets a real answer next time
    monkeypatch.setattr(runner, "lint_bytes", lint_bytes)
    assert not [d for d in runner.run([str(tmp_path)], settings, jobs=1).diagnostics if d.filename.endswith("boom.py")]


# -- the pool ------------------------------------------------------------------------------------


def test_small_runs_do_not_start_a_pool(tmp_path):
    settings = many_files(tmp_path, 6)
    assert runner.run([str(tmp_path)], settings, jobs=4, use_cache=False).workers == 0


def test_pool_gives_the_same_results_in_the_same_order(tmp_path, monkeypatch):
    settings = many_files(tmp_path, 40)
    alone = runner.run([str(tmp_path), str(FIXTURES)], settings, jobs=1, use_cache=False)
    monkeypatch.setattr(runner, "POOL_MIN_BYTES", 0)
    pooled = runner.run([str(tmp_path), str(FIXTURES)], settings, jobs=2, use_cache=False)
    assert pooled.workers == 2
    assert pooled.diagnostics == alone.diagnostics
    assert pooled.files == alone.files


def test_pool_results_are_cached(tmp_path, monkeypatch):
    settings = many_files(tmp_path, 20)
    monkeypatch.setattr(runner, "POOL_MIN_BYTES", 0)
    cold = runner.run([str(tmp_path)], settings, jobs=2)
    warm = runner.run([str(tmp_path)], settings, jobs=2)
    assert cold.workers == 2 and warm.workers == 0 and warm.cached == 20
    assert warm.diagnostics == cold.diagnostics


def test_pool_progress_reaches_the_total(tmp_path, monkeypatch):
    settings = many_files(tmp_path, 30)
    monkeypatch.setattr(runner, "POOL_MIN_BYTES", 0)
    calls = []
    runner.run([str(tmp_path)], settings, jobs=2, use_cache=False, progress=lambda d, t: calls.append((d, t)))
    assert calls[-1] == (30, 30)
    assert [d for d, _ in calls] == sorted(d for d, _ in calls)


@fork_only
def test_internal_error_inside_a_worker_is_a_finding(tmp_path, monkeypatch):
    settings = many_files(tmp_path, 20)
    monkeypatch.setattr(runner, "POOL_MIN_BYTES", 0)
    monkeypatch.setattr(runner, "lint_bytes", exploding_lint)
    result = runner.run([str(tmp_path)], settings, jobs=2, use_cache=False)
    assert result.workers == 2
    broken = [d for d in result.diagnostics if "m05" in d.filename]
    assert [d.code for d in broken] == ["RC001"] and "kaboom" in broken[0].message
    assert len({d.filename for d in result.diagnostics}) == 13  # every flagged or broken file, m05 included


def dying_lint(data, filename, enabled, defer=None):
    if "m07" in filename:
        os._exit(3)  # the worker process dies, as with a crash in C code
    return lint_bytes(data, filename, enabled, defer)


@fork_only
def test_a_dead_worker_costs_only_the_file_that_killed_it(tmp_path, monkeypatch):
    settings = many_files(tmp_path, 20)
    expected = runner.run([str(tmp_path)], settings, jobs=1, use_cache=False).diagnostics
    monkeypatch.setattr(runner, "POOL_MIN_BYTES", 0)
    monkeypatch.setattr(runner, "lint_bytes", dying_lint)
    result = runner.run([str(tmp_path)], settings, jobs=2, use_cache=False)
    killer = [d for d in result.diagnostics if "m07" in d.filename]
    assert [d.code for d in killer] == ["RC001"] and "worker process linting it died" in killer[0].message
    others = [d for d in result.diagnostics if "m07" not in d.filename]
    assert others == [d for d in expected if "m07" not in d.filename]
    assert any("worker process died" in w for w in result.warnings)


def test_chunks_cover_every_task_once_largest_first(tmp_path):
    tasks = [runner.Task(i, f"f{i}.py", frozenset(), None) for i in range(50)]
    sizes = [(i * 37) % 101 + 1 for i in range(50)]
    chunks = runner.chunk_tasks(tasks, sizes, workers=2)
    flat = [t.index for chunk in chunks for t in chunk]
    assert sorted(flat) == list(range(50))
    assert sizes[flat[0]] == max(sizes)
    assert 1 < len(chunks) <= 2 * runner.CHUNKS_PER_WORKER + 1


def test_pool_that_cannot_start_falls_back_to_one_process(tmp_path, monkeypatch):
    settings = many_files(tmp_path, 12)
    expected = runner.run([str(tmp_path)], settings, jobs=1, use_cache=False).diagnostics
    monkeypatch.setattr(runner, "POOL_MIN_BYTES", 0)

    class NoFork:
        def __init__(self, *args, **kwargs):
            pass

        def submit(self, *args, **kwargs):
            raise OSError(11, "Resource temporarily unavailable")

        def shutdown(self, *args, **kwargs):
            pass

    monkeypatch.setattr(runner, "ProcessPoolExecutor", NoFork)
    result = runner.run([str(tmp_path)], settings, jobs=2, use_cache=False)
    assert result.diagnostics == expected and result.workers == 0
    assert result.warnings == [
        "cannot start worker processes (Resource temporarily unavailable); linting in one process"
    ]


def test_cached_finding_goes_stale_when_an_imported_model_file_changes(tmp_path):
    """RC210 reads the local model file; the cache must notice when that file changes."""
    (tmp_path / "models.py").write_text(
        "import torch\nfrom torch import nn\n\n\nclass Net(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n        self.fc = nn.Linear(4, 4)\n\n"
        "    def forward(self, x):\n        y = self.fc(x)\n        if y.sum() > 0:\n            y = y * 2\n        return y\n"
    )
    (tmp_path / "train.py").write_text(
        "import torch\nfrom models import Net\n\nmodel = torch.compile(Net(), fullgraph=True)\n"
    )
    settings = Settings(root=str(tmp_path), cache_dir=str(tmp_path / "cache"), select=("RC210",))
    train = str(tmp_path / "train.py")

    first = runner.run([train], settings, jobs=1, use_cache=True)
    assert [d.code for d in first.diagnostics] == ["RC210"] and first.cached == 0
    again = runner.run([train], settings, jobs=1, use_cache=True)
    assert [d.code for d in again.diagnostics] == ["RC210"] and again.cached == 1

    model = tmp_path / "models.py"
    model.write_text(model.read_text().replace("if y.sum() > 0:", "if y.shape[0] > 0:"))
    after = runner.run([train], settings, jobs=1, use_cache=True)
    assert after.diagnostics == [] and after.cached == 0
