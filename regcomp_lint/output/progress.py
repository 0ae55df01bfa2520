"""Progress on stderr, only on a terminal: a ``files linted`` counter for long lint runs, and a
line naming the long step ``trace`` is in."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator

#: Runs over fewer files than this finish too fast for a counter to help.
MIN_FILES = 50
_INTERVAL_S = 0.1


class ProgressLine:
    """Callback for ``runner.run(progress=...)``.

    Accepts ``(done, total)`` as the runner reports it; tolerates being called with anything
    else (one call per file) so a change in the runner cannot break the CLI.
    """

    def __init__(self, stream) -> None:
        self.stream = stream
        self.calls = 0
        self.shown = False
        self._last = 0.0

    def __call__(self, done=None, total=None, *args, **kwargs) -> None:
        self.calls += 1
        done = done if isinstance(done, int) else self.calls
        total = total if isinstance(total, int) else None
        if (total if total is not None else done) < MIN_FILES:
            return
        now = time.monotonic()
        if now - self._last < _INTERVAL_S and done != total:
            return
        self._last = now
        of = f"/{total}" if total else ""
        self.stream.write(f"\rregcomp-lint: {done}{of} files")
        self.stream.flush()
        self.shown = True

    def finish(self) -> None:
        """Erase the counter so the results start on a clean line."""
        if self.shown:
            self.stream.write("\r\x1b[2K")
            self.stream.flush()
            self.shown = False


class StepLine:
    """``regcomp-lint: compiling the plan...`` on stderr while one long step runs (trace's
    compile, ``--apply --check``, each ``--measure`` strategy); only on a terminal, erased after."""

    def __init__(self, stream, enabled: bool | None = None) -> None:
        self.stream = stream
        self.enabled = _is_terminal(stream) if enabled is None else enabled

    @contextlib.contextmanager
    def step(self, label: str) -> Iterator[None]:
        if self.enabled:
            self.stream.write(f"\r\x1b[2Kregcomp-lint: {label}...")
            self.stream.flush()
        try:
            yield
        finally:
            if self.enabled:
                self.stream.write("\r\x1b[2K")
                self.stream.flush()


def _is_terminal(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False
