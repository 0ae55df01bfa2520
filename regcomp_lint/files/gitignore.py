"""A small ``.gitignore`` matcher (git's own rules), so discovery skips what git skips.

Static lint may depend on the standard library, libcst, click and networkx only, so this is
written here instead of using ``pathspec``. Supported, as documented in ``gitignore(5)``:
comments, escaped ``\\#``/``\\!``/trailing spaces, negation ``!``, anchored patterns (a ``/``
at the start or in the middle), directory-only patterns (trailing ``/``), ``*``, ``?``,
``[...]`` classes and ``**`` (leading ``**/``, inner ``/**/``, trailing ``/**``).

Precedence follows git: ``.git/info/exclude`` is the weakest, then ``.gitignore`` files from the
repository root down to the deepest directory; within one file the last matching line wins. A
directory that is ignored is pruned, so nothing under it can be re-included (git behaves the
same way).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from functools import lru_cache


@dataclass(frozen=True)
class IgnoreRule:
    pattern: str  # the line as written (for messages and tests)
    regex: re.Pattern
    negate: bool
    dir_only: bool


def translate(pattern: str, anchored: bool) -> str:
    """Regex (for ``fullmatch`` on a ``/``-separated relative path) equivalent to a git glob."""
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        char = pattern[i]
        if char == "*":
            j = i
            while j < n and pattern[j] == "*":
                j += 1
            starts_segment = i == 0 or pattern[i - 1] == "/"
            ends_segment = j == n or pattern[j] == "/"
            if j - i >= 2 and starts_segment and ends_segment:
                if j == n:
                    out.append(".*")  # trailing "**": everything inside
                else:
                    out.append("(?:.*/)?")  # "**/": zero or more directories
                    j += 1
            else:
                out.append("[^/]*")
            i = j
        elif char == "?":
            out.append("[^/]")
            i += 1
        elif char == "[":
            cls, i = _char_class(pattern, i)
            out.append(cls)
        elif char == "\\" and i + 1 < n:
            out.append(re.escape(pattern[i + 1]))
            i += 2
        else:
            out.append(re.escape(char))
            i += 1
    prefix = "" if anchored else "(?:.*/)?"
    return prefix + "".join(out)


def _char_class(pattern: str, start: int) -> tuple[str, int]:
    """Translate ``[...]`` at ``start``; a ``[`` without its ``]`` is a literal."""
    j = start + 1
    negate = j < len(pattern) and pattern[j] in "!^"
    if negate:
        j += 1
    if j < len(pattern) and pattern[j] == "]":
        j += 1
    end = pattern.find("]", j)
    if end == -1:
        return re.escape("["), start + 1
    body = pattern[start + 1 + negate : end]
    parts = []
    k = 0
    while k < len(body):
        if body[k] == "\\" and k + 1 < len(body):
            parts.append(re.escape(body[k + 1]))
            k += 2
            continue
        parts.append("-" if body[k] == "-" else re.escape(body[k]))
        k += 1
    inner = "".join(parts)
    return ("[^/" + inner + "]" if negate else "[" + inner + "]"), end + 1


def parse_line(line: str) -> IgnoreRule | None:
    """One ``.gitignore`` line as a rule; None for blank lines and comments."""
    line = line.rstrip("\r\n")
    while line.endswith(" ") and not line.endswith("\\ "):
        line = line[:-1]
    if not line or line.startswith("#"):
        return None
    original = line
    negate = line.startswith("!")
    if negate:
        line = line[1:]
    elif line.startswith("\\!") or line.startswith("\\#"):
        line = line[1:]
    dir_only = line.endswith("/") and not line.endswith("\\/")
    line = line.rstrip("/") if dir_only else line
    anchored = "/" in line
    line = line.lstrip("/")
    if not line:
        return None
    return IgnoreRule(original, _compile(line, anchored), negate, dir_only)


@lru_cache(maxsize=4096)
def _compile(pattern: str, anchored: bool) -> re.Pattern:
    return re.compile(translate(pattern, anchored), re.DOTALL)


@dataclass(frozen=True)
class IgnoreFile:
    """The rules of one ignore file; patterns are relative to ``base`` (an absolute folder)."""

    base: str
    rules: tuple[IgnoreRule, ...]

    @classmethod
    def from_text(cls, base: str, text: str) -> IgnoreFile:
        rules = tuple(rule for rule in map(parse_line, text.splitlines()) if rule is not None)
        return cls(os.path.abspath(base), rules)

    @classmethod
    def read(cls, path: str, base: str | None = None) -> IgnoreFile | None:
        """The file's rules, or None when it is absent, unreadable or has no rules."""
        try:
            with open(path, "rb") as handle:
                text = handle.read().decode("utf-8", errors="replace")
        except OSError:
            return None
        parsed = cls.from_text(base if base is not None else os.path.dirname(path), text)
        return parsed if parsed.rules else None

    def decide(self, rel: str, is_dir: bool) -> bool | None:
        """True ignored, False re-included by a ``!`` line, None when no line matches."""
        for rule in reversed(self.rules):
            if rule.dir_only and not is_dir:
                continue
            if rule.regex.fullmatch(rel):
                return not rule.negate
        return None


