"""Proof that a conversion trains the same: run a fixture before and after ``regcomp-fix`` and compare.

A fixture is a folder under ``fixtures/equivalence/``: ``train.py`` (the script converted), any
local modules it imports, and ``case.py`` whose ``CASE`` dict says how it runs:

- ``launch``: ``"torchrun"`` (env-rank DDP script), ``"spawn"`` (starts its own workers with
  mp.spawn), ``"accelerate"`` (a script that already uses Accelerate: the original runs under
  ``accelerate launch`` too, and the conversion adds the plugin) or ``"single"`` (a one-process
  script);
- ``args``: script arguments for every run; ``{out_dir}`` is the run's checkpoint folder and
  ``{port}`` a free port; ``phases`` (optional): argument lists run one after the other in the
  same folder (save, then resume);
- ``original_two_process_args``: extra arguments that make a ``spawn`` script start two workers;
- ``factory`` (``module:function`` in the fixture folder) and ``checkpoint_key`` (None: the file
  is the state_dict itself) and ``strip_prefix``: how a checkpoint is loaded, strictly;
- ``two_process``: None (one-process runs prove it all) or ``{"data_order": "kept"|"changed",
  "bands": {metric: max abs difference}}``, ``"stops_early": True`` for a script that stops on a
  validation result (the epochs both runs made are compared), and for a one-process original ``"steps": "same"``
  when it runs a fixed number of iterations on batches it draws itself (two processes then take
  as many steps as one, not half as many);
- ``passes`` (optional, default 1): how many independent trainings the run makes one after the
  other (k-fold cross-validation trains a fresh model per fold): the steps are split into that
  many equal parts and the loss must go down within each;
- ``launch_mixed_precision`` (optional): how the user launches the *converted* script:
  ``accelerate launch --mixed_precision <value>``, and ``ACCELERATE_MIXED_PRECISION=<value>`` in
  the environment of its plain and torchrun runs (what ``accelerate config`` would set).

Every fixture prints, on its main process (the harness reads the main process's stdout only: a
one-process script converted to run on two prints on both, and rank 1's lines go to a file), ``EQ step=<n> epoch=<e> loss=<f> lr=<repr>`` per optimizer
step, ``EQ eval <metric>=<value> ...`` once, and ``EQ done`` at the end; the conversion must keep them.

Pairings: converted on one process vs the original on one process (losses within LOSS_TOLERANCE,
LR exactly, eval within LOSS_TOLERANCE); converted on two processes (accelerate launch, and torchrun
for scripts the user starts with torchrun; its own mp.spawn for a spawning script, which accelerate
launch would start twice over) vs the original on two processes (torchrun or its own mp.spawn). A one-process original has no two-process run: its two-process conversion is compared
with the one-process original at the same point of the data (converted step k of an epoch <-> original
step 2k of that epoch, or step k where the steps are the same: the LR exactly, final metrics within
the case's bands).
Every two-process conversion run through the
wrapper must also end with the same parameters on both ranks (``rank_agreement``), unless the
original's two processes part too.
"""

from __future__ import annotations

import json
import math
import re
import runpy
import shutil
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from regcomp_lint.cli.fix_command import FileResult, FixOptions, convert_options, process_text
from regcomp_lint.lint.config import Settings
from tests.launch import (
    TORCH_PYTHON,
    Fresh,
    Zygote,
    accelerate_launch,
    clean_environment,
    cpu_launch_environment,
    free_port,
    process_markers,
    run_once_more_on_teardown_abort,
    torchrun,
    write_wrapper,
)

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "equivalence"
CASES = sorted(p.name for p in FIXTURES.iterdir() if (p / "case.py").is_file())
CHECKPOINT_CHECK = Path(__file__).with_name("checkpoint_check.py")
LOSS_TOLERANCE = 2e-3
SCRIPT = "train.py"

