"""What kind of file a path is: Python, or one of the formats compile settings also live in.

Decided by name (``train.py``, ``default_config.yaml``, ``run.sh``, ``Makefile``,
``Dockerfile``, ``.env``), and, for a file typed without a telling name, by a ``#!`` line
naming a shell: the same way pre-commit's ``identify`` tags files.
"""

from __future__ import annotations

import enum
import os


class Kind(str, enum.Enum):
    PYTHON = "python"
    YAML = "yaml"
    JSON = "json"
    SHELL = "shell"
    MAKEFILE = "makefile"
    DOCKERFILE = "dockerfile"
    DOTENV = "dotenv"


PYTHON_SUFFIXES = (".py", ".pyi")
_BY_SUFFIX = {
    ".yaml": Kind.YAML,
    ".yml": Kind.YAML,
    ".json": Kind.JSON,
    ".sh": Kind.SHELL,
    ".bash": Kind.SHELL,
    ".zsh": Kind.SHELL,
    ".mk": Kind.MAKEFILE,
    ".dockerfile": Kind.DOCKERFILE,
    ".env": Kind.DOTENV,
}
_MAKEFILES = frozenset({"makefile", "gnumakefile"})
_DOCKERFILES = ("dockerfile", "containerfile")
_SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh"})


def kind_by_name(path: str) -> Kind | None:
    """The kind a file's name says, or None when the name says nothing (``train``, ``notes.txt``)."""
    name = os.path.basename(path)
    lower = name.lower()
    if lower.endswith(PYTHON_SUFFIXES):
        return Kind.PYTHON
    if lower in _MAKEFILES:
        return Kind.MAKEFILE
    if lower.startswith(_DOCKERFILES) and (lower in _DOCKERFILES or lower.split(".", 1)[0] in _DOCKERFILES):
        return Kind.DOCKERFILE
    if lower == ".env" or lower.startswith(".env."):
        return Kind.DOTENV
    return _BY_SUFFIX.get(os.path.splitext(lower)[1])


def kind_of(path: str, text: str = "") -> Kind:
    """The kind of a file to lint. A name that says nothing is Python (a script named ``train``
    is linted as one), unless its ``#!`` line runs a shell."""
    kind = kind_by_name(path)
    if kind is not None:
        return kind
    return Kind.SHELL if _shell_shebang(text) else Kind.PYTHON


def _shell_shebang(text: str) -> bool:
    if not text.startswith("#!"):
        return False
    words = text[2 : text.find("\n") if "\n" in text else len(text)].split()
    if not words:
        return False
    program = os.path.basename(words[0])
    if program == "env" and len(words) > 1:
        program = os.path.basename(words[-1] if words[1].startswith("-") else words[1])
    return program in _SHELLS


def is_settings_file(path: str) -> bool:
    """A file a folder walk picks up besides Python: a format compile settings live in."""
    kind = kind_by_name(path)
    return kind is not None and kind is not Kind.PYTHON
