"""Settings: defaults, ``[tool.regcomp-lint]`` in pyproject.toml, and command-line overrides.

Resolution order (later wins): defaults → the nearest ``pyproject.toml`` with a
``[tool.regcomp-lint]`` table (or ``--config PATH``) → command-line flags.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import re
import sys
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path

from regcomp_lint.checks import ALL_RULES
from regcomp_lint.diagnostics import Diagnostic, Severity
from regcomp_lint.lint import selection

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

KNOWN_KEYS = (
    "select",
    "ignore",
    "extend-select",
    "per-file-ignores",
    "exclude",
    "extend-exclude",
    "respect-gitignore",
    "cache-dir",
    "fix-exclude",
    "severity",
    "fail-on",
    "prefer-steady-state",
)
DEFAULT_EXCLUDE = (
    ".git",
    ".hg",
    ".svn",
    ".venv",
    "venv",
    ".tox",
    ".nox",
    "__pycache__",
    "build",
    "dist",
    "node_modules",
    ".mypy_cache",
    ".ruff_cache",
    ".pytest_cache",
    ".regcomp_cache",
    ".eggs",
    "site-packages",
)


LEVELS = tuple(level.value for level in Severity)


class ConfigError(Exception):
    """A configuration problem the user must fix; the CLI prints it and exits 2."""


def _names() -> dict[str, str]:
    return {rule.name: code for code, rule in ALL_RULES.items()}


@dataclass(frozen=True)
class Settings:
    select: tuple[str, ...] = ("ALL",)
    ignore: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    exclude: tuple[str, ...] = DEFAULT_EXCLUDE
    extend_exclude: tuple[str, ...] = ()
    respect_gitignore: bool = True
    cache_dir: str | None = None
    #: Globs (like ``per-file-ignores``') of files ``regcomp-fix`` never converts (its lint fixes still apply).
    fix_exclude: tuple[str, ...] = ()
    #: ``[tool.regcomp-lint.severity]``: (selector, level) pairs that override rules' own
    #: severities; later pairs win, so ``RC2 = "info"`` then ``RC210 = "error"`` works.
    severity: tuple[tuple[str, str], ...] = ()
    #: The least severe finding that makes the run exit 1 (``--fail-on``); info findings (advice)
    #: do not fail a run unless asked.
    fail_on: str = Severity.WARNING.value
    #: The project excludes compile time on purpose (long runs, steady-state speed first): advice
    #: for a faster cold start (RC501) is off, even when selected.
    prefer_steady_state: bool = False
    #: Where the settings came from (a pyproject.toml path) and the folder paths are relative to.
    config_file: str | None = None
    root: str = field(default_factory=os.getcwd)
    #: The enabled codes, resolved (and validated) once in __post_init__.
    _enabled: frozenset[str] = field(init=False, repr=False, compare=False)
    _severities: dict[str, Severity] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        try:
            enabled = selection.resolve(self.select, self.extend_select, self.ignore, ALL_RULES, _names())
            for _pattern, codes in self.per_file_ignores:
                selection.resolve(codes, (), (), ALL_RULES, _names())
            severities = self._resolve_severities()
        except selection.UnknownSelector as exc:
            where = f" in {self.config_file}" if self.config_file else ""
            raise ConfigError(
                f"unknown rule selector {str(exc)!r}{where}; valid selectors are ALL, a code prefix such as RC1, a code such as RC101, or a rule name (see `regcomp-lint rule --all`)"
            ) from None
        if self.prefer_steady_state:
            enabled = frozenset(code for code in enabled if not ALL_RULES[code].cold_start_advice)
        object.__setattr__(self, "_enabled", enabled)
        object.__setattr__(self, "_severities", severities)
        if self.fail_on not in LEVELS:
            raise ConfigError(f"`fail-on` must be one of {', '.join(LEVELS)}, not {self.fail_on!r}")

    def _resolve_severities(self) -> dict[str, Severity]:
        severities = {code: rule.severity for code, rule in ALL_RULES.items()}
        for selector, level in self.severity:
            if level not in LEVELS:
                where = f" in {self.config_file}" if self.config_file else ""
                raise ConfigError(f"severity {level!r} for {selector!r}{where} is not one of {', '.join(LEVELS)}")
            for code in selection.resolve((selector,), (), (), ALL_RULES, _names()):
                severities[code] = Severity(level)
        return severities

    def explicitly_selected(self, code: str) -> bool:
        """``code`` is enabled by a selector that names it (a code, prefix or name), not by ``ALL``."""
        if code not in self.enabled:
            return False
        return any(
            selector.strip().upper() != "ALL" and code in selection.expand(selector, ALL_RULES, _names())
            for selector in self.select + self.extend_select
        )

    def severity_of(self, code: str) -> Severity:
        """The rule's severity after ``[tool.regcomp-lint.severity]``."""
        return self._severities.get(code, Severity.ERROR)

    def apply_severities(self, diagnostics: list[Diagnostic]) -> list[Diagnostic]:
        """Findings with the configured severity (a rule's own, unless the config overrides it)."""
        out = []
        for diag in diagnostics:
            level = self.severity_of(diag.code)
            out.append(diag if diag.severity is level else replace(diag, severity=level))
        return out

    def fails(self, diagnostics: list[Diagnostic]) -> bool:
        """Does any finding reach the ``fail-on`` level (so the run exits 1)?"""
        threshold = Severity(self.fail_on).rank
        return any(diag.severity.rank >= threshold for diag in diagnostics)

    @property
    def enabled(self) -> frozenset[str]:
        return self._enabled

    def enabled_for(self, filename: str) -> frozenset[str]:
        """Enabled codes for one file, after ``per-file-ignores``."""
        if not self.per_file_ignores:
            return self.enabled
        rel = _relative(filename, self.root)
        removed: set[str] = set()
        for pattern, codes in self.per_file_ignores:
            if _glob_match(rel, pattern):
                removed |= selection.resolve(codes, (), (), ALL_RULES, _names())
        return self.enabled - removed

    def excludes_from_conversion(self, filename: str) -> bool:
        """``filename`` matches a ``fix-exclude`` pattern: ``regcomp-fix`` leaves it unconverted."""
        rel = _relative(filename, self.root)
        return any(_glob_match(rel, pattern) for pattern in self.fix_exclude)

    def fingerprint(self) -> str:
        """Hash of everything that changes results (for the cache key)."""
        from regcomp_lint import __version__

        payload = json.dumps([__version__, sorted(self.enabled), self.per_file_ignores, self.root], sort_keys=True)
        return hashlib.sha256(payload.encode()).hexdigest()[:16]

    def with_overrides(self, **changes) -> Settings:
        return replace(self, **changes)

    def to_json(self) -> dict:
        return {
            "config_file": self.config_file,
            "root": self.root,
            "select": list(self.select),
            "extend-select": list(self.extend_select),
            "ignore": list(self.ignore),
            "per-file-ignores": {p: list(c) for p, c in self.per_file_ignores},
            "exclude": list(self.exclude),
            "extend-exclude": list(self.extend_exclude),
            "respect-gitignore": self.respect_gitignore,
            "cache-dir": self.cache_dir,
            "fix-exclude": list(self.fix_exclude),
            "severity": dict(self.severity),
            "fail-on": self.fail_on,
            "prefer-steady-state": self.prefer_steady_state,
            "enabled": sorted(self.enabled),
        }


