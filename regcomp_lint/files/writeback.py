"""Write fixed source back to disk without ever leaving a half-written or clobbered file.

``--fix`` reads a file, fixes the text and writes it back. In between, an editor or another tool
may have saved the file; a crash may happen mid-write. So: keep the exact bytes that were read,
re-encode the new text the way the original was encoded (coding line, BOM; newlines are part of
the text and survive as they were), write a temporary file in the same folder, give it the
original's mode, and ``os.replace`` it over the original only if the original still holds the
bytes that were read.
"""

from __future__ import annotations

import io
import os
import stat
import sys
import tempfile
import time
import tokenize
from dataclasses import dataclass

from regcomp_lint.files import reading
from regcomp_lint.files.source import DecodeError, decode_source


class WritebackError(Exception):
    """The fixed text could not be written; the original file is untouched."""


class ChangedOnDisk(WritebackError):
    """The file changed after it was read: writing would lose someone else's edit."""


@dataclass(frozen=True)
class Snapshot:
    """A file's bytes as read, the text they decode to, and how to encode text back."""

    path: str
    data: bytes
    text: str
    encoding: str

    def encode(self, text: str) -> bytes:
        """``text`` in the original's encoding (``utf-8-sig`` keeps the BOM)."""
        try:
            return text.encode(self.encoding)
        except UnicodeEncodeError as exc:
            raise WritebackError(
                f"{self.path}: the fixed text cannot be encoded as {self.encoding}: {exc.reason}"
            ) from None


def detect_encoding(data: bytes) -> str:
    """The encoding the interpreter would use for ``data`` (``utf-8-sig`` when there is a BOM)."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError:
        return "utf-8"
    return encoding


def snapshot_bytes(path: str, data: bytes) -> Snapshot:
    """Decode ``data`` (raises ``DecodeError`` when it is not text)."""
    return Snapshot(path, data, decode_source(data), detect_encoding(data))


def read(path: str) -> Snapshot:
    """Read ``path`` for fixing; ``OSError`` and ``DecodeError`` reach the caller."""
    return snapshot_bytes(path, reading.read_bytes(path))


def write(snap: Snapshot, new_text: str) -> None:
    """Atomically replace the file with ``new_text`` encoded like the original.

    Raises ``ChangedOnDisk`` when the file no longer holds the bytes that were read, and
    ``WritebackError`` for anything else that stops the write; in both cases the original file
    is left exactly as it was.
    """
    payload = snap.encode(new_text)
    target = os.path.realpath(snap.path)  # write through a symlink, keep the link itself
    folder = os.path.dirname(target) or "."
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode)
    except OSError as exc:
        raise WritebackError(f"{snap.path}: cannot stat: {exc.strerror or exc}") from None
    if not mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH) or not os.access(target, os.W_OK):
        # os.replace would happily swap a read-only file (and root ignores the bits): ask first
        raise WritebackError(
            f"{snap.path}: read-only file; not written (make it writable, or run without writing to see the diff)"
        )
    _remove_stale_temporaries(folder, os.path.basename(target))
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{os.path.basename(target)}.{os.getpid()}.", suffix=TMP_SUFFIX)
    except OSError as exc:
        raise WritebackError(f"{snap.path}: cannot create a temporary file beside it: {exc.strerror or exc}") from None
    _pause_at("temporary-created")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
            handle.flush()
            _pause_at("temporary-written")
            os.fsync(handle.fileno())
        _pause_at("temporary-synced")
        os.chmod(tmp, mode)
        if _current_bytes(target) != snap.data:
            raise ChangedOnDisk(f"{snap.path}: changed on disk since it was read; not overwritten (run again)")
        _pause_at("before-replace")
        os.replace(tmp, target)
        _pause_at("replaced")
    except WritebackError:
        _remove_quietly(tmp)
        raise
    except OSError as exc:
        _remove_quietly(tmp)
        raise WritebackError(f"{snap.path}: cannot write: {exc.strerror or exc}") from None


TMP_SUFFIX = ".regcomp-tmp"

#: Test hook (``tests/reliability/test_kill.py``): with ``REGCOMP_WRITEBACK_PAUSE=<point>`` a write
#: stops at that point, says so on stderr and sleeps until it is killed, so a test can SIGKILL it
#: at an exact step instead of at a random moment. Inert unless the variable names a point.
PAUSE_ENV = "REGCOMP_WRITEBACK_PAUSE"
PAUSE_POINTS = ("temporary-created", "temporary-written", "temporary-synced", "before-replace", "replaced")


def _pause_at(point: str) -> None:
    if os.environ.get(PAUSE_ENV) != point:
        return
    sys.stderr.write(f"regcomp-writeback paused at {point}\n")
    sys.stderr.flush()
    while True:
        time.sleep(60)


def _remove_stale_temporaries(folder: str, name: str) -> None:
    """Delete ``.<name>.<pid>.*.regcomp-tmp`` files whose process is gone.

    A write that is killed (SIGKILL, power loss) between creating its temporary file and the
    rename leaves the temporary behind; the original is intact either way. The next write of the
    same file removes such leftovers, unless the process that made one still runs.
    """
    prefix = f".{name}."
    try:
        leftovers = [entry for entry in os.listdir(folder) if entry.startswith(prefix) and entry.endswith(TMP_SUFFIX)]
    except OSError:
        return
    for entry in leftovers:
        pid_text = entry[len(prefix) :].split(".", 1)[0]
        if pid_text.isdigit() and not pid_alive(int(pid_text)):
            _remove_quietly(os.path.join(folder, entry))


def pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists, owned by someone else
        return True
    return True


def _current_bytes(path: str) -> bytes | None:
    try:
        return reading.read_bytes(path)
    except OSError:
        return None


def _remove_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


__all__ = ["ChangedOnDisk", "DecodeError", "Snapshot", "WritebackError", "read", "snapshot_bytes", "write"]
