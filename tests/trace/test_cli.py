"""``regcomp-lint trace`` as users run it.

Bad input is one clear ``regcomp-lint: error:`` line on stderr and exit 2, never a traceback.
Most runs are subprocesses of the installed command; the error cases that stop before any
tracing also run in-process through click (``in_process``), where torch is already imported, to
keep the suite fast: the same command, the same ``handled`` error path, the same streams.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from tests.trace.conftest import CLI, REPO

pytest.importorskip("torch")

M = "fixtures/trace/models"
S = "fixtures/trace/scripts"
BAD = f"{M}/bad_factories.py"


def run(*args, cwd=REPO, timeout=240):
    command = [str(CLI)] if CLI.exists() else [sys.executable, "-m", "regcomp_lint"]
    env = dict(os.environ, NO_COLOR="1")
    return subprocess.run([*command, "trace", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def in_process(*args, cwd=REPO):
    """The trace command through click's runner: ``(returncode, stdout, stderr)`` like ``run``."""
    from click.testing import CliRunner

    from regcomp_lint.cli.commands import main

    old = os.getcwd()
    os.chdir(cwd)
    try:
        result = CliRunner().invoke(main, ["trace", *args], env={"NO_COLOR": "1"})
    finally:
        os.chdir(old)
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return subprocess.CompletedProcess(args, result.exit_code, result.stdout, result.stderr)


def factories(model, inputs=None):
    return ["--model", model, "--inputs", inputs or f"{BAD}:make_inputs"]


def assert_one_error_line(result, *words):
    assert result.returncode == 2, (result.returncode, result.stderr[-2000:])
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    errors = [line for line in result.stderr.splitlines() if line.startswith("regcomp-lint: error:")]
    assert len(errors) == 1, result.stderr[-2000:]
    for word in words:
        assert word in errors[0], errors[0]
    assert result.stdout == ""
    return errors[0]


