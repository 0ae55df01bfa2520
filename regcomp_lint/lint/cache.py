"""Results of earlier runs, so an unchanged file costs a read and a hash, not a parse.

An entry is keyed on the file's absolute path and holds the blake2b hash of its content and its
diagnostics (files *with* findings are cached too). All entries for one settings fingerprint
live in one JSON file, ``<cache dir>/lint-<fingerprint>.json``, which also records the tool
version and a fingerprint of the tool's own code: when either differs, the file is ignored and
rewritten (a rule edited during development never serves stale results).

The cache can never change results or stop a run: an unreadable, truncated or foreign cache file
is treated as empty, an unwritable cache folder only costs speed, and writes go to a temporary
file renamed into place (``os.replace``), so parallel runs never see half a file. JSON and not
pickle: a cache folder can come from anywhere (a CI artifact, a shared checkout) and loading it
must not run code.

Where: ``$REGCOMP_CACHE_DIR``, else the ``cache-dir`` setting (relative to the settings root),
else ``.regcomp_cache/`` at the settings root.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
from functools import lru_cache
from pathlib import Path

from regcomp_lint.analysis.compiled_scope import FileScope
from regcomp_lint.diagnostics import Diagnostic
from regcomp_lint.files import reading
from regcomp_lint.lint.config import Settings

FORMAT = 3  # 2: an entry may end with the file's scope facts; 3: then with the rules put off to a second pass
ENV_VAR = "REGCOMP_CACHE_DIR"
DEFAULT_DIR = ".regcomp_cache"
_TAG = "Signature: 8a477f597d28d172789f06886806bc55\n# This folder is a cache made by regcomp-lint.\n"


def content_digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def cache_dir(settings: Settings) -> Path:
    from_env = os.environ.get(ENV_VAR)
    if from_env:
        return Path(from_env).expanduser()
    if settings.cache_dir:
        configured = Path(settings.cache_dir).expanduser()
        return configured if configured.is_absolute() else Path(settings.root) / configured
    return Path(settings.root) / DEFAULT_DIR


@lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """Names, sizes and modification times of the tool's own source files."""
    from regcomp_lint import __version__

    package = Path(__file__).resolve().parents[1]  # the whole regcomp_lint package
    digest = hashlib.blake2b(__version__.encode(), digest_size=8)
    for path in sorted(package.rglob("*.py")):
        try:
            stat = path.stat()
        except OSError:
            continue
        digest.update(f"{path.relative_to(package).as_posix()}:{stat.st_size}:{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def _diagnostic_to_json(diag: Diagnostic) -> dict:
    data = diag.to_json()
    data["url"] = diag.url  # keep "" so a cached result equals a fresh one
    del data["filename"], data["noqa_row"]
    return data


def _dependencies_unchanged(deps, digests: dict[str, str]) -> bool:
    """True when every other file the cached findings were computed from still has its digest.

    ``digests`` memoises each other file's digest for the run: in a large tree hundreds of
    entries depend on the same few modules (transformers: 4,416 references to 114 files), and
    reading and hashing each once keeps a warm run a read per file.
    """
    try:
        for other, digest in deps:
            current = digests.get(other)
            if current is None:
                try:
                    current = content_digest(reading.read_bytes(other))
                except OSError:
                    current = ""
                digests[other] = current
            if current != digest:
                return False
    except (TypeError, ValueError):
        return False  # damaged entry
    return True


class LintCache:
    """One settings fingerprint's entries: ``{abs path: [digest, [diagnostic json, ...], deps?, scope?, pending?]}``.

    ``pending``: the codes of scope-limited rules the lint put off (engine.Deferral): the
    diagnostics lack their findings, which a run that finds the file compiled adds (``complete``)."""

    def __init__(self, path: Path, key: dict, entries: dict | None = None, problem: str | None = None) -> None:
        self.path = path
        self.key = key
        self.entries: dict[str, list] = entries if entries is not None else {}
        #: Why an existing cache file was not usable (for a warning); None when it was fine.
        self.problem = problem
        self.dirty = entries is None
        #: other files' digests as read during this run (see _dependencies_unchanged)
        self._dependency_digests: dict[str, str] = {}

    @classmethod
    def open(cls, settings: Settings) -> LintCache:
        """Load the cache for these settings; never raises."""
        from regcomp_lint import __version__

        key = {"format": FORMAT, "version": __version__, "code": code_fingerprint(), "settings": settings.fingerprint()}
        path = cache_dir(settings) / f"lint-{key['settings']}.json"
        try:
            raw = path.read_bytes()
        except (FileNotFoundError, NotADirectoryError):  # no cache yet (saving will say if it cannot be made)
            return cls(path, key)
        except OSError as exc:
            return cls(path, key, problem=f"cannot read the cache {path}: {exc.strerror or exc}")
        try:
            data = json.loads(raw)
        except (ValueError, RecursionError):
            return cls(path, key, problem=f"the cache {path} is damaged; rebuilding it")
        if not isinstance(data, dict) or not isinstance(data.get("entries"), dict):
            return cls(path, key, problem=f"the cache {path} is damaged; rebuilding it")
        if {name: data.get(name) for name in key} != key:
            return cls(path, key)  # another version of the tool: start afresh, silently
        return cls(path, key, data["entries"])

    def has(self, path: str) -> bool:
        return path in self.entries

    def lookup(self, path: str, digest: str, filename: str) -> list[Diagnostic] | None:
        """The cached diagnostics (reported under ``filename``), or None on a miss."""
        entry = self.entries.get(path)
        if type(entry) is not list or len(entry) not in (2, 3, 4, 5) or entry[0] != digest:
            return None
        if len(entry) >= 3 and not _dependencies_unchanged(entry[2], self._dependency_digests):
            return None
        if not entry[1]:
            return []
        try:
            return [Diagnostic.from_json({**item, "filename": filename}) for item in entry[1]]
        except (KeyError, TypeError, ValueError, AttributeError):
            return None  # a hand-edited or damaged entry: lint again

    def store(
        self,
        path: str,
        digest: str,
        diagnostics: list[Diagnostic],
        depends_on=(),
        scope: FileScope | None = None,
        pending: frozenset[str] = frozenset(),
    ) -> None:
        entry: list = [digest, [_diagnostic_to_json(d) for d in diagnostics]]
        if depends_on or scope is not None or pending:
            entry.append([list(dep) for dep in depends_on])
        if scope is not None or pending:
            entry.append([scope.compiles, list(scope.imports)] if scope is not None else None)
        if pending:
            entry.append(sorted(pending))
        self.entries[path] = entry
        self.dirty = True

    def pending(self, path: str) -> frozenset[str]:
        """The codes whose findings the cached diagnostics lack (put off to a second pass)."""
        entry = self.entries.get(path)
        if type(entry) is not list or len(entry) != 5 or type(entry[4]) is not list:
            return frozenset()
        return frozenset(code for code in entry[4] if type(code) is str)

    def complete(self, path: str, digest: str, diagnostics: list[Diagnostic], depends_on=()) -> None:
        """The second pass's answer for a file stored with pending codes: ``diagnostics`` are now
        all of them; ``depends_on`` joins the first pass's dependencies. Nothing when the
        entry is gone or for other content (the file changed between the passes)."""
        entry = self.entries.get(path)
        if type(entry) is not list or len(entry) != 5 or entry[0] != digest:
            return
        try:
            deps = {tuple(dep) for dep in entry[2]} | set(depends_on)
        except TypeError:
            return
        self.store(path, digest, diagnostics, tuple(sorted(deps)), self.scope(path))

    def scope(self, path: str) -> FileScope | None:
        """What the lint of the file (as last cached) learned for the scope question, if kept."""
        entry = self.entries.get(path)
        if type(entry) is not list or len(entry) not in (4, 5) or entry[3] is None:
            return None
        try:
            compiling, imports = entry[3]
            if type(compiling) is bool and all(type(name) is str for name in imports):
                return FileScope(compiling, tuple(imports))
        except (TypeError, ValueError):
            pass
        return None  # damaged: the scope question reads the file instead

    def prune(self, seen: set[str], roots: list[str]) -> None:
        """Drop entries of files that were not linted although they were in scope (under a
        walked folder: deleted, renamed or now excluded) or that no longer exist. Entries of
        files outside this run's scope stay, so linting one file keeps the rest of the cache."""
        prefixes = tuple(root if root.endswith(os.sep) else root + os.sep for root in roots)
        for path in list(self.entries):
            if path in seen:
                continue
            if (prefixes and path.startswith(prefixes)) or not os.path.exists(path):
                del self.entries[path]
                self.dirty = True

    def save(self) -> str | None:
        """Write atomically when something changed; the reason when it could not be written."""
        if not self.dirty:
            return None
        payload = json.dumps({**self.key, "entries": self.entries}, separators=(",", ":")).encode()
        folder = self.path.parent
        tmp_name = None
        try:
            _make_folder(folder)
            _remove_stale_temporaries(folder)
            candidate = str(folder / f".lint-{os.getpid()}-{secrets.token_hex(4)}.tmp")
            fd = os.open(
                candidate, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666
            )  # the umask applies, unlike mkstemp's 0600
            tmp_name = candidate
            with os.fdopen(fd, "wb") as handle:
                handle.write(payload)
            os.replace(tmp_name, self.path)
            tmp_name = None
        except OSError as exc:
            return f"cannot write the cache in {folder}: {exc.strerror or exc} (results are unaffected; use --no-cache or set {ENV_VAR})"
        finally:
            if tmp_name is not None:
                try:
                    os.unlink(tmp_name)
                except OSError:
                    pass
        self.dirty = False
        return None


def _remove_stale_temporaries(folder: Path) -> None:
    """Delete ``.lint-<pid>-*.tmp`` files left by a run that was killed while saving."""
    from regcomp_lint.files.writeback import pid_alive

    try:
        names = [name for name in os.listdir(folder) if name.startswith(".lint-") and name.endswith(".tmp")]
    except OSError:
        return
    for name in names:
        pid_text = name[len(".lint-") :].split("-", 1)[0]
        if pid_text.isdigit() and not pid_alive(int(pid_text)):
            try:
                os.unlink(folder / name)
            except OSError:
                pass


def _make_folder(folder: Path) -> None:
    """Create the cache folder, marked as a cache for backup tools and ignored by git."""
    if folder.is_dir():
        return
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in (("CACHEDIR.TAG", _TAG), (".gitignore", "# created by regcomp-lint\n*\n")):
        try:
            (folder / name).write_text(text)
        except OSError:
            pass
