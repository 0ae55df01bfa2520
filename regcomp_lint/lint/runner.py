"""Lint many files: discovery, the cache, a process pool for cache misses, stable results.

The warm path (nothing changed) is a read, a hash and a dictionary look-up per file: no parse,
no pool. A pool is started only for cache misses, and only when there is enough work to pay
for its start-up; work is sent in size-balanced chunks of paths (workers read the files
themselves, so file contents never cross a pipe).

Every file gets an answer and the run always goes on: a file that cannot be read is an RC001
finding at 1:1; an exception inside the linter for one file is an RC001 "internal error"
finding for that file; a worker process that dies is replaced and its files are linted again,
one by one, so only the file that kills a worker is reported.

Two passes: the rules whose findings are kept only in files a compile reaches (``lint.scope``)
are put off by the first pass (``engine.Deferral``) and run by a second one only on the files
that the first pass's scope facts show a compile reaches (a few percent of a large library).
The cache records what a file's entry still lacks, so a later run that finds it compiled adds it.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import NamedTuple

from regcomp_lint.analysis import compiled_scope, dependencies
from regcomp_lint.analysis.compiled_scope import FileScope, ScopeFacts
from regcomp_lint.checks import ALL_RULES
from regcomp_lint.diagnostics import Diagnostic, Location
from regcomp_lint.files import reading
from regcomp_lint.files.discovery import discover
from regcomp_lint.files.source import DecodeError, decode_source
from regcomp_lint.lint import scope
from regcomp_lint.lint.cache import LintCache, content_digest
from regcomp_lint.lint.config import Settings
from regcomp_lint.lint.engine import SYNTAX_ERROR, Deferral, lint_bytes

ISSUES_URL = "https://github.com/regcomp-lint/regcomp-lint/issues"
#: Below this much source to lint (about 0.1 s of parsing) a pool costs more than it saves.
POOL_MIN_BYTES = 1 << 20
#: More chunks than workers, so a worker that drew big files does not finish last alone.
CHUNKS_PER_WORKER = 8

Progress = Callable[[int, int], None]


@dataclass
class RunResult:
    diagnostics: list[Diagnostic] = field(default_factory=list)  # sorted
    files: int = 0  # files linted (from the cache or not)
    errors: list[str] = field(default_factory=list)  # problems that stop part of the run: unreadable folders
    missing: list[str] = field(default_factory=list)  # typed paths that do not exist
    cached: int = 0  # files answered from the cache
    warnings: list[str] = field(default_factory=list)  # problems that cost speed only (the cache)
    workers: int = 0  # worker processes started (0: everything ran in this process)


class Outcome(NamedTuple):
    digest: str | None  # hash of the bytes that were linted; None when they could not be read
    diagnostics: list[Diagnostic]
    cacheable: bool
    #: (path, digest) of other files the findings were computed from (see dependencies.py)
    depends_on: tuple[tuple[str, str], ...] = ()
    #: what the scope question needs of the file, learned by its lint (None: not learned)
    scope: FileScope | None = None
    #: codes of the rules put off to the second pass (their findings are not in ``diagnostics``)
    pending: frozenset[str] = frozenset()


@dataclass(frozen=True, order=True)  # a NamedTuple field "index" would shadow tuple.index
class Task:
    index: int  # position in the run's file list
    path: str
    enabled: frozenset[str]
    data: bytes | None  # already read by the cache check, or None
    defer: frozenset[str] = frozenset()  # codes to put off to the second pass when the file allows


# -- one file --------------------------------------------------------------------------------


def lint_file(
    path: str, enabled: frozenset[str], data: bytes | None = None, defer: frozenset[str] = frozenset()
) -> Outcome:
    """Lint one file; never raises (except KeyboardInterrupt and the like). ``defer``: codes to
    put off to a second pass (see ``engine.Deferral``), named in the outcome's ``pending``."""
    if data is None:
        try:
            data = read_file(path)
        except OSError as exc:
            return Outcome(None, unreadable(path, exc, enabled), False)
    digest = content_digest(data)
    deferral = Deferral(defer)
    try:
        with dependencies.recording() as read, compiled_scope.recording() as learned:
            diagnostics = lint_bytes(data, path, enabled, defer=deferral)
        return Outcome(digest, diagnostics, True, _digests(read - {path}), learned.get(path), deferral.pending)
    except Exception as exc:  # a bug of ours: report it on the file and go on
        return Outcome(digest, [internal_error(path, f"{type(exc).__name__}: {exc}")], False)


