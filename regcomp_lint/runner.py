"""Lint many files: discovery, (later: cache and process pool), results in a stable order."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from regcomp_lint.config import Settings
from regcomp_lint.diagnostics import Diagnostic
from regcomp_lint.engine import lint_bytes


@dataclass
class RunResult:
    diagnostics: list[Diagnostic] = field(default_factory=list)
    files: int = 0
    errors: list[str] = field(default_factory=list)  # paths that could not be read at all


def discover(paths: list[str], settings: Settings) -> list[str]:
    found: list[str] = []
    for path in paths:
        if os.path.isdir(path):
            for dirpath, dirnames, filenames in os.walk(path):
                dirnames[:] = sorted(d for d in dirnames if d not in settings.exclude)
                found.extend(os.path.join(dirpath, f) for f in sorted(filenames) if f.endswith((".py", ".pyi")))
        else:
            found.append(path)
    return found


def lint_file(path: str, settings: Settings) -> list[Diagnostic]:
    with open(path, "rb") as handle:
        data = handle.read()
    return lint_bytes(data, path, settings.enabled_for(path))


def run(paths: list[str], settings: Settings, **options) -> RunResult:
    result = RunResult()
    for path in discover(paths, settings):
        result.files += 1
        try:
            result.diagnostics.extend(lint_file(path, settings))
        except OSError as exc:
            result.errors.append(f"{path}: {exc.strerror or exc}")
    result.diagnostics.sort(key=Diagnostic.sort_key)
    return result
