"""Running training scripts in a torch interpreter, on one process or two gloo processes on CPU.

Shared by the tests that run scripts for real (tests/codemod/test_converted_scripts_run.py,
tests/equivalence/). The scripts run in the interpreter named by ``REGCOMP_TORCH_PYTHON``, else
in this one; :func:`torch_missing` says why they cannot run when neither has torch and accelerate.

Launch facts (torch 2.13, accelerate 1.15):
- ``accelerate launch --cpu --num_processes 2`` starts ONE process unless mpirun is configured;
  two CPU processes need the torchrun launcher (``--multi_gpu``) with ``ACCELERATE_USE_CPU=1``.
- torch 2.13 can abort a process while the interpreter shuts down, after the script finished
  (gloo/compile-worker threads at finalization, pytorch/pytorch#190489; seen under CPU load):
  "terminate called without an active exception". Such a run, where every process printed its
  end marker, is retried once.
"""

from __future__ import annotations

import functools
import os
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

TORCH_PYTHON = os.environ.get("REGCOMP_TORCH_PYTHON") or sys.executable
TIMEOUT = 300
#: gloo's teardown race (seen under gdb, torch 2.13): a rank that calls destroy_process_group()
#: right after its last collective can reach interpreter exit while a ``pt_gloo_runloop`` thread
#: still holds that collective's tensor; freeing it needs the GIL, the thread is unwound during
#: finalization, and libstdc++ aborts. A barrier before destroy_process_group() avoids it.
TEARDOWN_ABORT = "terminate called without an active exception"
#: The same race seen as a hang (clean-clone CI of 261ce56: 5 original torchrun runs forked from a
#: zygote that had imported torch._dynamo): one process stopped in the destructors run as the
#: script's ``main()`` returned (gdb: the main thread, holding the GIL, waits on the gloo process
#: group's mutex; the gloo thread holding it frees an allreduce whose thread-local state holds a
#: Python object, and waits for the GIL) until the wrapper's watchdog ended it: "Timeout (0:01:00)!".
#: The zygote no longer imports dynamo; a converted script, which compiles, still does.
TEARDOWN_HANG = "Timeout (0:"

#: Runs a script as ``__main__`` and then prints an end marker naming the process by the
#: launcher's environment (a hung process dumps its stack and exits after HANG_AFTER seconds).
WRAPPER = """
import faulthandler, os, runpy, sys
faulthandler.dump_traceback_later(HANG_AFTER, exit=True)
# one write per line: processes share the launcher's pipe, and print() of a line-buffered,
# write-through stream writes the text and its newline separately, so another process's line could
# land in between ("EQ step=23 ... lr=0.05[regcomp] process 1 of 2"); without write-through the
# text layer holds the text until the newline and writes both at once
sys.stdout.reconfigure(line_buffering=True, write_through=False)
script = sys.argv[1]
sys.argv = sys.argv[1:]
sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
ONLY_MAIN_STDOUT
RANK_DIGEST_BEFORE
runpy.run_path(script, run_name="__main__")
sys.stdout = sys.__stdout__
RANK_DIGEST_AFTER
CHECK_ACCELERATE
# The script has finished and its end marker is out. A process group it left open (Accelerate's
# scripts never destroy theirs) is torn down by interpreter finalization, where gloo's teardown
# race (TEARDOWN_ABORT) aborted finished processes: clean-clone CI of c05f4a2 lost one case to it
# three runs in a row. The exit handlers run as at a normal exit (inductor's compile workers end
# there), then the process leaves without finalization.
_regcomp_dist = sys.modules.get("torch.distributed")
if _regcomp_dist is not None and _regcomp_dist.is_available() and _regcomp_dist.is_initialized():
    import atexit
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
"""
#: Every optimizer the script builds is kept, and after the script its parameters' final values
#: are hashed into ``rank_digest.<RANK>.txt``: DDP keeps them equal on every process, so ranks
#: that end apart show a conversion that lost the sync (or, in the original, ranks that never had
#: it). ``AcceleratedOptimizer`` does not call ``Optimizer.__init__``; the optimizer it wraps did.
RANK_DIGEST_BEFORE = """
import torch
_regcomp_optimizers = []
_regcomp_optimizer_init = torch.optim.Optimizer.__init__
def _regcomp_record(self, *args, **kwargs):
    _regcomp_optimizers.append(self)
    _regcomp_optimizer_init(self, *args, **kwargs)
torch.optim.Optimizer.__init__ = _regcomp_record
"""
RANK_DIGEST_AFTER = """
import hashlib
_regcomp_seen, _regcomp_hash = set(), hashlib.sha256()
for _regcomp_optimizer in _regcomp_optimizers:
    for _regcomp_group in _regcomp_optimizer.param_groups:
        for _regcomp_p in _regcomp_group["params"]:
            if id(_regcomp_p) not in _regcomp_seen:
                _regcomp_seen.add(id(_regcomp_p))
                _regcomp_hash.update(_regcomp_p.detach().float().cpu().numpy().tobytes())
if _regcomp_seen:
    with open(f"rank_digest.{os.environ.get('RANK', '0')}.txt", "w") as _regcomp_file:
        _regcomp_file.write(_regcomp_hash.hexdigest())
"""
#: The script's own stdout kept from the main process only (RANK 0): the others' goes to a file.
ONLY_MAIN_STDOUT = """
if os.environ.get("RANK", "0") != "0":
    sys.stdout = open(f"stdout.rank{os.environ['RANK']}.log", "w")
"""
ENV_MARKER = (
    "print(f\"[regcomp] process {os.environ.get('RANK', '0')} of {os.environ.get('WORLD_SIZE', '1')}\", flush=True)"
)
ACCELERATE_MARKER = """
from accelerate import PartialState
state = PartialState()
print(f"[regcomp] process {state.process_index} of {state.num_processes}", flush=True)
"""