def _relative(filename: str, root: str) -> str:
    """Path relative to the root; a file outside it keeps its absolute path, so patterns
    with a ``/`` (relative to the root) cannot match it by accident."""
    absolute = Path(os.path.abspath(filename))
    try:
        return absolute.relative_to(os.path.abspath(root)).as_posix()
    except ValueError:
        return absolute.as_posix()


def _glob_match(rel: str, pattern: str) -> bool:
    pattern = pattern.rstrip("/")
    if fnmatch.fnmatchcase(rel, pattern) or fnmatch.fnmatchcase(rel, pattern + "/*"):
        return True
    if "**" in pattern:  # git-style: "**/" is zero or more folders; a matching folder covers its files
        regex = _double_star_regex(pattern)
        parts = rel.split("/")
        if any(regex.fullmatch("/".join(parts[:end])) for end in range(1, len(parts) + 1)):
            return True
    if "/" not in pattern:
        return any(fnmatch.fnmatchcase(part, pattern) for part in rel.split("/"))
    return False


@lru_cache(maxsize=256)
def _double_star_regex(pattern: str) -> re.Pattern:
    from regcomp_lint.files.gitignore import translate

    return re.compile(translate(pattern.lstrip("/"), anchored=True), re.DOTALL)


def find_pyproject(start: str) -> Path | None:
    """Nearest pyproject.toml with a [tool.regcomp-lint] table, from ``start`` upwards."""
    path = Path(start).resolve()
    if path.is_file():
        path = path.parent
    for folder in [path, *path.parents]:
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            try:
                text = candidate.read_text(encoding="utf-8")
                data = tomllib.loads(text)
            except (OSError, UnicodeDecodeError):
                continue
            except tomllib.TOMLDecodeError as exc:
                if "tool.regcomp-lint" in text:  # our settings are in there: say so, do not skip them
                    raise ConfigError(f"{candidate}: invalid TOML: {exc}") from None
                continue
            if "regcomp-lint" in data.get("tool", {}):
                return candidate
    return None


