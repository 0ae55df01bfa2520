"""From the paths a user typed to the list of files to lint.

- A folder is walked recursively for ``*.py`` and ``*.pyi`` and for the files compile settings
  live in (YAML, JSON, shell scripts, Makefiles, Dockerfiles, ``.env``: see ``kinds``); entries matching ``exclude`` /
  ``extend-exclude`` or (with ``respect-gitignore``) a ``.gitignore`` are skipped, folders
  pruned. The folder typed itself is never excluded: the user asked for it (ruff does the same).
- A file typed explicitly is linted whatever its extension (a script named ``train`` too), unless
  it or a folder above it inside the settings root matches an exclude pattern, so pre-commit,
  which passes every staged file, honours ``exclude`` (ruff's ``force-exclude``).
- Symlinked folders met during the walk are not followed (like git), so links cannot loop.
- The order is deterministic (sorted names, depth first) and every file appears once, however
  the given paths overlap.

Exclude patterns: a pattern without ``/`` matches the name of any file or folder (``build``,
``*_pb2.py``); a pattern with ``/`` is a glob relative to the settings root (``tests/data``,
``src/**/generated_*.py``) and excludes a matching folder with everything in it.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from regcomp_lint.files.gitignore import IgnoreFile, IgnoreStack, stack_for, translate
from regcomp_lint.files.kinds import PYTHON_SUFFIXES, is_settings_file

if TYPE_CHECKING:  # only the type: discovery reads four fields and never imports the lint layer
    from regcomp_lint.lint.config import Settings


@dataclass
class Discovered:
    files: list[str] = field(default_factory=list)  # paths as shown to the user
    missing: list[str] = field(default_factory=list)  # typed paths that do not exist
    roots: list[str] = field(default_factory=list)  # absolute folders that were walked
    errors: list[str] = field(default_factory=list)  # folders that could not be read


class ExcludeMatcher:
    """``exclude`` + ``extend-exclude`` of one Settings, compiled once."""

    def __init__(self, patterns: tuple[str, ...] | list[str], root: str) -> None:
        self.root = os.path.abspath(root)
        names, paths = [], []
        for raw in patterns:
            pattern = raw.strip()
            while pattern.startswith("./"):
                pattern = pattern[2:]
            pattern = pattern.rstrip("/")
            if not pattern:
                continue
            if "/" in pattern:
                paths.append(translate(pattern.lstrip("/"), anchored=True))
            else:
                names.append(translate(pattern, anchored=True))
        self._names = re.compile("|".join(names), re.DOTALL) if names else None
        self._paths = re.compile("|".join(paths), re.DOTALL) if paths else None

    def __bool__(self) -> bool:
        return self._names is not None or self._paths is not None

    def matches(self, path: str, name: str) -> bool:
        """Does this file or folder (absolute ``path``, base ``name``) match a pattern?"""
        if self._names is not None and self._names.fullmatch(name):
            return True
        if self._paths is not None:
            rel = self._relative(path)
            if rel is not None and self._paths.fullmatch(rel):
                return True
        return False

    def excludes_explicit(self, path: str) -> bool:
        """A typed file: excluded when it, or a folder above it inside the root, matches."""
        path = os.path.abspath(path)
        if self.matches(path, os.path.basename(path)):
            return True
        current = os.path.dirname(path)
        while self._relative(current):
            if self.matches(current, os.path.basename(current)):
                return True
            current = os.path.dirname(current)
        return False

    def _relative(self, path: str) -> str | None:
        prefix = self.root if self.root.endswith(os.sep) else self.root + os.sep
        if not path.startswith(prefix):
            return None
        rel = path[len(prefix) :]
        return rel.replace(os.sep, "/") if os.sep != "/" else rel


def discover(paths: list[str], settings: Settings) -> Discovered:
    found = Discovered()
    excluder = ExcludeMatcher(tuple(settings.exclude) + tuple(settings.extend_exclude), settings.root)
    seen: set[str] = set()

    def add(display: str, absolute: str) -> None:
        if absolute not in seen:
            seen.add(absolute)
            found.files.append(display)

    for typed in paths:
        path = str(typed)
        absolute = os.path.abspath(path)
        if os.path.isdir(path):
            found.roots.append(absolute)
            _walk(path, absolute, excluder, settings.respect_gitignore, add, found.errors)
        elif os.path.exists(path):
            if not excluder.excludes_explicit(absolute):
                add(path, absolute)
        else:
            found.missing.append(path)
    return found


def _walk(
    display_root: str, root: str, excluder: ExcludeMatcher, respect_gitignore: bool, add, errors: list[str]
) -> None:
    """Depth first, sorted; a folder's files come before its sub-folders."""
    start_stack = stack_for(root) if respect_gitignore else IgnoreStack()
    pending: list[tuple[str, str, IgnoreStack]] = [(display_root, root, start_stack)]
    while pending:
        display_dir, folder, ignores = pending.pop()
        if respect_gitignore:
            ignores = ignores.push(IgnoreFile.read(os.path.join(folder, ".gitignore")))
        try:
            with os.scandir(folder) as listing:
                entries = sorted(listing, key=lambda entry: entry.name)
        except OSError as exc:
            errors.append(f"{display_dir}: cannot read folder: {exc.strerror or exc}")
            continue
        subfolders = []
        for entry in entries:
            name = entry.name
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
                is_file = not is_dir and entry.is_file()  # follows a link to a file
            except OSError:
                continue
            if not is_dir and not (is_file and (name.endswith(PYTHON_SUFFIXES) or is_settings_file(name))):
                continue  # other files, links to folders, broken links
            path = os.path.join(folder, name)
            if excluder and excluder.matches(path, name):
                continue
            if ignores and ignores.ignored(path, is_dir):
                continue
            shown = os.path.normpath(os.path.join(display_dir, name))
            if is_dir:
                subfolders.append((shown, path, ignores))
            else:
                add(shown, path)
        pending.extend(reversed(subfolders))


def shown_path(path: str) -> str:
    """``path`` as the user would type it: relative to the working directory when it is below it
    (messages about a sibling module then read like the paths the user passed, whatever the cwd)."""
    relative = os.path.relpath(path)
    return path if relative.startswith("..") else relative