@functools.lru_cache(maxsize=1)
def torch_missing() -> str | None:
    """Why scripts cannot run here (None when torch and accelerate import in TORCH_PYTHON)."""
    probe = subprocess.run(
        [TORCH_PYTHON, "-c", "import torch, accelerate; print(torch.__version__, accelerate.__version__)"],
        capture_output=True,
        text=True,
    )
    if probe.returncode != 0:
        return (
            f"torch and accelerate are not importable in {TORCH_PYTHON} "
            "(set REGCOMP_TORCH_PYTHON to an interpreter that has them)"
        )
    return None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def clean_environment(tmp_path: Path) -> dict[str, str]:
    """This environment without launcher variables or the developer's accelerate config."""
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
        PYTHONUNBUFFERED="1",  # every line reaches the pipe before a teardown abort can lose it
    )
    return env


def write_wrapper(
    folder: Path,
    hang_after: int = 60,
    accelerate_marker: bool = True,
    main_stdout_only: bool = False,
    rank_digest: bool = False,
) -> Path:
    """``wrapper.py`` in ``folder``. Its end marker comes from accelerate's view of the processes
    (proves the launch really made two), or from the launcher's environment variables when the
    script has torn down its own process group (``accelerate_marker=False``). ``main_stdout_only``:
    what the script prints on other processes goes to ``stdout.rank<N>.log`` in the working folder
    (the end markers still reach stdout). ``rank_digest``: each process writes a digest of its
    optimizers' final parameters (see ``RANK_DIGEST_BEFORE``)."""
    marker = ACCELERATE_MARKER if accelerate_marker else ENV_MARKER
    wrapper = folder / "wrapper.py"
    text = WRAPPER.replace("HANG_AFTER", str(hang_after)).replace("CHECK_ACCELERATE", marker)
    text = text.replace("RANK_DIGEST_BEFORE", RANK_DIGEST_BEFORE if rank_digest else "")
    text = text.replace("RANK_DIGEST_AFTER", RANK_DIGEST_AFTER if rank_digest else "")
    wrapper.write_text(text.replace("ONLY_MAIN_STDOUT", ONLY_MAIN_STDOUT if main_stdout_only else ""))
    return wrapper


def accelerate_launch(script: Sequence[str], processes: int = 2, mixed_precision: str = "no") -> list[str]:
    """``accelerate launch`` of ``script`` (a command after the launcher) on CPU processes, with
    ``--mixed_precision`` as given.

    The environment needs ``ACCELERATE_USE_CPU=1`` (see :func:`cpu_launch_environment`)."""
    return [
        TORCH_PYTHON,
        "-m",
        "accelerate.commands.launch",
        "--multi_gpu",
        "--num_processes",
        str(processes),
        "--num_machines",
        "1",
        "--mixed_precision",
        mixed_precision,
        "--dynamo_backend",
        "no",
        "--main_process_port",
        str(free_port()),
        *script,
    ]


