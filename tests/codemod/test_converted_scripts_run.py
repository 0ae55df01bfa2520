"""Converted fixtures really train: plainly on one process, and under ``accelerate launch`` on two
CPU processes (DDP over gloo), with the loss going down and exit code 0.

Needs torch and accelerate, which static lint does not: the scripts run in the interpreter named
by ``REGCOMP_TORCH_PYTHON`` (for example a throwaway venv with torch==2.13.0 accelerate==1.15.0),
else in this one; the tests are skipped with the reason when neither can import them. The
conversion itself runs here, in-process, without torch.

Scripts are converted with ``backend="eager"`` (an explicit option, which wins over the script)
so each run takes seconds; one case runs its golden ``expected.py`` as is, with inductor.

Launch note (accelerate 1.15): ``accelerate launch --cpu --num_processes 2`` starts a single
process unless mpirun is configured; two CPU processes need the torchrun launcher
(``--multi_gpu``) with ``ACCELERATE_USE_CPU=1``, which is what these tests use. A wrapper checks
that each process really saw two processes.
"""

from __future__ import annotations

import functools
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.codemod.fixture_cases import FIXTURES, convert_case

TORCH_PYTHON = os.environ.get("REGCOMP_TORCH_PYTHON") or sys.executable
TIMEOUT = 300
HANG_AFTER = 60
#: torch 2.13 can abort a process while the interpreter shuts down, after the script finished
#: (gloo/compile-worker threads at finalization, pytorch/pytorch#190489; seen under CPU load).
#: Such a run, where every process printed its end marker, is retried once.
TEARDOWN_ABORT = "terminate called without an active exception"

#: case -> script arguments (small limits; flags that switch the hand compile on)
EAGER_CASES = {
    "mnist_loop": ["--epochs", "4"],
    "gan_two_models": ["--epochs", "16"],
    "grad_accumulation": ["--epochs", "5"],
    "trainer_class": ["--epochs", "5", "--compile"],
    "accelerate_two_branches": ["--num_epochs", "5", "--cpu"],
    "legacy_dynamo_backend": [],
    "nanogpt_ddp": [],
    "local_repeated_blocks": ["--steps", "30", "--compile"],
    "module_compile": [],
    "if_args_compile": ["--epochs", "4", "--compile"],
    "backward_variants": [],
    "module_level_script": [],
}
INDUCTOR_CASE = "module_level_script"

WRAPPER = """
import faulthandler, runpy, sys
faulthandler.dump_traceback_later(HANG_AFTER, exit=True)  # a hung process says where, then exits
script = sys.argv[1]
sys.argv = sys.argv[1:]
runpy.run_path(script, run_name="__main__")
from accelerate import PartialState
state = PartialState()
print(f"[regcomp] process {state.process_index} of {state.num_processes}", flush=True)
"""


@functools.lru_cache(maxsize=1)
def _torch_missing() -> str | None:
    probe = subprocess.run(
        [TORCH_PYTHON, "-c", "import torch, accelerate; print(torch.__version__, accelerate.__version__)"],
        capture_output=True,
        text=True,
    )
    if probe.returncode != 0:
        return f"torch and accelerate are not importable in {TORCH_PYTHON} (set REGCOMP_TORCH_PYTHON to an interpreter that has them)"
    return None


@pytest.fixture(autouse=True)
def _needs_torch():
    reason = _torch_missing()
    if reason:
        pytest.skip(reason)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _environment(tmp_path: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("ACCELERATE_", "RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_"))
    }
    env.update(
        OMP_NUM_THREADS="1",
        HF_HOME=str(tmp_path / "hf"),  # no accelerate config file of the developer's
        HF_HUB_OFFLINE="1",
        TORCHINDUCTOR_CACHE_DIR=str(tmp_path / "inductor"),
        OUT_DIR=str(tmp_path),
        PYTHONWARNINGS="ignore",
    )
    return env