#: Anchored at neither end: under torchrun the workers share the launcher's stdout, and a line
#: another process leaves unterminated can end up in front of ours, or its end marker right after
#: ours (the wrapper writes whole lines, but a script may not).
_NUMBER = r"[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|nan|inf)"
STEP_LINE = re.compile(rf"EQ step=(\d+) epoch=(\d+) loss=({_NUMBER}) lr=({_NUMBER})(?=\s|\[regcomp\]|$)", re.MULTILINE)
EVAL_LINE = re.compile(r"EQ eval (.*)$", re.MULTILINE)
METRIC_ITEM = re.compile(rf"(\w+)=({_NUMBER})")


@dataclass(frozen=True)
class Case:
    name: str
    folder: Path
    launch: str
    args: list[str]
    phases: list[list[str]]
    original_two_process_args: list[str]
    factory: str
    checkpoint_key: str | None
    strip_prefix: str | None
    two_process: dict | None
    launch_mixed_precision: str | None = None
    passes: int = 1

    @property
    def order_kept_on_two_processes(self) -> bool:
        return bool(self.two_process) and self.two_process.get("data_order") == "kept"

    @property
    def same_steps_on_two_processes(self) -> bool:
        return bool(self.two_process) and self.two_process.get("steps") == "same"

    @property
    def bands(self) -> dict[str, float]:
        return dict((self.two_process or {}).get("bands", {}))

    @property
    def converted_launchers(self) -> list[str]:
        """Two-process launchers for the converted script: the way the user starts the original
        (torchrun, or the script's own mp.spawn: the converted script must still start so), and
        accelerate launch for scripts that do not start their own workers."""
        if not self.two_process:
            return []
        return {"torchrun": ["accelerate", "torchrun"], "spawn": ["spawn"]}.get(self.launch, ["accelerate"])


def load_case(name: str) -> Case:
    folder = FIXTURES / name
    data = runpy.run_path(str(folder / "case.py"))["CASE"]
    known = {
        "launch",
        "args",
        "phases",
        "original_two_process_args",
        "factory",
        "checkpoint_key",
        "strip_prefix",
        "two_process",
        "launch_mixed_precision",
        "passes",
    }
    unknown = set(data) - known
    if unknown:
        raise ValueError(f"{name}/case.py: unknown keys {sorted(unknown)}")
    if data["launch"] not in ("torchrun", "spawn", "accelerate", "single"):
        raise ValueError(f"{name}/case.py: launch must be torchrun, spawn, accelerate or single")
    return Case(
        name=name,
        folder=folder,
        launch=data["launch"],
        args=list(data.get("args", [])),
        phases=[list(p) for p in data.get("phases", [[]])],
        original_two_process_args=list(data.get("original_two_process_args", [])),
        factory=data["factory"],
        checkpoint_key=data.get("checkpoint_key"),
        strip_prefix=data.get("strip_prefix"),
        two_process=data.get("two_process"),
        launch_mixed_precision=data.get("launch_mixed_precision"),
        passes=int(data.get("passes", 1)),
    )


def convert(case: Case, backend: str | None = "eager", text: str | None = None) -> FileResult:
    """``regcomp-fix`` on the fixture's script (or on ``text`` in its place), in-process: the
    conversion and then the lint's safe fixes, as the command writes them (eager backend by
    default: fast runs); given the script's path, as the command line would, so the fixture's
    local modules are read."""
    script = case.folder / SCRIPT
    options = FixOptions(paths=(str(script),), backend=backend)
    if text is None:
        text = script.read_text(encoding="utf-8")
    return process_text(text, str(script), Settings(), convert_options(options), False)


@dataclass(frozen=True)
class Step:
    step: int
    epoch: int
    loss: float
    lr: float