class IgnoreStack:
    """The ignore files that apply inside one folder, weakest first."""

    def __init__(self, files: tuple[IgnoreFile, ...] = ()) -> None:
        self.files = files

    def __bool__(self) -> bool:
        return bool(self.files)

    def push(self, ignore_file: IgnoreFile | None) -> IgnoreStack:
        return self if ignore_file is None else IgnoreStack(self.files + (ignore_file,))

    def ignored(self, path: str, is_dir: bool) -> bool:
        """Is the absolute ``path`` ignored? The strongest file with a matching line decides."""
        for ignore_file in reversed(self.files):
            rel = _relative(path, ignore_file.base)
            if rel is None:
                continue
            verdict = ignore_file.decide(rel, is_dir)
            if verdict is not None:
                return verdict
        return False


def _relative(path: str, base: str) -> str | None:
    prefix = base if base.endswith(os.sep) else base + os.sep
    if not path.startswith(prefix):
        return None
    rel = path[len(prefix) :]
    return rel.replace(os.sep, "/") if os.sep != "/" else rel


def repository_root(folder: str) -> str | None:
    """The nearest folder at or above ``folder`` that holds ``.git`` (a folder or a file)."""
    current = os.path.abspath(folder)
    while True:
        if os.path.exists(os.path.join(current, ".git")):
            return current
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent


def _git_dir(repo: str) -> str:
    """``.git`` itself, or the folder a ``.git`` file (worktree, submodule) points to."""
    dot_git = os.path.join(repo, ".git")
    if os.path.isfile(dot_git):
        try:
            with open(dot_git, encoding="utf-8", errors="replace") as handle:
                first = handle.readline().strip()
        except OSError:
            return dot_git
        if first.startswith("gitdir:"):
            return os.path.join(repo, first.split(":", 1)[1].strip())
    return dot_git


def stack_for(folder: str) -> IgnoreStack:
    """Ignore files that apply to entries of ``folder`` before its own ``.gitignore`` is read:
    the repository's ``info/exclude`` and the ``.gitignore`` files of the folders above it, up to
    the repository root. Outside a repository: nothing (only the walked folders' own files)."""
    folder = os.path.abspath(folder)
    repo = repository_root(folder)
    if repo is None:
        return IgnoreStack()
    stack = IgnoreStack().push(IgnoreFile.read(os.path.join(_git_dir(repo), "info", "exclude"), base=repo))
    parents = []
    current = folder
    while current != repo:
        current = os.path.dirname(current)
        parents.append(current)
    for parent in reversed(parents):
        stack = stack.push(IgnoreFile.read(os.path.join(parent, ".gitignore")))
    return stack
