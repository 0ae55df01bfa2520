"""The harness reruns a run that failed only at its teardown (tests/launch.py), and only then."""

from __future__ import annotations

import sys

from tests.launch import TEARDOWN_ABORT, TEARDOWN_HANG, run_once_more_on_teardown_abort

#: Fails the first time it runs in a folder (as ``failure`` says), then succeeds.
SCRIPT = """
import os, sys
first = not os.path.exists("ran")
open("ran", "w").close()
print("[regcomp] process 0 of 2", flush=True)
if first:
    print(sys.argv[1], file=sys.stderr)
    sys.exit(1)
print("[regcomp] process 1 of 2", flush=True)
"""
MARKERS = ["[regcomp] process 0 of 2", "[regcomp] process 1 of 2"]


def _run(tmp_path, failure: str):
    return run_once_more_on_teardown_abort([sys.executable, "-c", SCRIPT, failure], tmp_path, {}, MARKERS)


def test_a_run_that_hung_at_teardown_after_another_process_finished_is_run_again(tmp_path):
    done = _run(tmp_path, f"{TEARDOWN_HANG}1:00)!")
    assert done.returncode == 0 and all(m in done.stdout for m in MARKERS)


def test_a_run_that_failed_otherwise_is_not_run_again(tmp_path):
    done = _run(tmp_path, "Traceback: ValueError")
    assert done.returncode == 1


def test_a_teardown_abort_before_every_process_finished_is_not_run_again(tmp_path):
    done = _run(tmp_path, TEARDOWN_ABORT)
    assert done.returncode == 1
