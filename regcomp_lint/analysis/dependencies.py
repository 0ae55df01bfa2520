"""Which other files a file's findings were computed from (local imports followed by RC210/RC502).

The cache keys a file on its own content; a finding that depends on an imported model file must
also go stale when *that* file changes. Readers of other files call :func:`record`; the runner
wraps each lint in :func:`recording` and stores the files' digests beside the cached result.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

_active: list[set[str]] = []


def record(path: str) -> None:
    if _active:
        _active[-1].add(path)


def current() -> set[str] | None:
    """The innermost recording (None outside any): what :func:`record` adds to now."""
    return _active[-1] if _active else None


@contextmanager
def recording() -> Iterator[set[str]]:
    paths: set[str] = set()
    _active.append(paths)
    try:
        yield paths
    finally:
        _active.pop()
