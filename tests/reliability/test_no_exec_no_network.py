"""``regcomp-fix`` (diff and --apply) never imports or runs the scripts it rewrites, and neither
command opens a network connection. Extends ``tests/test_isolation.py`` (which covers lint) with
the fixer and a socket guard in every child interpreter."""

from __future__ import annotations

import subprocess
import sys

from tests.test_isolation import blocked_env, markers_present, read_log, write_evil  # noqa: F401 - fixture

NET_GUARD = """
import socket as _socket

def _refuse(*args, **kwargs):
    _log("attempt %d socket" % os.getpid())
    raise OSError("network blocked by regcomp-lint's isolation test")

_socket.socket.connect = _refuse
_socket.socket.connect_ex = _refuse
_socket.create_connection = _refuse
_socket.getaddrinfo = _refuse
"""

TRAINING_TAIL = "\noptimizer = torch.optim.SGD(model.parameters(), lr=0.1)\nfor _ in range(2):\n    model(torch.randn(1, 2)).sum().backward()\n    optimizer.step()\n"


def test_fix_and_lint_run_nothing_and_touch_no_network(tmp_path, blocked_env):  # noqa: F811
    env, log = blocked_env
    site = tmp_path / "site" / "sitecustomize.py"
    site.write_text(site.read_text() + NET_GUARD)
    project, markers = write_evil(tmp_path)
    script = project / "train_evil.py"
    script.write_text(script.read_text() + TRAINING_TAIL)
    fix = [
        "-c",
        "import sys; sys.argv[0] = 'regcomp-fix'; from regcomp_lint.cli.commands import fix_main; sys.exit(fix_main())",
    ]
    lint = ["-m", "regcomp_lint"]
    for args in (
        [*fix, "train_evil.py"],
        [*fix, "--apply", "--unsafe-fixes", "."],
        [*lint, "--no-cache", "--jobs", "2", "."],
    ):
        proc = subprocess.run(
            [sys.executable, *args], env=env, cwd=project, capture_output=True, text=True, timeout=300
        )
        assert "Traceback" not in proc.stderr, proc.stderr
        assert proc.returncode in (0, 1, 2), proc.stderr
    assert "accelerator.backward" in script.read_text(), "the fixer did not really convert the script"
    attempts, loaded = read_log(log)
    assert attempts == [] and loaded == [], (attempts, loaded)
    assert markers_present(markers) == []


def test_network_guard_works(tmp_path, blocked_env):  # noqa: F811
    """Control: the guard does catch a connection attempt."""
    env, log = blocked_env
    site = tmp_path / "site" / "sitecustomize.py"
    site.write_text(site.read_text() + NET_GUARD)
    proc = subprocess.run(
        [sys.executable, "-c", "import socket; socket.create_connection(('127.0.0.1', 9))"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode != 0 and "network blocked" in proc.stderr
    assert any("socket" in line for line in read_log(log)[0])
