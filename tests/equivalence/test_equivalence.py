"""Each fixture under fixtures/equivalence/ trains the same before and after ``regcomp-fix``.

See harness.py for the pairings and tolerances. Two tests per fixture: the fixture itself is a
working script (its original runs learn and save loadable checkpoints), and its conversion trains
the same. A refused conversion fails with the refusal; today's failures are strict xfails listed
in known_failures.py.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.equivalence import harness
from tests.equivalence.known_failures import KNOWN_FAILURES
from tests.launch import Zygote, torch_missing

pytestmark = pytest.mark.slow

#: How many runs of a fixture go side by side. Each spends seconds importing torch and
#: accelerate and waiting on its launcher and on gloo's rendezvous: two at a time keep both cores
#: busy (a fixture's tests take about a third less wall time on 2 cores). The comparisons do not
#: depend on it: every run is deterministic and reports its own steps.
WORKERS = int(os.environ.get("REGCOMP_EQUIVALENCE_WORKERS", "2"))
#: Whether the runs' Python processes fork from a zygote that imported torch and accelerate once
#: (tests/zygote_server.py; test_zygote.py shows a fixture's runs are the same either way). On
#: CI's 2 cores it takes about a CPU second and a half off each process; ``0`` starts every one
#: afresh.
USE_ZYGOTE = os.environ.get("REGCOMP_EQUIVALENCE_ZYGOTE", "1") != "0"


@pytest.fixture(autouse=True)
def _needs_torch():
    reason = torch_missing()
    if reason:
        pytest.skip(reason)


class OriginalRuns:
    """The original script's runs, shared by both tests of a fixture (each runs once a session)."""

    def __init__(self, root, zygote: Zygote | None):
        self.root = root
        self.zygote = zygote
        self.runs: dict[tuple[str, int], harness.Run] = {}

    def get_all(self, case: harness.Case, processes: list[int]) -> list[harness.Run]:
        """The runs for each count in ``processes``, the missing ones run side by side."""
        with ThreadPoolExecutor(WORKERS) as pool:
            return list(pool.map(lambda count: self.get(case, count), processes))

    def get(self, case: harness.Case, processes: int) -> harness.Run:
        key = (case.name, processes)
        if key not in self.runs:
            folder = harness.stage(
                case, self.root / case.name / f"original-{processes}", (case.folder / "train.py").read_bytes()
            )
            if processes == 1:
                launcher = "plain"
            else:
                launcher = {"spawn": "spawn", "accelerate": "accelerate"}.get(case.launch, "torchrun")
            label = "original, 1 process" if processes == 1 else f"original under {launcher}, 2 processes"
            self.runs[key] = harness.run(case, folder, label, launcher, converted=False, zygote=self.zygote)
        return self.runs[key]


@pytest.fixture(scope="session")
def zygote(tmp_path_factory):
    if not USE_ZYGOTE or torch_missing():
        yield None
        return
    server = Zygote(tmp_path_factory.mktemp("zygote"))
    yield server
    server.close()


@pytest.fixture(scope="session")
def originals(tmp_path_factory, zygote):
    return OriginalRuns(tmp_path_factory.mktemp("equivalence"), zygote)


def _cases_with_known_failures():
    return [
        pytest.param(name, marks=pytest.mark.xfail(strict=True, reason=KNOWN_FAILURES[name]))
        if name in KNOWN_FAILURES
        else name
        for name in harness.CASES
    ]


def test_there_are_enough_fixtures_and_every_known_failure_names_one():
    assert len(harness.CASES) >= 12, harness.CASES
    assert set(KNOWN_FAILURES) <= set(harness.CASES), set(KNOWN_FAILURES) - set(harness.CASES)