#: (path, mtime, size) -> digest of the other files findings were computed from: the model files
#: a hundred files of a library import are hashed once per process (the key is the one
#: ``reachability.modules`` parses them under).
_dependency_digests: dict[tuple[str, int, int], str] = {}


def _digests(paths: set[str]) -> tuple[tuple[str, str], ...]:
    found = []
    for other in sorted(paths):
        try:
            info = os.stat(other)
            key = (other, info.st_mtime_ns, info.st_size)
            digest = _dependency_digests.get(key)
            if digest is None:
                digest = _dependency_digests[key] = content_digest(read_file(other))
            found.append((other, digest))
        except OSError:
            found.append((other, ""))
    return tuple(found)


def _project_files(settings: Settings) -> list[str]:
    """The Python files under the config file's folder (none without a config: the working
    folder may be a home directory, not a project)."""
    if settings.config_file is None:
        return []
    return list(discover([settings.root], settings).files)


def _read_text(path: str) -> str | None:
    try:
        return decode_source(read_file(path))
    except (OSError, DecodeError):
        return None


def read_file(path: str) -> bytes:
    return reading.read_bytes(path)  # never blocks on a named pipe, never reads /dev/zero forever


def _rc001(path: str, message: str) -> Diagnostic:
    start = Location(1, 1)
    rule = ALL_RULES[SYNTAX_ERROR]
    return Diagnostic(SYNTAX_ERROR, rule.name, message, path, start, start, severity=rule.severity)


def unreadable(path: str, exc: OSError, enabled: frozenset[str]) -> list[Diagnostic]:
    if SYNTAX_ERROR not in enabled:
        return []
    reason = exc.strerror or str(exc) or type(exc).__name__
    if isinstance(exc, FileNotFoundError):
        reason += " (was it deleted during the run?)"
    return [_rc001(path, f"cannot read file: {reason}")]


def internal_error(path: str, what: str) -> Diagnostic:
    """Always reported, whatever is selected: it is our bug, and hiding it would hide results."""
    return _rc001(path, f"internal error while linting this file ({what}); please report it at {ISSUES_URL}")


# -- many files ------------------------------------------------------------------------------


def run(
    paths: list[str],
    settings: Settings,
    jobs: int | None = None,
    use_cache: bool = True,
    progress: Progress | None = None,
) -> RunResult:
    """Lint ``paths`` (files and folders). ``jobs``: worker processes (None or 0: one per CPU;
    1: none). ``progress(done, total)`` is called as files finish."""
    workers = worker_count(jobs)
    found = discover([str(p) for p in paths], settings)
    result = RunResult(files=len(found.files), errors=list(found.errors), missing=list(found.missing))
    total = len(found.files)
    per_file: list[list[Diagnostic]] = [[] for _ in range(total)]
    cache = LintCache.open(settings) if use_cache else None
    if cache is not None and cache.problem:
        result.warnings.append(cache.problem)
    keys = [os.path.abspath(path) for path in found.files] if cache is not None else []

    todo: list[Task] = []
    done = 0
    #: absolute path -> what the scope question needs, learned by the lint or kept by the cache
    learned: dict[str, FileScope] = {}
    scoped = scope.scoped_codes(settings)
    #: file index -> codes put off to the second pass (first pass or cache)
    pending: dict[int, frozenset[str]] = {}
    for index, path in enumerate(found.files):
        enabled = settings.enabled_for(path)
        if cache is None or not cache.has(keys[index]):
            todo.append(Task(index, path, enabled, None, scoped))
            continue
        try:
            data = read_file(path)
        except OSError as exc:
            per_file[index] = unreadable(path, exc, enabled)
            done += 1
            continue
        hit = cache.lookup(keys[index], content_digest(data), path)
        if hit is None:
            todo.append(Task(index, path, enabled, data, scoped))
        else:
            per_file[index] = hit
            known = cache.scope(keys[index])
            if known is not None:
                learned[keys[index]] = known
            put_off = cache.pending(keys[index]) & enabled
            if put_off:
                pending[index] = put_off
            result.cached += 1
            done += 1
    if progress is not None and total:
        progress(done, total)
    facts = ScopeFacts()
    if scoped and todo:
        todo = _whole_where_guessed(todo, found.files, learned, facts, keep_data=workers == 1)

    def finished(index: int, outcome: Outcome) -> None:
        per_file[index] = outcome.diagnostics
        if outcome.scope is not None:
            learned[os.path.abspath(found.files[index])] = outcome.scope
        if outcome.pending:
            pending[index] = outcome.pending
        if cache is not None and outcome.cacheable and outcome.digest is not None:  # cacheable: it was read
            cache.store(
                keys[index], outcome.digest, outcome.diagnostics, outcome.depends_on, outcome.scope, outcome.pending
            )

    result.workers = _lint_tasks(todo, workers, finished, progress, done, total, result.warnings)

    # Which files a compile reaches: asked about the files with scoped findings (files linted
    # whole) and those whose scoped rules were put off; the latter, when reached, are linted
    # again with those rules alone.
    unsure = {os.path.abspath(found.files[index]) for index in pending}
    unsure.update(os.path.abspath(d.filename) for diagnostics in per_file for d in diagnostics if d.code in scoped)
    compiled: set[str] = set()
    if unsure:
        compiled = scope.reached(unsure, found.files, _read_text, lambda: _project_files(settings), learned, facts)

    def completed(index: int, outcome: Outcome) -> None:
        if not outcome.cacheable or outcome.digest is None:  # an internal error (or the file is gone)
            per_file[index] = outcome.diagnostics
            return
        per_file[index] = sorted([*per_file[index], *outcome.diagnostics], key=Diagnostic.sort_key)
        if cache is not None:
            cache.complete(keys[index], outcome.digest, per_file[index], outcome.depends_on)

    second = [
        Task(index, found.files[index], codes, None)
        for index, codes in sorted(pending.items())
        if os.path.abspath(found.files[index]) in compiled
    ]
    result.workers = max(result.workers, _lint_tasks(second, workers, completed, None, 0, len(second), result.warnings))

    if cache is not None:
        cache.prune(set(keys), found.roots)
        problem = cache.save()
        if problem:
            result.warnings.append(problem)
    found_diagnostics = [diag for diagnostics in per_file for diag in diagnostics]
    if unsure:
        found_diagnostics = scope.keep_compiled(found_diagnostics, scoped, compiled)
    result.diagnostics = settings.apply_severities(found_diagnostics)
    result.diagnostics.sort(key=Diagnostic.sort_key)
    return result


