"""Running the real console scripts in a subprocess, as a user would."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def env() -> dict:
    out = dict(os.environ)
    out["NO_COLOR"] = "1"
    out.pop("REGCOMP_LINT_DEBUG", None)
    out.pop("REGCOMP_CACHE_DIR", None)
    return out


def command(tool: str) -> list[str]:
    script = BIN / tool
    if script.exists():
        return [str(script)]
    entry = "main" if tool == "regcomp-lint" else "fix_main"
    return [
        sys.executable,
        "-c",
        f"import sys; sys.argv[0] = {tool!r}; from regcomp_lint.cli.commands import {entry}; sys.exit({entry}())",
    ]


def run(
    tool: str, *args, cwd, timeout: float = 300, extra_env: dict | None = None, **kwargs
) -> subprocess.CompletedProcess:
    environment = env()
    environment.update(extra_env or {})
    return subprocess.run(
        [*command(tool), *map(str, args)],
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
        timeout=timeout,
        **kwargs,
    )


def assert_no_traceback(proc: subprocess.CompletedProcess) -> None:
    text = proc.stdout + proc.stderr
    assert "Traceback" not in text and "internal error" not in text, text[-2000:]
