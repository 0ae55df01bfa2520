"""README's example output comes from the command it names, not from memory (issue 13: its
line numbers had drifted). Each ``<!-- readme-example: regcomp-lint ARGS -->`` marker is
followed by a fenced block whose lines must appear, in order and contiguous per paragraph, in
the real output of ``regcomp-lint ARGS`` run from the repository root."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MARKER = re.compile(r"<!-- readme-example: regcomp-lint (?P<args>.+?) -->\n```\n(?P<block>.*?)```", re.DOTALL)


def examples() -> list[tuple[str, str]]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return [(m.group("args"), m.group("block")) for m in MARKER.finditer(text)]


def test_readme_has_checked_examples():
    assert examples(), "README lost its <!-- readme-example: ... --> markers"


@pytest.mark.parametrize("args, block", examples())
def test_readme_example_matches_real_output(args, block):
    env = dict(os.environ, NO_COLOR="1", PYTHONPATH=str(ROOT))
    env.pop("FORCE_COLOR", None)
    proc = subprocess.run(
        [sys.executable, "-m", "regcomp_lint", "--no-cache", *shlex.split(args)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode in (0, 1), proc.stderr
    for paragraph in block.strip("\n").split("\n\n"):
        assert paragraph in proc.stdout, f"README example not in the output of `regcomp-lint {args}`:\n{paragraph}"