def _losses(output: str) -> list[float]:
    return [float(v) for v in re.findall(r"\bloss[^0-9\n-]{0,3}(-?\d+\.\d+)", output, flags=re.IGNORECASE)]


def _run(command: list[str], tmp_path: Path, env: dict[str, str], processes: int = 1) -> tuple[str, float]:
    for attempt in (1, 2):
        start = time.perf_counter()
        done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=TIMEOUT)
        elapsed = time.perf_counter() - start
        output = done.stdout + done.stderr
        finished = all(f"[regcomp] process {i} of {processes}" in done.stdout for i in range(processes))
        if done.returncode != 0 and attempt == 1 and finished and TEARDOWN_ABORT in output:
            print(f"\nretrying once: a process aborted at interpreter exit after finishing ({TEARDOWN_ABORT})")
            continue
        break
    assert done.returncode == 0, f"exit code {done.returncode}:\n{output[-4000:]}"
    return done.stdout, elapsed


def _assert_learns(stdout: str) -> None:
    losses = _losses(stdout)
    assert len(losses) >= 2, f"no loss values printed:\n{stdout[-2000:]}"
    third = max(1, len(losses) // 3)
    first, last = sum(losses[:third]) / third, sum(losses[-third:]) / third
    assert last < first, f"loss did not go down: {losses}"


def _write(tmp_path: Path, case: str, backend: str | None) -> Path:
    if backend is None:
        data = (FIXTURES / case / "expected.py").read_bytes()
    else:
        result = convert_case(case, backend=backend)
        assert result.refused is None and result.changed, result.refused
        data = result.data
    script = tmp_path / "train.py"
    script.write_bytes(data)
    (tmp_path / "wrapper.py").write_text(WRAPPER.replace("HANG_AFTER", str(HANG_AFTER)))
    return script


def _plain(case: str, tmp_path: Path, backend: str | None) -> float:
    script = _write(tmp_path, case, backend)
    stdout, elapsed = _run(
        [TORCH_PYTHON, "wrapper.py", str(script), *EAGER_CASES.get(case, [])], tmp_path, _environment(tmp_path)
    )
    _assert_learns(stdout)
    assert "[regcomp] process 0 of 1" in stdout
    print(f"\n{case} ({backend or 'as converted'}), 1 process: {elapsed:.1f}s")
    return elapsed


def _launched(case: str, tmp_path: Path, backend: str | None) -> float:
    script = _write(tmp_path, case, backend)
    env = _environment(tmp_path)
    env["ACCELERATE_USE_CPU"] = "1"
    launch = [
        TORCH_PYTHON,
        "-m",
        "accelerate.commands.launch",
        "--multi_gpu",
        "--num_processes",
        "2",
        "--num_machines",
        "1",
        "--mixed_precision",
        "no",
        "--dynamo_backend",
        "no",
        "--main_process_port",
        str(_free_port()),
        "wrapper.py",
        str(script),
        *EAGER_CASES.get(case, []),
    ]
    stdout, elapsed = _run(launch, tmp_path, env, processes=2)
    _assert_learns(stdout)
    assert "[regcomp] process 0 of 2" in stdout and "[regcomp] process 1 of 2" in stdout, stdout[-2000:]
    print(f"\n{case} ({backend or 'as converted'}), accelerate launch 2 CPU processes: {elapsed:.1f}s")
    return elapsed


@pytest.mark.parametrize("case", sorted(EAGER_CASES))
def test_converted_script_trains_on_one_process(case, tmp_path):
    _plain(case, tmp_path, "eager")


@pytest.mark.parametrize("case", sorted(EAGER_CASES))
def test_converted_script_trains_under_accelerate_launch_on_two_processes(case, tmp_path):
    _launched(case, tmp_path, "eager")


def test_golden_script_trains_with_inductor(tmp_path):
    for mode, run in (("plain", _plain), ("launched", _launched)):
        folder = tmp_path / mode
        folder.mkdir()
        run(INDUCTOR_CASE, folder, None)
