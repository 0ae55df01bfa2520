"""Run recursive tree code (libcst's visitors and metadata) on deeply nested source.

libcst visits a tree recursively, about two Python frames per level, so with Python's default
limit of 1,000 frames the fixer failed on ordinary-looking code: a chain of 500 attributes, a sum
of 1,000 terms, 150 nested brackets. :func:`call_deep` runs a function in a helper thread with a
large C stack and a raised recursion limit, so such code converts; code deeper still raises
``RecursionError``, which the caller turns into a refusal (the file stays untouched).

Most files are nowhere near that deep, and a fresh thread with a fresh 512 MiB stack costs each
file the page faults of the stack it touches (about 2,000 a fixture round, 10-20 ms of system
time) and runs the parse slower than the calling thread does. :func:`call_shallow_first` runs the
function in the calling thread at Python's default limit first, and only a file that raises
``RecursionError`` there is run again, from the start, in the helper thread.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

#: Python frames allowed while the function runs (the default is 1,000).
RECURSION_LIMIT = 30_000
#: C stack of the helper thread: room for RECURSION_LIMIT frames (pages are only used if touched).
STACK_BYTES = 512 * 1024 * 1024

#: Python frames allowed in the calling thread: Python's default, which an ordinary thread's C
#: stack (8 MiB on Linux) is made for; a caller's higher limit is not trusted with deep libcst code.
SHALLOW_LIMIT = 1_000

_lock = threading.Lock()


def call_shallow_first(func: Callable[..., T], *args, **kwargs) -> T:
    """``func(*args, **kwargs)`` in the calling thread, at a recursion limit of at most
    :data:`SHALLOW_LIMIT`; if that raises ``RecursionError`` (or the caller is too deep already to
    lower the limit), :func:`call_deep` runs it again. ``func`` must be safe to start over: what
    a first run made is dropped."""
    with _lock:  # the recursion limit is process-wide: one call at a time
        old_limit = sys.getrecursionlimit()
        try:
            sys.setrecursionlimit(min(old_limit, SHALLOW_LIMIT))
        except RecursionError:  # the caller is deeper than the limit already
            pass
        else:
            try:
                return func(*args, **kwargs)
            except RecursionError:
                pass
            finally:
                sys.setrecursionlimit(old_limit)
    return call_deep(func, *args, **kwargs)


def call_deep(func: Callable[..., T], *args, **kwargs) -> T:
    """``func(*args, **kwargs)`` with room for deep recursion; its exception is re-raised here."""
    value: list[T] = []
    error: list[BaseException] = []

    def target() -> None:
        try:
            value.append(func(*args, **kwargs))
        except BaseException as exc:  # handed to the caller's thread
            error.append(exc)

    with _lock:  # the recursion limit is process-wide: one deep call at a time
        old_limit = sys.getrecursionlimit()
        try:
            old_stack = threading.stack_size(STACK_BYTES)
        except (ValueError, RuntimeError):  # a platform without settable thread stacks
            return func(*args, **kwargs)
        try:
            thread = threading.Thread(target=target, name="regcomp-deep", daemon=True)
            sys.setrecursionlimit(max(old_limit, RECURSION_LIMIT))
            thread.start()
            thread.join()
        finally:
            sys.setrecursionlimit(old_limit)
            threading.stack_size(old_stack)
    if error:
        raise error[0]
    return value[0]
