"""What the lint and fix commands both need: settings from config plus selectors, and stdin/stdout as bytes.

Both commands take paths (or ``-`` for stdin), ``--config``-style lookup of the nearest
pyproject.toml and ruff-style ``--select/--extend-select/--ignore``; they resolve them here, the
same way, so a selector means the same in ``regcomp-lint`` and ``regcomp-fix``.
"""

from __future__ import annotations

import os
import sys

from regcomp_lint.lint import config
from regcomp_lint.lint.config import Settings

STDIN = "-"


def split_selectors(values: tuple[str, ...] | list[str] | None) -> tuple[str, ...]:
    """``("RC1,RC2", "RC5")`` → ``("RC1", "RC2", "RC5")`` (repeatable and comma-separated)."""
    out: list[str] = []
    for value in values or ():
        out.extend(part.strip() for part in value.split(",") if part.strip())
    return tuple(out)


def resolve_settings(
    paths: tuple[str, ...],
    stdin_filename: str | None = None,
    config_path: str | None = None,
    select: tuple[str, ...] | None = None,
    extend_select: tuple[str, ...] = (),
    ignore: tuple[str, ...] = (),
) -> Settings:
    """Config file (``config_path`` or the nearest pyproject.toml), then command-line selectors.

    Like ruff, ``select`` starts the selection afresh (the config's select, extend-select and
    ignore no longer apply); ``extend_select`` and ``ignore`` add to the config's.
    """
    settings = config.load(config_path, start=_config_start(paths, stdin_filename))
    if select is not None:
        return settings.with_overrides(select=select, extend_select=extend_select, ignore=ignore)
    changes = {}
    if extend_select:
        changes["extend_select"] = settings.extend_select + extend_select
    if ignore:
        changes["ignore"] = settings.ignore + ignore
    return settings.with_overrides(**changes) if changes else settings


def _config_start(paths: tuple[str, ...], stdin_filename: str | None) -> str:
    for path in paths:
        if path != STDIN:
            return path
    if stdin_filename:
        return os.path.dirname(os.path.abspath(stdin_filename))
    return "."


def read_stdin() -> bytes:
    """Raw bytes, so the code is decoded like a file (BOM, coding line), not by the locale."""
    stream = sys.stdin
    buffer = getattr(stream, "buffer", None)
    return buffer.read() if buffer is not None else stream.read().encode("utf-8")


def write_stdout_bytes(data: bytes) -> None:
    buffer = getattr(sys.stdout, "buffer", None)
    if buffer is None:
        sys.stdout.write(data.decode("utf-8", errors="replace"))
    else:
        sys.stdout.flush()
        buffer.write(data)
        buffer.flush()