def torchrun(script: Sequence[str], processes: int = 2) -> list[str]:
    """``torchrun`` of ``script`` on one machine (gloo is the script's own choice on CPU)."""
    return [
        TORCH_PYTHON,
        "-m",
        "torch.distributed.run",
        "--nnodes",
        "1",
        "--nproc_per_node",
        str(processes),
        "--master_port",
        str(free_port()),
        *script,
    ]


def cpu_launch_environment(tmp_path: Path) -> dict[str, str]:
    env = clean_environment(tmp_path)
    env["ACCELERATE_USE_CPU"] = "1"
    return env


@dataclass
class Finished:
    """A command that exited: its output and how long it took."""

    returncode: int
    stdout: str
    stderr: str
    elapsed: float

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


def run_once_more_on_teardown_abort(
    command: list[str], cwd: Path, env: dict[str, str], end_markers: Sequence[str], timeout: int = TIMEOUT
) -> Finished:
    """Run ``command``; rerun it (up to twice) when it failed only by the teardown abort (every end
    marker printed, then "terminate called without an active exception"): on a loaded 2-core
    machine gloo's teardown aborted twice in a row in one CI run, after training had finished. Or
    by the teardown hang (:data:`TEARDOWN_HANG`): a process ended by the watchdog after another
    printed its end marker, the hung one being stuck before its own. A rerun proves nothing by
    itself: only a run that ends cleanly is judged."""
    attempts = (1, 2, 3)
    for attempt in attempts:
        start = time.perf_counter()
        done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
        result = Finished(done.returncode, done.stdout, done.stderr, time.perf_counter() - start)
        finished = all(marker in done.stdout for marker in end_markers)
        hung = TEARDOWN_HANG in result.output and any(marker in done.stdout for marker in end_markers)
        torn = TEARDOWN_ABORT if finished and TEARDOWN_ABORT in result.output else TEARDOWN_HANG if hung else None
        if done.returncode != 0 and attempt < attempts[-1] and torn is not None:
            print(f"\nretrying once: a process failed at its teardown after finishing ({torn})")
            continue
        break
    return result


class Fresh:
    """Runs started afresh: the script as given, in the environment as given (what a
    :class:`Zygote` stands in for)."""

    def command(self, script: Sequence[str]) -> list[str]:
        return list(script)

    def environment(self, env: dict[str, str]) -> dict[str, str]:
        return env


ZYGOTE_SERVER = Path(__file__).with_name("zygote_server.py")
ZYGOTE_CLIENT = Path(__file__).with_name("zygote_client.py")


class Zygote:
    """A zygote server (tests/zygote_server.py) for this test session: runs started through
    :meth:`command` fork from an interpreter that imported torch and accelerate once, while their
    launchers (torchrun, accelerate launch) stay real. Started in ``folder``'s clean environment,
    so what torch reads from the environment at import is the same for every run."""

    def __init__(self, folder: Path):
        folder.mkdir(parents=True, exist_ok=True)
        self.socket = folder / "zygote.sock"
        self.log = open(folder / "zygote.log", "w")  # noqa: SIM115 - open while the server lives
        self.process = subprocess.Popen(
            [TORCH_PYTHON, str(ZYGOTE_SERVER), str(self.socket)],
            cwd=folder,
            env=clean_environment(folder),
            stdout=subprocess.PIPE,
            stderr=self.log,
            text=True,
        )
        assert self.process.stdout is not None
        if self.process.stdout.readline().strip() != "ready":  # "" when it died while importing
            self.close()
            raise RuntimeError(f"the zygote server did not start: {(folder / 'zygote.log').read_text()[-2000:]}")

    def command(self, script: Sequence[str]) -> list[str]:
        """``script`` (a path and its arguments) as the launchers' Python runs it through the zygote."""
        return [str(ZYGOTE_CLIENT), *script]

    def environment(self, env: dict[str, str]) -> dict[str, str]:
        return {**env, "REGCOMP_ZYGOTE": str(self.socket)}

    def close(self) -> None:
        self.process.kill()
        self.process.wait()
        self.log.close()


def process_markers(processes: int) -> list[str]:
    """The wrapper's end markers of a run on ``processes`` processes."""
    return [f"[regcomp] process {i} of {processes}" for i in range(processes)]