@dataclass
class Run:
    """One run of a script (all its phases): what its main process printed and where it saved."""

    label: str
    processes: int
    returncode: int
    output: str
    out_dir: Path
    elapsed: float
    steps: list[Step] = field(default_factory=list)
    metrics: dict[str, float] = field(default_factory=dict)
    #: RANK -> digest of the optimizers' final parameters (see tests.launch.RANK_DIGEST_BEFORE);
    #: empty for a script without a torch optimizer and for runs not started through the wrapper
    rank_digests: dict[str, str] = field(default_factory=dict)

    @property
    def failed(self) -> str | None:
        if self.returncode != 0:
            return f"{self.label} exited {self.returncode}:\n{self.output[-3000:]}"
        if "EQ done" not in self.output:
            return f"{self.label} never printed 'EQ done':\n{self.output[-3000:]}"
        if not self.steps:
            return f"{self.label} printed no 'EQ step=' lines:\n{self.output[-3000:]}"
        return None

    def checkpoints(self) -> list[Path]:
        return sorted(p for p in self.out_dir.rglob("*") if p.is_file())


def parse_steps(output: str) -> list[Step]:
    return [Step(int(s), int(e), float(loss), float(lr)) for s, e, loss, lr in STEP_LINE.findall(output)]


def parse_metrics(output: str) -> dict[str, float]:
    metrics: dict[str, float] = {}
    for line in EVAL_LINE.findall(output):
        # each value read as a number: another process's end marker can land right after the last
        # one when both write to torchrun's shared stdout ("val_loss=3.714056[regcomp] process 1 of 2")
        for key, value in METRIC_ITEM.findall(line):
            metrics[key] = float(value)
    return metrics


def stage(case: Case, folder: Path, script: bytes) -> Path:
    """A copy of the fixture's folder with ``script`` as its ``train.py`` (its packages too: a
    ``utils/`` the script imports from)."""
    if folder.exists():  # a run retried after an error in an earlier test of the session
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    for source in case.folder.iterdir():
        if source.is_file() and source.suffix == ".py" and source.name != "case.py":
            shutil.copy(source, folder / source.name)
        elif source.is_dir() and (source / "__init__.py").is_file():
            shutil.copytree(source, folder / source.name, ignore=shutil.ignore_patterns("__pycache__"))
    (folder / SCRIPT).write_bytes(script)
    return folder


def _arguments(arguments: list[str], out_dir: Path) -> list[str]:
    return [a.replace("{out_dir}", str(out_dir)).replace("{port}", str(free_port())) for a in arguments]


def run(case: Case, folder: Path, label: str, launcher: str, converted: bool, zygote: Zygote | None = None) -> Run:
    """Run the staged script in ``folder``: ``launcher`` is plain, torchrun, accelerate or spawn;
    its processes fork from ``zygote`` when one is given (the launchers stay real)."""
    starts = zygote or Fresh()
    out_dir = folder / "out"
    processes = 1 if launcher == "plain" else 2
    # a converted script is checked through accelerate's view of the processes; an original one,
    # which tears its own process group down, through the launcher's environment (unless it
    # already uses Accelerate)
    write_wrapper(
        folder, accelerate_marker=converted or case.launch == "accelerate", main_stdout_only=True, rank_digest=True
    )
    outputs, stdouts, returncode, elapsed = [], [], 0, 0.0
    for phase in case.phases:
        arguments = _arguments(case.args + phase, out_dir)
        if launcher == "spawn":
            script = starts.command([SCRIPT, *arguments, *_arguments(case.original_two_process_args, out_dir)])
            command, env, markers = [TORCH_PYTHON, *script], clean_environment(folder), ["EQ done"]
        elif launcher == "plain":
            command = [TORCH_PYTHON, *starts.command(["wrapper.py", SCRIPT, *arguments])]
            env, markers = clean_environment(folder), process_markers(1)
        elif launcher == "torchrun":
            command = torchrun(starts.command(["wrapper.py", SCRIPT, *arguments]))
            env, markers = clean_environment(folder), process_markers(2)
        elif launcher == "accelerate":
            command = accelerate_launch(
                starts.command(["wrapper.py", SCRIPT, *arguments]), mixed_precision=_mixed_precision(case, converted)
            )
            env, markers = cpu_launch_environment(folder), process_markers(2)
        else:
            raise ValueError(launcher)
        if converted and case.launch_mixed_precision and launcher != "accelerate":
            env["ACCELERATE_MIXED_PRECISION"] = case.launch_mixed_precision
        env = starts.environment(env)
        done = run_once_more_on_teardown_abort(command, folder, env, markers)
        outputs.append(done.output)
        stdouts.append(done.stdout)
        elapsed += done.elapsed
        if done.returncode == 0 and not all(m in done.stdout for m in markers):
            missing = [m for m in markers if m not in done.stdout]
            outputs.append(f"[harness] expected {processes} process(es); missing end markers {missing}")
            returncode = -1
            break
        if done.returncode != 0:
            returncode = done.returncode
            break
    stdout = "\n".join(stdouts)
    output = "\n".join(outputs)
    digests = {p.name.split(".")[1]: p.read_text() for p in sorted(folder.glob("rank_digest.*.txt"))}
    return Run(
        label, processes, returncode, output, out_dir, elapsed, parse_steps(stdout), parse_metrics(stdout), digests
    )


