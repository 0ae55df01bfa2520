"""A process that has imported torch and accelerate once and forks a fresh-looking interpreter per run.

Why: the equivalence harness starts about 400 Python processes, each of which spends over a CPU
second importing torch and accelerate before the script's first line; on CI's 2 cores
that was a third of the suite. The launchers stay real: ``torchrun`` and ``accelerate launch``
still start every worker, set its environment and watch it; only the worker's interpreter comes
from a fork of this one (``tests/zygote_client.py`` is the tiny program they start: it hands its
standard streams, arguments, environment and working folder over this server's socket and exits
with the forked run's status).

A forked run is made to look like ``python [-u] SCRIPT ARGS`` started afresh: the client's
environment replaces this one, its streams become fds 0-2 (unbuffered under ``-u``), ``sys.argv``
and ``sys.path[0]`` are the script's, torch's and numpy's global generators are seeded from the OS as
a fresh interpreter's are (``random`` reseeds itself at fork), torch's thread count follows ``OMP_NUM_THREADS``, and the interpreter
exits through its normal shutdown (threads joined, ``atexit``, finalization), an uncaught
exception printing its traceback with status 1. ``tests/equivalence/test_zygote.py`` checks that
a fixture's runs print the same steps, losses and parameters forked and fresh.

Usage: ``python tests/zygote_server.py SOCKET`` prints ``ready`` once it listens.
"""

from __future__ import annotations

import io
import json
import os
import selectors
import signal
import socket
import struct
import sys

HEADER = struct.Struct("!I")


def _preimport() -> None:
    """What every run imports before its first line of its own (about 1.4 CPU-s). Not dynamo:
    with ``torch._dynamo`` imported here, a forked original that never compiles hung at its end
    in 1 of 3 two-process runs (gdb: the main thread, holding the GIL, destroys the gloo process
    group and waits for its mutex; the gloo thread holding it frees an allreduce's thread-local
    state, which then holds a Python object, and waits for the GIL), 0 of 30 without."""
    import accelerate  # noqa: F401
    import torch.distributed  # noqa: F401
    import torch.nn  # noqa: F401
    import torch.optim  # noqa: F401
    import torch.utils.data  # noqa: F401
    from accelerate import Accelerator  # noqa: F401


def _receive(conn: socket.socket) -> tuple[dict, list[int]]:
    """The request: a length-prefixed JSON object and the client's fds 0, 1 and 2."""
    data, fds, _flags, _addr = socket.recv_fds(conn, 1 << 16, 3)
    while len(data) < HEADER.size or len(data) < HEADER.size + HEADER.unpack_from(data)[0]:
        chunk = conn.recv(1 << 16)
        if not chunk:
            raise ConnectionError("the client left before its request was whole")
        data += chunk
    (size,) = HEADER.unpack_from(data)
    return json.loads(data[HEADER.size : HEADER.size + size]), fds


def _open_streams(unbuffered: bool) -> None:
    """stdout and stderr on the run's fds 1 and 2, buffered as in a fresh interpreter started with
    or without ``-u`` / ``PYTHONUNBUFFERED`` (stderr is line-buffered without)."""
    streams = []
    for fd in (1, 2):
        raw = io.FileIO(fd, "w", closefd=False)
        layer = raw if unbuffered else io.BufferedWriter(raw)
        line_buffering = not unbuffered and (fd == 2 or raw.isatty())
        errors = "backslashreplace" if fd == 2 else "strict"
        streams.append(io.TextIOWrapper(layer, errors=errors, line_buffering=line_buffering, write_through=unbuffered))
    sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__ = streams


def _become_the_run(request: dict, fds: list[int]) -> None:
    """In the forked child: turn this interpreter into ``python SCRIPT ARGS`` and run it; what the
    script raises ends the interpreter as it would end a fresh one."""
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    import multiprocessing.process

    # multiprocessing keeps the folder its process started in (at its import: ours) to find
    # ``__main__`` again in spawned children (mp.spawn)
    multiprocessing.process.ORIGINAL_DIR = os.getcwd()
    os.environ.clear()
    os.environ.update(request["env"])
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    _open_streams(request["unbuffered"])
    import numpy
    import torch

    numpy.random.seed()  # a fresh interpreter seeds both from the OS: so must each run, not share ours
    torch.seed()
    threads = os.environ.get("OMP_NUM_THREADS", "")
    if threads.isdigit() and int(threads) > 0:
        torch.set_num_threads(int(threads))
    script = request["argv"][0]
    sys.argv = list(request["argv"])
    sys.path[0] = os.path.dirname(os.path.abspath(script))
    import runpy

    runpy.run_path(script, run_name="__main__")


def serve(path: str) -> None:
    _preimport()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    if os.path.exists(path):  # left by a server that was killed
        os.unlink(path)
    listener.bind(path)
    listener.listen(64)
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ)
    running: dict[int, socket.socket] = {}  # child pid -> its client's connection
    print("ready", flush=True)
    while True:
        for key, _ in selector.select(timeout=0.02):
            if key.fileobj is listener:
                conn, _ = listener.accept()
                try:
                    request, fds = _receive(conn)
                except (ConnectionError, OSError, ValueError):
                    conn.close()
                    continue
                pid = os.fork()
                if pid == 0:
                    selector.close()
                    listener.close()
                    for other in running.values():
                        other.close()
                    conn.close()
                    _become_the_run(request, fds)
                    return  # the script returned: the interpreter ends with status 0
                for fd in fds:  # else the run's pipes never reach end-of-file
                    os.close(fd)
                conn.sendall(f"pid {pid}\n".encode())
                running[pid] = conn
                selector.register(conn, selectors.EVENT_READ, pid)
            else:  # a client that left (killed) takes its run with it
                if not key.fileobj.recv(1):
                    try:
                        os.kill(key.data, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                    selector.unregister(key.fileobj)
        while running:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            conn = running.pop(pid)
            try:
                selector.unregister(conn)
            except (KeyError, ValueError):
                pass
            try:
                conn.sendall(f"status {status}\n".encode())
            except OSError:
                pass
            conn.close()


if __name__ == "__main__":
    serve(sys.argv[1])