def _whole_where_guessed(
    todo: list[Task], files: list[str], known: dict[str, FileScope], facts: ScopeFacts, keep_data: bool = False
) -> list[Task]:
    """``todo`` with the files a compile is guessed to reach (:func:`compiled_scope.guessed_files`,
    from their bytes and what the cache knows) linted whole, their scoped rules not put off: a
    second pass would parse them again. A wrong guess costs time only: the scoped findings of a
    file no compile reaches are dropped after the lint, and a reached file not guessed gets the
    second pass.

    ``keep_data``: the tasks keep the bytes the guess read, so a lint in this process does not
    read every file a second time (not for a pool: its workers read their files themselves, and
    this process would hold the whole tree meanwhile)."""
    read = {task.path: task.data for task in todo if task.data is not None}
    fresh: dict[str, bytes] = {}

    def read_bytes(path: str) -> bytes | None:
        data = read.pop(path, None)
        if data is not None:
            return data
        try:
            data = read_file(path)
        except OSError:
            return None
        if keep_data:
            fresh[path] = data
        return data

    guessed = compiled_scope.guessed_files(files, read_bytes, known, facts)
    tasks = []
    for task in todo:
        if task.data is None and task.path in fresh:
            task = replace(task, data=fresh.pop(task.path))
        if os.path.abspath(task.path) in guessed:
            task = replace(task, defer=frozenset())
        tasks.append(task)
    return tasks


def worker_count(jobs: int | None) -> int:
    if jobs is None or jobs == 0:
        return available_cpus()
    if jobs < 0:
        raise ValueError(f"--jobs must be 0 (one per CPU) or more, not {jobs}")
    return jobs


def available_cpus() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def _lint_tasks(
    todo: list[Task], workers: int, finished, progress: Progress | None, done: int, total: int, warnings: list[str]
) -> int:
    """Lint the cache misses; return how many worker processes were started."""
    if not todo:
        return 0
    sizes = [len(t.data) if t.data is not None else _size(t.path) for t in todo]
    if workers > 1 and len(todo) > 1 and sum(sizes) >= POOL_MIN_BYTES:
        return _lint_in_pool(todo, sizes, workers, finished, progress, done, total, warnings)
    with _relaxed_gc():
        for task in todo:
            finished(task.index, lint_file(task.path, task.enabled, task.data, task.defer))
            done += 1
            if progress is not None:
                progress(done, total)
    return 0


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