def rank_agreement(candidate: Run, original: Run | None) -> list[str]:
    """A two-process conversion whose ranks end with different parameters, where the original's
    ranks agree (or the original runs one process): DDP keeps every rank's parameters equal, so
    the conversion lost the sync somewhere (a re-initialisation after the wrap, a buffer DDP was
    told to ignore, a wrap taken apart). Runs without digests are not judged."""
    if len(candidate.rank_digests) < 2 or len(set(candidate.rank_digests.values())) == 1:
        return []
    if original is not None and len(set(original.rank_digests.values())) > 1:
        return []  # the original's ranks part too: the conversion keeps what it does
    shown = ", ".join(f"rank {rank} {digest[:12]}" for rank, digest in sorted(candidate.rank_digests.items()))
    return [f"{candidate.label}: the ranks end with different parameters ({shown}); DDP keeps them equal"]


def _mixed_precision(case: Case, converted: bool) -> str:
    return (case.launch_mixed_precision if converted else None) or "no"


def compare(
    reference: Run, candidate: Run, *, ratio: int, order_kept: bool, bands: dict[str, float], stops_early: bool = False
) -> list[str]:
    """What differs between a converted run and its original. ``ratio``: how many original steps
    one candidate step stands for (2 when a one-process original is compared with two processes);
    ``stops_early``: the script stops on a validation result, which two processes' training may
    reach at another epoch: the epochs both ran are compared, and the candidate's must still run
    from the first on without a gap."""
    problems: list[str] = []
    name = f"{candidate.label} vs {reference.label}"
    ref_epochs, cand_epochs = _by_epoch(reference.steps), _by_epoch(candidate.steps)
    if stops_early:
        if sorted(cand_epochs) != list(range(len(cand_epochs))):
            problems.append(f"{name}: epochs {sorted(cand_epochs)} do not run from 0 without a gap")
    elif sorted(ref_epochs) != sorted(cand_epochs):
        problems.append(f"{name}: epochs {sorted(cand_epochs)}, original {sorted(ref_epochs)}")
    lr_diffs, loss_diffs, count_diffs = [], [], []
    for epoch in sorted(set(ref_epochs) & set(cand_epochs)):
        ref, cand = ref_epochs[epoch], cand_epochs[epoch]
        if len(cand) != math.ceil(len(ref) / ratio):
            count_diffs.append(f"epoch {epoch}: {len(cand)} steps, expected {math.ceil(len(ref) / ratio)}")
        for k, step in enumerate(cand):
            if k * ratio >= len(ref):
                break
            original = ref[k * ratio]
            if step.lr != original.lr:
                lr_diffs.append((step.step, step.lr, original.lr))
            if order_kept and ratio == 1 and abs(step.loss - original.loss) > LOSS_TOLERANCE:
                loss_diffs.append((step.step, step.loss, original.loss))
    if count_diffs:
        problems.append(f"{name}: optimizer steps per epoch differ ({'; '.join(count_diffs)})")
    if lr_diffs:
        s, got, want = lr_diffs[0]
        problems.append(
            f"{name}: LR differs at {len(lr_diffs)} of {len(candidate.steps)} steps, first at step {s}: {got!r}, "
            f"original {want!r}"
        )
    if loss_diffs:
        worst = max(loss_diffs, key=lambda d: abs(d[1] - d[2]))
        problems.append(
            f"{name}: loss differs by more than {LOSS_TOLERANCE} at {len(loss_diffs)} of {len(candidate.steps)} "
            f"steps, first at step {loss_diffs[0][0]}, worst at step {worst[0]}: {worst[1]} vs {worst[2]} "
            f"(diff {abs(worst[1] - worst[2]):.4g})"
        )
    problems += _compare_metrics(name, reference.metrics, candidate.metrics, {} if order_kept else bands)
    return problems


