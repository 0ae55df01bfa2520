"""Keep stdout for the report: whatever the user's code prints goes to stderr.

``--format json`` is read by programs (``regcomp-lint trace ... --format json | jq``), so a print
in a factory, at import time, in ``forward``, or from a compiler subprocess must not reach stdout.
Python-level writes are redirected with ``contextlib.redirect_stdout``; writes to file descriptor
1 (C extensions, child processes that inherit it) by pointing fd 1 at stderr for the duration.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator


@contextlib.contextmanager
def user_output_to_stderr() -> Iterator[None]:
    saved = _point_fd(1, 2)
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        if saved is not None:
            _restore_fd(1, saved)


def _point_fd(target: int, source: int) -> int | None:
    """Make ``target`` write where ``source`` does; the saved ``target`` (None when not possible)."""
    try:
        sys.stdout.flush()
        saved = os.dup(target)
        os.dup2(source, target)
    except (OSError, ValueError, AttributeError):
        return None
    return saved


def _restore_fd(target: int, saved: int) -> None:
    with contextlib.suppress(OSError, ValueError, AttributeError):
        sys.stderr.flush()
    os.dup2(saved, target)
    os.close(saved)