# -- the pool --------------------------------------------------------------------------------


def chunk_tasks(todo: list[Task], sizes: list[int], workers: int) -> list[list[Task]]:
    """Largest files first, grouped into chunks of about equal bytes."""
    order = sorted(range(len(todo)), key=lambda i: (-sizes[i], todo[i].index))
    target = max(1, sum(sizes) // max(1, workers * CHUNKS_PER_WORKER))
    chunks: list[list[Task]] = []
    current: list[Task] = []
    current_bytes = 0
    for i in order:
        current.append(replace(todo[i], data=None))  # workers read the file themselves
        current_bytes += sizes[i]
        if current_bytes >= target:
            chunks.append(current)
            current, current_bytes = [], 0
    if current:
        chunks.append(current)
    return chunks


def _lint_in_pool(todo, sizes, workers, finished, progress, done, total, warnings) -> int:
    chunks = chunk_tasks(todo, sizes, workers)
    workers = min(workers, len(chunks))
    pending_tasks = {task.index: task for task in todo}
    try:
        executor = ProcessPoolExecutor(max_workers=workers, mp_context=_context(), initializer=_init_worker)
    except (OSError, ValueError, NotImplementedError) as exc:
        warnings.append(f"cannot start worker processes ({exc}); linting in one process")
        return _lint_tasks(todo, 1, finished, progress, done, total, warnings)
    broken = False
    try:
        try:
            futures = {executor.submit(_lint_chunk, chunk) for chunk in chunks}
        except OSError as exc:  # workers start on submit: fork can fail (no memory, process limit)
            executor.shutdown(wait=False, cancel_futures=True)
            warnings.append(f"cannot start worker processes ({exc.strerror or exc}); linting in one process")
            return _lint_tasks(todo, 1, finished, progress, done, total, warnings)
        while futures:
            completed, futures = wait(futures, return_when=FIRST_COMPLETED)
            for future in completed:
                try:
                    outcomes = future.result()
                except BrokenProcessPool:
                    broken = True
                    continue
                for index, outcome in outcomes:
                    finished(index, outcome)
                    pending_tasks.pop(index, None)
                done += len(outcomes)
                if progress is not None:
                    progress(done, total)
    except BaseException:
        executor.shutdown(wait=False, cancel_futures=True)
        raise
    executor.shutdown(wait=True)
    if pending_tasks:
        if broken:
            warnings.append("a worker process died; the files it held were linted again one by one")
        _lint_isolated(list(pending_tasks.values()), finished, progress, done, total)
    return workers


def _lint_isolated(tasks: list[Task], finished, progress, done, total) -> None:
    """One file at a time in a single worker, replaced whenever a file kills it."""
    executor = None
    try:
        for task in sorted(tasks):
            if executor is None:
                executor = ProcessPoolExecutor(max_workers=1, mp_context=_context(), initializer=_init_worker)
            try:
                [(index, outcome)] = executor.submit(_lint_chunk, [task]).result()
            except BrokenProcessPool:
                executor.shutdown(wait=False)
                executor = None
                index, outcome = (
                    task.index,
                    Outcome(None, [internal_error(task.path, "the worker process linting it died")], False),
                )
            finished(index, outcome)
            done += 1
            if progress is not None:
                progress(done, total)
    finally:
        if executor is not None:
            executor.shutdown(wait=True)


def _lint_chunk(chunk: list[Task]) -> list[tuple[int, Outcome]]:
    with _relaxed_gc():
        return [(task.index, lint_file(task.path, task.enabled, defer=task.defer)) for task in chunk]


def _init_worker() -> None:
    # Ctrl-C is the parent's to handle: it stops the pool. Workers ignoring it exit cleanly.
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _context():
    """``fork`` where it is safe (Linux, no other threads): workers start in milliseconds with
    everything imported. Elsewhere the platform's default."""
    if (
        sys.platform.startswith("linux")
        and threading.active_count() == 1
        and "fork" in multiprocessing.get_all_start_methods()
    ):
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context()


@contextmanager
def _relaxed_gc() -> Iterator[None]:
    """``ast.parse`` allocates millions of acyclic objects; with the default thresholds the
    cyclic collector runs thousands of times for nothing (~20% of lint time)."""
    threshold = gc.get_threshold()
    gc.set_threshold(max(threshold[0], 100_000), max(threshold[1], 50), max(threshold[2], 100))
    try:
        yield
    finally:
        gc.set_threshold(*threshold)
