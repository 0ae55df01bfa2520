"""``python [-u] tests/zygote_client.py SCRIPT ARGS``: run SCRIPT in a fork of the zygote server.

What a launcher starts in place of ``python SCRIPT ARGS`` (see tests/zygote_server.py): it imports
nothing heavy, hands the server its standard streams, arguments, environment and working folder,
passes on the signals a launcher sends (SIGTERM, SIGINT, ...) to the run, and exits as the run did
(its status, or killed by the same signal). The server's socket is ``$REGCOMP_ZYGOTE``.
"""

import io
import json
import os
import signal
import socket
import struct
import sys

FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)


def main() -> None:
    env = dict(os.environ)
    path = env.pop("REGCOMP_ZYGOTE")
    request = json.dumps(
        {"argv": sys.argv[1:], "env": env, "cwd": os.getcwd(), "unbuffered": isinstance(sys.stdout.buffer, io.FileIO)}
    ).encode()
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(path)
    message = struct.pack("!I", len(request)) + request
    sent = socket.send_fds(conn, [message], [0, 1, 2])
    conn.sendall(message[sent:])
    reader = conn.makefile("r")
    pid = int(reader.readline().split()[1])

    def forward(signum, _frame):
        try:
            os.kill(pid, signum)
        except ProcessLookupError:
            pass

    for signum in FORWARDED:
        signal.signal(signum, forward)
    line = reader.readline()
    if not line:
        sys.exit(f"zygote: lost the server while process {pid} ran")
    status = int(line.split()[1])
    if os.WIFSIGNALED(status):
        signum = os.WTERMSIG(status)
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
    sys.exit(os.waitstatus_to_exitcode(status))


if __name__ == "__main__":
    main()
