"""Facts about Accelerate's configuration precedence that regcomp-fix relies on, checked against
the installed accelerate in a fresh process each (its state is a process-wide singleton)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytest.importorskip("accelerate")

pytestmark = pytest.mark.slow


def _mixed_precision(argument: str, environment: str) -> str:
    code = f"from accelerate import Accelerator\nprint(Accelerator(cpu=True{argument}).state.mixed_precision)\n"
    env = {**os.environ, "ACCELERATE_MIXED_PRECISION": environment}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return done.stdout.strip().splitlines()[-1]


def test_an_explicit_mixed_precision_outranks_the_launch_setting():
    """`accelerate launch --mixed_precision bf16` (or accelerate config) exports
    ACCELERATE_MIXED_PRECISION; the converter's Accelerator(mixed_precision="no") for a script with
    its own GradScaler must win over it, so the loss is scaled once."""
    assert _mixed_precision("", "bf16") == "bf16"  # the launch setting applies when nothing is passed
    assert _mixed_precision(', mixed_precision="no"', "bf16") == "no"
