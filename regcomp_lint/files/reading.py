"""Read a file's bytes without ever blocking or reading forever.

A path typed on the command line may name a named pipe (``mkfifo``), a socket or a device:
``open(path).read()`` on a FIFO with no writer waits forever, and on ``/dev/zero`` it reads
until memory runs out. So the file is opened non-blocking, checked with ``fstat`` and read only
when it is a regular file; anything else raises :class:`NotRegularFile` (an ``OSError``, so
every caller that already turns read errors into RC001 or "cannot read" keeps working).
Folders walked by discovery list regular files only; this guards the paths typed explicitly,
files replaced while a run goes on, and the cache's look at other files.
"""

from __future__ import annotations

import errno
import os
import stat

_KINDS = (
    (stat.S_ISFIFO, "a named pipe"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISDIR, "a folder"),
)


class NotRegularFile(OSError):
    """The path is a pipe, socket, device or folder: not a file that can be linted."""


def kind_of(mode: int) -> str:
    for test, name in _KINDS:
        if test(mode):
            return name
    return "not a regular file"


def read_bytes(path: str) -> bytes:
    """The content of the regular file ``path``; ``OSError`` (maybe ``NotRegularFile``) otherwise."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            kind = kind_of(info.st_mode)
            raise NotRegularFile(errno.EINVAL, f"not a regular file ({kind}); use `-` to read stdin", path)
        chunks = []
        while True:
            chunk = os.read(fd, max(info.st_size + 1, 1 << 16))
            if not chunk:
                break
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)