@pytest.mark.parametrize(
    "args, words",
    [
        pytest.param(
            factories(f"{M}/raises.py:make_model", f"{M}/raises.py:make_inputs"),
            ["ValueError: Refuses wants a 3-d batch, got 2 dimensions", "raises.py:15"],
            id="forward-raises",
        ),
        pytest.param(
            factories(f"{BAD}:make_model", f"{BAD}:make_wrong_shape"),
            ["the model raised on the sample batch (float32[2, 5])", "mat1 and mat2 shapes"],
            id="wrong-shape",
        ),
        pytest.param(
            factories(f"{BAD}:make_not_a_module"), ["returned dict, not a torch.nn.Module"], id="not-a-module"
        ),
        pytest.param([f"{S}/exits.py"], ["exit", "3"], id="script-exits"),
        pytest.param(["--check", *factories(f"{BAD}:make_model")], ["--check", "--apply"], id="check-without-apply"),
        pytest.param([f"{S}/plain_compile.py", *factories(f"{BAD}:make_model")], ["not both"], id="script-and-model"),
        pytest.param([], ["--model"], id="nothing-to-trace"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args, words):
    assert_one_error_line(run(*args), *words)


@pytest.mark.parametrize(
    "args, words",
    [
        pytest.param(factories(f"{BAD}:nope"), ["has no 'nope'", "make_model"], id="factory-not-found"),
        pytest.param(factories(f"{M}/missing.py:make_model"), ["file", "missing.py", "not found"], id="file-not-found"),
        pytest.param(
            factories("no_such_package.models:make_model"), ["no file or module named"], id="module-not-found"
        ),
        pytest.param(factories(f"{BAD}:not_callable"), ["is a int, not a factory"], id="not-callable"),
        pytest.param(factories(f"{BAD}:make_model", f"{BAD}:make_string"), ["returned str"], id="inputs-string"),
        pytest.param(factories("models.py"), ["expected FILE_OR_MODULE:FACTORY"], id="no-factory-name"),
        pytest.param([f"{S}/no_forward.py", "--max-seconds", "60"], ["forward"], id="script-never-calls-forward"),
    ],
)
def test_bad_input_in_process(args, words):
    assert_one_error_line(in_process(*args), *words)


def test_a_script_that_never_reaches_forward_in_time_is_stopped_by_max_seconds():
    result = run(f"{S}/sleeps.py", "--max-seconds", "1", timeout=60)
    assert_one_error_line(result, "--max-seconds")


def test_help_says_trace_runs_user_code_and_the_lint_does_not():
    trace_help = run("--help").stdout
    assert "THIS RUNS YOUR CODE" in " ".join(trace_help.split())
    from click.testing import CliRunner

    from regcomp_lint.cli.commands import main

    lint_help = " ".join(CliRunner().invoke(main, ["--help"]).output.split())
    assert "never runs the code it reads" in lint_help


def test_device_cuda_without_a_gpu():
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is available here")
    assert_one_error_line(
        in_process("--device", "cuda", *factories(f"{BAD}:make_model")), "--device cuda", "no CUDA GPU"
    )


def test_json_on_stdout_with_a_printing_model_plus_plan_and_graph(tmp_path):
    from regcomp_lint.plan import Plan

    plan, graph = tmp_path / "plan.json", tmp_path / "graph.html"
    result = run(
        *factories(f"{M}/planted_breaks.py:make_model", f"{M}/planted_breaks.py:make_inputs"),
        "--format",
        "json",
        "--plan",
        str(plan),
        "--graph",
        str(graph),
    )
    assert result.returncode == 0, result.stderr[-2000:]
    data = json.loads(result.stdout)  # the model's prints went to stderr
    # what the model printed (the line, not the source excerpt of its print call in the JSON)
    assert "head input (2, 6, 16)" in result.stderr and "head input (2, 6, 16)" not in result.stdout
    assert data["model"] == "PlantedNet" and len(data["graph_breaks"]) == 2
    loaded = Plan.load(plan)
    assert loaded.strategy == data["recommendation"]["strategy"] == "regional"
    assert loaded.plugin == data["recommendation"]["plugin"]
    page = graph.read_text(encoding="utf-8")
    assert page.lstrip().lower().startswith("<!doctype html") and "PlantedNet" in page
    assert "http://" not in page and "https://" not in page.replace("https://meta-pytorch.github.io", "")

    # regcomp-fix --plan accepts the plan on a training script (0: nothing to change, 1: changes)
    script = tmp_path / "train.py"
    shutil.copy(REPO / "fixtures" / "lint" / "nlp_example.py", script)
    fix = REPO / ".venv" / "bin" / "regcomp-fix"
    fixed = subprocess.run(
        [str(fix), "--plan", str(plan), str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert fixed.returncode in (0, 1), fixed.stderr
    assert "use_regional_compilation=True" in fixed.stdout


@pytest.mark.parametrize("suffix", ["dot", "json"])
def test_graph_formats(tmp_path, suffix):
    out = tmp_path / f"graph.{suffix}"
    result = in_process(*factories(f"{BAD}:make_model"), "--graph", str(out))
    assert result.returncode == 0, result.stderr[-2000:]
    assert f"region graph written to {out}" in result.stdout
    text = out.read_text(encoding="utf-8")
    if suffix == "dot":
        assert text.lstrip().startswith(("digraph", "strict digraph"))
    else:
        assert json.loads(text)["nodes"]


def test_meta_device_with_a_kv_cache_says_what_to_pass():
    result = in_process(*factories(f"{M}/gpt2.py:make_model", f"{M}/gpt2.py:make_inputs"), "--device", "meta")
    assert_one_error_line(result, "the model raised under torch._dynamo.explain", "pass use_cache=False in the inputs")


def test_meta_device_on_gpt2_says_what_is_unknown():
    result = run(*factories(f"{M}/gpt2.py:make_model", f"{M}/gpt2.py:make_inputs_no_cache"), "--device", "meta")
    assert result.returncode == 0, result.stderr[-2000:]
    out = result.stdout
    assert out.startswith("GPT2LMHeadModel on meta")
    assert "h[0..3]  GPT2Block ×4" in out
    assert "unknown" in out and "recompiles unknown" in out
    assert "Recompiles: unknown: the model cannot run eagerly on this device" in out
    assert "Recompiles: none" not in out  # not probed is not none
    assert "Recommendation: regional over transformer.h" in out


def test_apply_check_reports_the_max_abs_difference():
    from regcomp_lint.trace import apply

    if not hasattr(apply, "apply_plan"):
        pytest.xfail("regcomp_lint/trace/apply.py has no apply_plan yet")
    result = run(
        *factories(f"{M}/planted_breaks.py:make_model", f"{M}/planted_breaks.py:make_inputs"),
        "--apply",
        "--check",
        "--backend",
        "eager",
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "apply: regional compiled in place" in result.stdout
    assert "max abs difference vs eager" in result.stdout and " ok" in result.stdout.splitlines()[-1]


def test_apply_check_compares_the_numbers_inside_a_kv_cache():
    """GPT-2 returns a fresh ``DynamicCache`` each call: the check must compare the tensors in it,
    not call two cache objects different (it once said MISMATCH for every transformers LM)."""
    result = run(
        *factories(f"{M}/gpt2.py:make_model", f"{M}/gpt2.py:make_inputs"), "--apply", "--check", "--backend", "eager"
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    last = result.stdout.splitlines()[-1]
    assert "max abs difference vs eager" in last and last.endswith(" ok"), last
    assert "differ in structure" not in last


def test_json_pipes_into_json_tool_when_the_model_prints_everywhere():
    """Prints at import, in the factories and in forward all go to stderr; the shorter-batch
    probe keeps ``targets.view(-1)`` working (its tensors are contiguous)."""
    pm = f"{M}/prints_and_views.py"
    command = [str(CLI)] if CLI.exists() else [sys.executable, "-m", "regcomp_lint"]
    line = " ".join([*command, "trace", *factories(f"{pm}:make_model", f"{pm}:make_inputs"), "--format", "json"])
    result = subprocess.run(
        f"{line} | {sys.executable} -m json.tool",
        shell=True,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=240,
        env=dict(os.environ, NO_COLOR="1"),
    )
    assert result.returncode == 0, result.stderr[-3000:]
    data = json.loads(result.stdout)
    assert data["model"] == "TinyGPT"
    for printed in ("importing prints_and_views", "building TinyGPT", "building the batch", "forward on"):
        assert printed in result.stderr
    assert data["second_batch"] == "dim 1: 16 -> 12", data["second_batch"]  # not "the model rejected it"
    assert [r["kind"] for r in data["recompiles"]] == ["shape"]


@pytest.mark.parametrize(
    "args, words",
    [
        pytest.param(["--graph", "out.png"], ["--graph out.png", ".dot, .json or .html"], id="graph-suffix"),
        pytest.param(["--graph", "graph"], ["(no suffix)"], id="graph-no-suffix"),
        pytest.param(["--plan", "/no/such/folder/plan.json"], ["--plan", "does not exist"], id="plan-folder"),
    ],
)
def test_output_paths_are_checked_before_torch_is_imported_or_the_model_built(args, words):
    """A factory that raises would be reported if it ran: the output error comes first, and
    torch is not even imported (the check costs nothing)."""
    probe = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from regcomp_lint.cli.commands import main\n"
        f"r = CliRunner().invoke(main, ['trace', *{factories(f'{M}/raises.py:make_model')!r}, *{args!r}])\n"
        "print(r.exit_code, 'torch' in sys.modules)\n"
        "print(r.stderr)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ, PYTHONPATH=str(REPO)),
    )
    first, _, error = result.stdout.partition("\n")
    assert first == "2 False", result.stdout + result.stderr[-2000:]
    assert error.startswith("regcomp-lint: error:"), error
    for word in words:
        assert word in error, error


def test_unwritable_plan_file_is_refused_before_tracing(tmp_path):
    plan = tmp_path / "plan.json"
    plan.write_text("{}", encoding="utf-8")
    plan.chmod(0o444)
    if os.access(plan, os.W_OK):
        pytest.skip("running as root: every file is writable")
    assert_one_error_line(in_process(*factories(f"{M}/raises.py:make_model"), "--plan", str(plan)), "not writable")


def test_a_trainer_script_is_told_how_to_turn_regional_compilation_on(tmp_path):
    """TrainingArguments has no regional switch: the report names the variable and the launch flag."""
    pytest.importorskip("transformers")
    env_marker = tmp_path / "out"
    result = subprocess.run(
        [*([str(CLI)] if CLI.exists() else [sys.executable, "-m", "regcomp_lint"]), "trace", f"{S}/trainer_compile.py"],
        cwd=REPO,
        env=dict(os.environ, NO_COLOR="1", REGCOMP_TEST_MARKER=str(env_marker)),
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert result.returncode in (0, 1), result.stderr[-3000:]
    assert "(built by the transformers Trainer)" in result.stdout
    assert "ACCELERATE_DYNAMO_USE_REGIONAL_COMPILATION=1" in result.stdout
    assert "--dynamo_use_regional_compilation" in result.stdout
