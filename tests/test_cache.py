"""The result cache: keyed on content + settings + tool, never able to change results."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest

from regcomp_lint.diagnostics import Applicability, Diagnostic, Edit, Fix, Location
from regcomp_lint.lint import cache as cache_mod
from regcomp_lint.lint import runner
from regcomp_lint.lint.cache import LintCache, cache_dir, content_digest
from regcomp_lint.lint.config import Settings

FLAGGED = "import torch\ntorch._dynamo.config.suppress_errors = True  # flagged\n"
CLEAN = "x = 1\n"
BROKEN = "def f(:\n"


@pytest.fixture(autouse=True)
def no_env_cache_dir(monkeypatch):
    monkeypatch.delenv(cache_mod.ENV_VAR, raising=False)


def project(tmp_path: Path, files: dict[str, str] | None = None) -> Settings:
    for rel, text in (files or {"flagged.py": FLAGGED, "clean.py": CLEAN, "broken.py": BROKEN}).items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return Settings(root=str(tmp_path))


def a_diagnostic(filename: str = "f.py") -> Diagnostic:
    fix = Fix(
        Applicability.UNSAFE,
        "do it",
        (Edit("new", Location(1, 1), Location(1, 4)), Edit("", Location(2, 1), Location(3, 1))),
    )
    return Diagnostic("RC107", "suppress-errors", "message", filename, Location(1, 1), Location(1, 4), fix)


# -- where ------------------------------------------------------------------------------------


def test_default_dir_is_at_the_settings_root(tmp_path):
    assert cache_dir(Settings(root=str(tmp_path))) == tmp_path / ".regcomp_cache"


def test_cache_dir_setting_is_relative_to_the_root(tmp_path):
    assert cache_dir(Settings(root=str(tmp_path), cache_dir="var/c")) == tmp_path / "var" / "c"
    assert cache_dir(Settings(root=str(tmp_path), cache_dir=str(tmp_path / "abs"))) == tmp_path / "abs"


def test_environment_variable_wins(tmp_path, monkeypatch):
    monkeypatch.setenv(cache_mod.ENV_VAR, str(tmp_path / "env"))
    assert cache_dir(Settings(root=str(tmp_path), cache_dir="var/c")) == tmp_path / "env"


# -- keys and entries -------------------------------------------------------------------------


def test_digest_depends_on_content_only():
    assert content_digest(b"x = 1\n") == content_digest(b"x = 1\n")
    assert content_digest(b"x = 1\n") != content_digest(b"x = 2\n")


def test_round_trip_keeps_diagnostics_equal_and_uses_the_current_filename(tmp_path):
    settings = Settings(root=str(tmp_path))
    stored = LintCache.open(settings)
    diag = a_diagnostic("old/spelling.py")
    stored.store("/abs/f.py", "d1", [diag])
    assert stored.save() is None
    loaded = LintCache.open(settings)
    assert loaded.problem is None
    [back] = loaded.lookup("/abs/f.py", "d1", "new/spelling.py")
    assert back == Diagnostic(
        diag.code, diag.name, diag.message, "new/spelling.py", diag.location, diag.end_location, diag.fix
    )
    assert loaded.lookup("/abs/f.py", "other-digest", "f.py") is None
    assert loaded.lookup("/abs/missing.py", "d1", "f.py") is None


def test_one_file_per_settings_fingerprint(tmp_path):
    LintCache.open(Settings(root=str(tmp_path))).save()
    LintCache.open(Settings(root=str(tmp_path), ignore=("RC107",))).save()
    files = sorted(p.name for p in (tmp_path / ".regcomp_cache").glob("lint-*.json"))
    assert len(files) == 2


def test_cache_folder_is_marked_and_ignored_by_git(tmp_path):
    LintCache.open(Settings(root=str(tmp_path))).save()
    folder = tmp_path / ".regcomp_cache"
    assert (folder / "CACHEDIR.TAG").read_text().startswith("Signature: 8a477f597d28d172789f06886806bc55")
    assert (folder / ".gitignore").read_text().strip().endswith("*")


def test_another_tool_version_or_code_starts_afresh(tmp_path, monkeypatch):
    settings = Settings(root=str(tmp_path))
    stored = LintCache.open(settings)
    stored.store("/abs/f.py", "d1", [])
    stored.save()
    data = json.loads(stored.path.read_text())
    data["code"] = "something-else"
    stored.path.write_text(json.dumps(data))
    fresh = LintCache.open(settings)
    assert fresh.entries == {} and fresh.problem is None and fresh.dirty


def test_nothing_is_written_when_nothing_changed(tmp_path):
    settings = Settings(root=str(tmp_path))
    first = LintCache.open(settings)
    first.store("/abs/f.py", "d1", [])
    first.save()
    before = first.path.stat().st_mtime_ns
    again = LintCache.open(settings)
    assert not again.dirty
    assert again.save() is None
    assert first.path.stat().st_mtime_ns == before


def test_prune_drops_files_gone_or_out_of_scope_but_keeps_other_folders(tmp_path):
    settings = Settings(root=str(tmp_path))
    entries = LintCache.open(settings)
    existing_elsewhere = tmp_path / "elsewhere.py"
    existing_elsewhere.write_text(CLEAN)
    walked = str(tmp_path / "src")
    entries.store(os.path.join(walked, "seen.py"), "a", [])
    entries.store(os.path.join(walked, "now_excluded.py"), "b", [])
    entries.store(str(existing_elsewhere), "c", [])
    entries.store(str(tmp_path / "deleted.py"), "d", [])
    entries.prune({os.path.join(walked, "seen.py")}, [walked])
    assert sorted(entries.entries) == sorted([os.path.join(walked, "seen.py"), str(existing_elsewhere)])


# -- damaged caches never change results ----------------------------------------------------------


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"{not json",
        b'{"format": 1, "entries": {"x": ',  # truncated
        b"[1, 2, 3]",
        b'{"format": 1, "entries": []}',
        b"\xff\xfe\x00garbage",
    ],
)
def test_damaged_cache_file_is_ignored_and_rebuilt(tmp_path, content):
    settings = project(tmp_path)
    expected = runner.run([str(tmp_path)], settings, jobs=1, use_cache=False).diagnostics
    path = LintCache.open(settings).path
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    result = runner.run([str(tmp_path)], settings, jobs=1)
    assert result.diagnostics == expected
    assert result.cached == 0
    assert any("damaged" in w for w in result.warnings)
    rebuilt = runner.run([str(tmp_path)], settings, jobs=1)
    assert rebuilt.diagnostics == expected and rebuilt.cached == 3 and rebuilt.warnings == []


def test_damaged_entries_are_linted_again(tmp_path):
    settings = project(tmp_path)
    expected = runner.run([str(tmp_path)], settings, jobs=1).diagnostics
    path = LintCache.open(settings).path
    data = json.loads(path.read_text())
    for key, entry in data["entries"].items():
        if key.endswith("flagged.py"):
            entry[1] = [{"code": "RC107"}]  # missing fields
        elif key.endswith("clean.py"):
            data["entries"][key] = "not a list"
    path.write_text(json.dumps(data))
    result = runner.run([str(tmp_path)], settings, jobs=1)
    assert result.diagnostics == expected
    assert result.cached == 1  # only broken.py's entry was intact


def test_unwritable_cache_only_costs_a_warning(tmp_path):
    settings = project(tmp_path)
    (tmp_path / "blocker").write_text("a file where the cache folder should be")
    settings = Settings(root=str(tmp_path), cache_dir="blocker/cache")
    expected = runner.run([str(tmp_path)], settings, jobs=1, use_cache=False).diagnostics
    result = runner.run([str(tmp_path)], settings, jobs=1)
    assert result.diagnostics == expected
    assert len(result.warnings) == 1 and "cannot write the cache" in result.warnings[0]


def test_unreadable_cache_file_is_ignored(tmp_path):
    settings = project(tmp_path)
    path = LintCache.open(settings).path
    path.mkdir(parents=True)  # a folder where the file should be: reading fails with an OSError
    expected = runner.run([str(tmp_path)], settings, jobs=1, use_cache=False).diagnostics
    result = runner.run([str(tmp_path)], settings, jobs=1)
    assert result.diagnostics == expected
    assert any("cannot read the cache" in w for w in result.warnings)


def test_saves_leave_no_temporary_files_and_parallel_writers_never_tear_the_file(tmp_path):
    settings = Settings(root=str(tmp_path))
    errors: list[BaseException] = []

    def writer(n: int) -> None:
        try:
            for round_ in range(20):
                mine = LintCache.open(settings)
                mine.store(f"/abs/{n}-{round_}.py", "d", [a_diagnostic()])
                assert mine.save() is None
                json.loads(mine.path.read_text())  # always a whole file
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    folder = tmp_path / ".regcomp_cache"
    assert [p.name for p in folder.iterdir() if p.name.endswith(".tmp")] == []
    assert LintCache.open(settings).problem is None


def test_cache_does_not_unpickle_or_execute_anything(tmp_path):
    """A cache file is data: JSON with no code path to object construction beyond Diagnostic."""
    settings = project(tmp_path, {"a.py": CLEAN})
    runner.run([str(tmp_path)], settings, jobs=1)
    raw = LintCache.open(settings).path.read_bytes()
    assert raw.startswith(b"{")
    json.loads(raw)


def test_a_dependency_shared_by_many_entries_is_read_once_per_run_and_still_checked(tmp_path, monkeypatch):
    dep = tmp_path / "models.py"
    dep.write_text("x = 1\n")
    digest = content_digest(dep.read_bytes())
    store = LintCache(tmp_path / "c.json", {"format": 1})
    for name in ("a.py", "b.py", "c.py"):
        store.store(str(tmp_path / name), "d", [], depends_on=[(str(dep), digest)])
    reads = []
    real = cache_mod.reading.read_bytes
    monkeypatch.setattr(cache_mod.reading, "read_bytes", lambda p: reads.append(p) or real(p))
    assert all(store.lookup(str(tmp_path / n), "d", n) == [] for n in ("a.py", "b.py", "c.py"))
    assert reads == [str(dep)]

    dep.write_text("x = 2\n")  # changed before the next run: every dependent is linted again
    fresh = LintCache(tmp_path / "c.json", {"format": 1}, dict(store.entries))
    assert [fresh.lookup(str(tmp_path / n), "d", n) for n in ("a.py", "b.py")] == [None, None]