@pytest.mark.parametrize("name", harness.CASES)
def test_fixture_trains_as_written(name, originals):
    case = harness.load_case(name)
    runs = originals.get_all(case, [1, 2] if case.two_process and case.launch != "single" else [1])
    problems = []
    for run in runs:
        if run.failed:
            pytest.fail(run.failed)
        assert len({s.step for s in run.steps}) == len(run.steps), f"{run.label}: a step was printed twice"
        size = len(run.steps) // case.passes
        for number in range(case.passes):
            steps = run.steps[number * size : (number + 1) * size]
            third = max(1, len(steps) // 3)
            first = sum(s.loss for s in steps[:third]) / third
            last = sum(s.loss for s in steps[-third:]) / third
            if not last < first:
                which = f" in training {number + 1} of {case.passes}" if case.passes > 1 else ""
                problems.append(f"{run.label}: loss did not go down{which} ({first:.4f} -> {last:.4f})")
        if not run.metrics:
            problems.append(f"{run.label}: no 'EQ eval' line")
        if not run.checkpoints():
            problems.append(f"{run.label}: saved no checkpoint")
    problems += harness.check_checkpoints(case, runs, originals.zygote)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("name", _cases_with_known_failures())
def test_conversion_trains_the_same(name, originals, tmp_path):
    case = harness.load_case(name)
    result = harness.convert(case)
    if result.refused is not None:
        pytest.fail(f"regcomp-fix refused: {result.refused}")
    assert result.changed, "regcomp-fix changed nothing"
    converted = result.text.encode("utf-8")

    reference = originals.get(case, 1)
    assert reference.failed is None, f"the original does not run: {reference.failed}"
    problems: list[str] = []
    runs = [reference]
    two_process_originals = case.two_process and case.launch != "single"
    launchers = ["plain", *(case.converted_launchers if case.two_process else [])]

    def launch(launcher: str) -> harness.Run:
        label = "converted, 1 process" if launcher == "plain" else f"converted under {launcher} launch, 2 processes"
        folder = harness.stage(case, tmp_path / launcher, converted)
        return harness.run(case, folder, label, launcher, converted=True, zygote=originals.zygote)

    with ThreadPoolExecutor(WORKERS) as pool:  # side by side; judged below in a fixed order
        started = {launcher: pool.submit(launch, launcher) for launcher in launchers}
        if two_process_originals:
            started["original"] = pool.submit(originals.get, case, 2)
        finished = {key: future.result() for key, future in started.items()}

    def converted_run(launcher: str) -> harness.Run | None:
        run = finished[launcher]
        print(f"\n{name}: {run.label}: {run.elapsed:.1f}s")
        if run.failed:
            problems.append(run.failed)
            return None
        runs.append(run)
        if harness.saved_names(run) != harness.saved_names(reference):
            problems.append(f"{run.label} saved {harness.saved_names(run)}, original {harness.saved_names(reference)}")
        return run

    one = converted_run("plain")
    if one is not None:
        problems += harness.compare(reference, one, ratio=1, order_kept=True, bands={})

    if case.two_process:
        if case.launch == "single":
            two_reference, ratio, order_kept = reference, 2, False
            if case.same_steps_on_two_processes:  # every process takes the original's steps
                ratio, order_kept = 1, case.order_kept_on_two_processes
        else:
            two_reference, ratio, order_kept = finished["original"], 1, case.order_kept_on_two_processes
            assert two_reference.failed is None, f"the original does not run: {two_reference.failed}"
            runs.append(two_reference)
        for launcher in case.converted_launchers:
            two = converted_run(launcher)
            if two is not None:
                problems += harness.compare(
                    two_reference,
                    two,
                    ratio=ratio,
                    order_kept=order_kept,
                    bands=case.bands,
                    stops_early=bool(case.two_process and case.two_process.get("stops_early")),
                )
                if case.same_steps_on_two_processes and not order_kept:
                    problems += harness.own_batches(reference, two)
                problems += harness.rank_agreement(two, None if case.launch == "single" else two_reference)

    problems += harness.check_checkpoints(case, runs[1:], originals.zygote)
    assert not problems, "\n\n".join(problems)


def test_metrics_and_steps_are_read_through_another_process_marker():
    """Seen in CI: rank 1's end marker landed right after rank 0's last value on torchrun's pipe."""
    output = "EQ step=3 epoch=0 loss=0.5 lr=0.1\nEQ eval val_loss=3.714056[regcomp] process 1 of 2\n"
    assert harness.parse_metrics(output) == {"val_loss": 3.714056}
    assert [s.step for s in harness.parse_steps(output)] == [3]


def test_a_step_line_is_read_through_another_process_marker_after_it():
    """Seen in CI (torchrun_env_ddp, epoch 2 one step short): print() writes a line and its newline
    separately, and rank 1's end marker landed in between on torchrun's pipe."""
    output = "EQ step=22 epoch=2 loss=0.5 lr=0.05\nEQ step=23 epoch=2 loss=0.4 lr=0.05[regcomp] process 1 of 2\n\n"
    steps = harness.parse_steps(output)
    assert [(s.step, s.lr) for s in steps] == [(22, 0.05), (23, 0.05)]