def _str_list(value, key: str, where: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: `{key}` must be a list of strings")
    return tuple(value)


def load(config_path: str | None = None, start: str = ".") -> Settings:
    """Settings from ``config_path`` or the nearest pyproject.toml; defaults when there is none."""
    path: Path | None
    if config_path is not None:
        path = Path(config_path)
        if not path.is_file():
            raise ConfigError(f"config file not found: {config_path}")
    else:
        path = find_pyproject(start)
        if path is None:  # like ruff: the working folder is the root (and holds the cache)
            return Settings(root=os.getcwd())
    where = str(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{where}: invalid TOML: {exc}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{where}: cannot read: {exc}") from None
    table = data.get("tool", {}).get("regcomp-lint", data if path.name != "pyproject.toml" else {})
    if not isinstance(table, dict):
        raise ConfigError(f"{where}: [tool.regcomp-lint] must be a table")
    unknown = sorted(set(table) - set(KNOWN_KEYS))
    if unknown:
        raise ConfigError(
            f"{where}: unknown key(s) in [tool.regcomp-lint]: {', '.join(unknown)}; known keys: {', '.join(KNOWN_KEYS)}"
        )
    kwargs: dict = {"config_file": where, "root": str(path.parent.resolve())}
    for key in ("select", "ignore", "extend-select", "exclude", "extend-exclude", "fix-exclude"):
        if key in table:
            kwargs[key.replace("-", "_")] = _str_list(table[key], key, where)
    if "per-file-ignores" in table:
        pfi = table["per-file-ignores"]
        if not isinstance(pfi, dict):
            raise ConfigError(f"{where}: `per-file-ignores` must be a table of glob = [codes]")
        kwargs["per_file_ignores"] = tuple(
            (pattern, _str_list(codes, f"per-file-ignores.{pattern}", where)) for pattern, codes in pfi.items()
        )
    if "severity" in table:
        levels = table["severity"]
        if not isinstance(levels, dict) or not all(isinstance(v, str) for v in levels.values()):
            raise ConfigError(f'{where}: `severity` must be a table of selector = "error" | "warning" | "info"')
        kwargs["severity"] = tuple(levels.items())
    if "fail-on" in table:
        if table["fail-on"] not in LEVELS:
            raise ConfigError(f"{where}: `fail-on` must be one of {', '.join(LEVELS)}")
        kwargs["fail_on"] = table["fail-on"]
    if "prefer-steady-state" in table:
        if not isinstance(table["prefer-steady-state"], bool):
            raise ConfigError(f"{where}: `prefer-steady-state` must be true or false")
        kwargs["prefer_steady_state"] = table["prefer-steady-state"]
    if "respect-gitignore" in table:
        if not isinstance(table["respect-gitignore"], bool):
            raise ConfigError(f"{where}: `respect-gitignore` must be true or false")
        kwargs["respect_gitignore"] = table["respect-gitignore"]
    if "cache-dir" in table:
        if not isinstance(table["cache-dir"], str):
            raise ConfigError(f"{where}: `cache-dir` must be a string")
        kwargs["cache_dir"] = table["cache-dir"]
    return Settings(**kwargs)