def own_batches(reference: Run, candidate: Run) -> list[str]:
    """Two processes that each draw their own batches average other gradients than one process
    did, so their losses part from the original's; the same batches in every process would give
    the original's losses step for step (N processes doing one process's work)."""
    pairs = list(zip(reference.steps, candidate.steps))
    if pairs and all(abs(a.loss - b.loss) <= LOSS_TOLERANCE for a, b in pairs):
        return [
            f"{candidate.label}: the losses equal the one-process original's at all {len(pairs)} steps: every "
            "process trained on the same batches"
        ]
    return []


def _by_epoch(steps: list[Step]) -> dict[int, list[Step]]:
    grouped: dict[int, list[Step]] = defaultdict(list)
    for step in steps:
        grouped[step.epoch].append(step)
    return grouped


def _compare_metrics(name: str, reference: dict[str, float], candidate: dict[str, float], bands) -> list[str]:
    if sorted(reference) != sorted(candidate):
        return [f"{name}: eval metrics {sorted(candidate)}, original {sorted(reference)}"]
    problems = []
    for key, want in reference.items():
        tolerance = bands.get(key, LOSS_TOLERANCE)
        got = candidate[key]
        if abs(got - want) > tolerance:
            kind = "band" if key in bands else "tolerance"
            problems.append(
                f"{name}: eval {key}={got}, original {want} (diff {abs(got - want):.4g} > {kind} {tolerance})"
            )
    return problems


def check_checkpoints(case: Case, runs: list[Run], zygote: Zygote | None = None) -> list[str]:
    """Every file a run saved loads strictly into a fresh model from the fixture's factory, and a
    converted run saves the files its original saved (one process: the first run is the original)."""
    problems = []
    paths = [path for r in runs for path in r.checkpoints()]
    if paths:
        # run in a staged copy of the fixture: importing the factory's module may run a script that
        # trains at module level and writes files, which must not land in the fixture itself
        staged = runs[0].out_dir.parent
        check = [
            str(CHECKPOINT_CHECK),
            str(staged),
            case.factory,
            json.dumps(case.checkpoint_key),
            json.dumps(case.strip_prefix),
            *map(str, paths),
        ]
        starts = zygote or Fresh()
        done = run_once_more_on_teardown_abort(
            [TORCH_PYTHON, *starts.command(check)], staged, starts.environment(clean_environment(staged)), []
        )
        if done.returncode != 0:
            return [f"checkpoint check crashed:\n{done.output[-3000:]}"]
        for line in done.stdout.splitlines():
            if line.startswith("{"):
                result = json.loads(line)
                if result["error"]:
                    problems.append(f"checkpoint {_short(result['path'])} does not load strictly: {result['error']}")
    return problems


def saved_names(run: Run) -> list[str]:
    return [str(p.relative_to(run.out_dir)) for p in run.checkpoints()]


def _short(path: str) -> str:
    parts = Path(path).parts
    return "/".join(parts[-3:])
