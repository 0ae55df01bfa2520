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

import re
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.codemod.fixture_cases import FIXTURES, convert_case
from tests.launch import (
    TORCH_PYTHON,
    accelerate_launch,
    clean_environment,
    cpu_launch_environment,
    process_markers,
    run_once_more_on_teardown_abort,
    torch_missing,
    write_wrapper,
)

HANG_AFTER = 60

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
    "per_rank_device": ["--epochs", "6"],
    "accelerator_cpu_switch": ["--epochs", "6", "--no-accel"],
    "handed_in_loaders": [],
    "data_parallel_batches": [],
    "lars_param_groups": ["--epochs", "6"],
    "model_made_again_after_training": [],
    "checkpoint_helpers": ["--epochs", "3"],
    "torchvision_reference": ["--epochs", "4", "--output-dir", "."],
    "cycled_loader": [],
}
INDUCTOR_CASE = "module_level_script"
#: The cases the lowest-bounds job runs (``-m lowest``): together they use every Accelerate API that
#: any converted fixture uses (checked below), so the lowest accelerate is tried on each of them
#: without training all 21 scripts a second time.
LOWEST_CASES = (
    "accelerate_two_branches",
    "checkpoint_helpers",
    "gan_two_models",
    "legacy_dynamo_backend",
    "local_repeated_blocks",
    "model_made_again_after_training",
    "nanogpt_ddp",
)
#: What a converted script asks of Accelerate: its methods and the Accelerator/plugin keywords.
ACCELERATE_USE = re.compile(
    r"(?<!torch\.)accelerator\.[a-z_]+|[A-Z][A-Za-z]+Kwargs|TorchDynamoPlugin|keep_torch_compile|use_regional_compilation"
    r"|mixed_precision=|cpu=|gradient_accumulation_steps|kwargs_handlers"
)


@pytest.fixture(autouse=True)
def _needs_torch():
    reason = torch_missing()
    if reason:
        pytest.skip(reason)


def _losses(output: str) -> list[float]:
    return [float(v) for v in re.findall(r"\bloss[^0-9\n-]{0,3}(-?\d+\.\d+)", output, flags=re.IGNORECASE)]


def _run(command: list[str], tmp_path: Path, env: dict[str, str], processes: int = 1) -> tuple[str, float]:
    done = run_once_more_on_teardown_abort(command, tmp_path, env, process_markers(processes))
    assert done.returncode == 0, f"exit code {done.returncode}:\n{done.output[-4000:]}"
    return done.stdout, done.elapsed


def _assert_learns(stdout: str) -> None:
    losses = _losses(stdout)
    assert len(losses) >= 2, f"no loss values printed:\n{stdout[-2000:]}"
    third = max(1, len(losses) // 3)
    first, last = sum(losses[:third]) / third, sum(losses[-third:]) / third
    assert last < first, f"loss did not go down: {losses}"


#: The one- and two-process runs of a case are started side by side, and each converts the case
#: first: CPython 3.11's ``ast.parse`` is not safe in two threads at once (clean-clone CI of
#: b17e037: "SystemError: AST constructor recursion depth mismatch (before=42, after=39)").
_CONVERTING = threading.Lock()


def _write(tmp_path: Path, case: str, backend: str | None) -> Path:
    if backend is None:
        data = (FIXTURES / case / "expected.py").read_bytes()
    else:
        with _CONVERTING:
            result = convert_case(case, backend=backend)
        assert result.refused is None and result.changed, result.refused
        data = result.data
    script = tmp_path / "train.py"
    script.write_bytes(data)
    write_wrapper(tmp_path, HANG_AFTER)
    return script


def _plain(case: str, tmp_path: Path, backend: str | None) -> float:
    script = _write(tmp_path, case, backend)
    stdout, elapsed = _run(
        [TORCH_PYTHON, "wrapper.py", str(script), *EAGER_CASES.get(case, [])], tmp_path, clean_environment(tmp_path)
    )
    _assert_learns(stdout)
    assert "[regcomp] process 0 of 1" in stdout
    print(f"\n{case} ({backend or 'as converted'}), 1 process: {elapsed:.1f}s")
    return elapsed


def _launched(case: str, tmp_path: Path, backend: str | None) -> float:
    script = _write(tmp_path, case, backend)
    env = cpu_launch_environment(tmp_path)
    launch = accelerate_launch(["wrapper.py", str(script), *EAGER_CASES.get(case, [])])
    stdout, elapsed = _run(launch, tmp_path, env, processes=2)
    _assert_learns(stdout)
    assert "[regcomp] process 0 of 2" in stdout and "[regcomp] process 1 of 2" in stdout, stdout[-2000:]
    print(f"\n{case} ({backend or 'as converted'}), accelerate launch 2 CPU processes: {elapsed:.1f}s")
    return elapsed


@pytest.mark.parametrize(
    "case", [pytest.param(c, marks=pytest.mark.lowest) if c in LOWEST_CASES else c for c in sorted(EAGER_CASES)]
)
def test_converted_script_trains_on_one_process_and_under_accelerate_launch_on_two(case, tmp_path):
    """Both runs side by side: each spends most of its time importing torch and waiting on its
    launcher, so together they take about the time of the two-process run alone."""
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    with ThreadPoolExecutor(2) as pool:
        one = pool.submit(_plain, case, tmp_path / "one", "eager")
        two = pool.submit(_launched, case, tmp_path / "two", "eager")
        one.result()
        two.result()


def test_the_lowest_cases_use_every_accelerate_api_the_conversions_use():
    def uses(case: str) -> set[str]:
        text = convert_case(case, backend="eager").text
        return set(ACCELERATE_USE.findall(text))

    everything = set().union(*(uses(case) for case in EAGER_CASES))
    covered = set().union(*(uses(case) for case in LOWEST_CASES))
    assert set(LOWEST_CASES) <= set(EAGER_CASES)
    assert everything - covered == set(), f"add a case using {sorted(everything - covered)} to LOWEST_CASES"


@pytest.mark.lowest
def test_golden_script_trains_with_inductor(tmp_path):
    for mode, run in (("plain", _plain), ("launched", _launched)):
        folder = tmp_path / mode
        folder.mkdir()
        run(INDUCTOR_CASE, folder, None)
