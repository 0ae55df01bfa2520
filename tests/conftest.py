"""The ``slow`` marker, given by folder and module here so one list says what the fast loop skips.

``bash scripts/test.sh -m "not slow"`` is the edit-test loop; the full suite (``bash
scripts/test.sh``) stays the CI command and runs everything. Slow means: runs torch, starts
subprocesses per case (training scripts, kill tests, fuzzing), or takes seconds per test.
"""

from __future__ import annotations

from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent

#: Every test under these folders is slow: the runtime tracer runs torch models; the reliability
#: tests kill, fuzz and start the real console scripts many times.
SLOW_FOLDERS = ("trace", "reliability")
#: Single slow modules elsewhere (relative to tests/).
SLOW_MODULES = (
    "codemod/test_converted_scripts_run.py",  # trains converted scripts under accelerate launch
    "test_static_vs_dynamo.py",  # lints every fixture model several times over
    "test_precommit.py",  # pre-commit builds a hook environment (a minute)
    "test_new_rule.py",  # runs the test suite of a scaffolded rule
    "test_packaging.py",  # builds a wheel
    "checks/test_rc407_ground_truth.py",  # an accelerate launch of two processes
)


def is_slow(path: Path) -> bool:
    relative = path.resolve().relative_to(TESTS)
    return relative.parts[0] in SLOW_FOLDERS or relative.as_posix() in SLOW_MODULES


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if is_slow(Path(item.fspath)):
            item.add_marker(pytest.mark.slow)
