"""``regcomp-fix`` end to end: every flag and exit status, diff vs apply, stdin, refusals, write-back safety."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from regcomp_lint import __version__
from regcomp_lint.cli import fix_command as fix_invocation
from regcomp_lint.cli.commands import fix_main

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures" / "fix"
VENV_BIN = Path(sys.executable).parent

PLAIN = """\
import torch

model = torch.nn.Linear(4, 1)
model = torch.compile(model, mode="max-autotune")
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(10):
    loss = model(torch.randn(8, 4)).pow(2).mean()  # keep me
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
"""
UNUSED_NOQA = "x = 1  # noqa: RC107\n"  # not a training script; RC002 has a safe fix → "x = 1\n"
NOT_TRAINING = "import torch\nmodel = torch.nn.Linear(2, 2)\n"


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


def write(folder: Path, name: str, text: str | bytes) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def copy_fixture(case: str, dest: Path, name: str = "train.py") -> Path:
    return write(dest, name, (FIXTURES / case / "input.py").read_bytes())


def invoke(*args: str, input: str | bytes | None = None):
    return CliRunner().invoke(fix_main, list(args), input=input, catch_exceptions=False, prog_name="regcomp-fix")


def plugin_line(text: str) -> str:
    """The ``TorchDynamoPlugin(...)`` call, on one line however it was wrapped."""
    import ast

    tree = ast.parse(text)
    call = next(
        n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", None) == "TorchDynamoPlugin"
    )
    return ast.unparse(call).replace("'", '"')


# -- diff mode (no --apply) ------------------------------------------------------------------
def test_diff_mode_prints_diff_exits_1_and_writes_nothing(project):
    path = write(project, "train.py", PLAIN)
    result = invoke("train.py")
    assert result.exit_code == 1
    assert result.stdout.startswith("--- a/train.py\n+++ b/train.py\n")
    assert "+from accelerate import Accelerator\n" in result.stdout
    assert "-    loss.backward()\n+    accelerator.backward(loss)\n" in result.stdout
    assert "train.py: 1 X.backward() call(s) -> accelerator.backward(X)" in result.stderr  # notes: one line each
    assert "Would fix 1 file (1 converted)." in result.stderr
    assert path.read_text(encoding="utf-8") == PLAIN


def test_diff_is_git_applicable(project):
    write(project, "train.py", PLAIN)
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    diff = invoke("--diff", "train.py").stdout
    proc = subprocess.run(["git", "apply", "-"], input=diff, text=True, cwd=project, capture_output=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "accelerator.backward(loss)" in (project / "train.py").read_text(encoding="utf-8")


def test_nothing_to_change_exits_0(project):
    write(project, "model.py", NOT_TRAINING)
    result = invoke("model.py")
    assert result.exit_code == 0
    assert result.stdout == ""
    assert "No changes; no training script found" in result.stderr


INFERENCE_DATA_PARALLEL = """\
import torch

model = torch.nn.DataParallel(torch.nn.Linear(4, 1))
model.load_state_dict(torch.load("best.pt"))
model.eval()
with torch.no_grad():
    print(model(torch.randn(2, 4)))
"""


def test_an_inference_script_wrapped_in_data_parallel_is_not_a_training_script(project):
    """Sweep 15 (a forecasting script, a CS230 evaluate.py): a DataParallel wrap with no
    backward, optimizer or training call was refused as "its training step runs elsewhere"
    (exit 3, so the pre-commit hook failed on every evaluation script)."""
    write(project, "forecast.py", INFERENCE_DATA_PARALLEL)
    result = invoke("forecast.py")
    assert result.exit_code == 0, result.stderr
    assert "No changes; no training script found" in result.stderr


def test_a_data_parallel_launcher_that_builds_an_optimizer_is_still_refused(project):
    """MAE's main_pretrain.py shape: the optimizer is built here, the step in another module."""
    write(
        project,
        "main.py",
        INFERENCE_DATA_PARALLEL.replace("model.eval()\n", "optimizer = torch.optim.AdamW(model.parameters())\n"),
    )
    result = invoke("main.py")
    assert result.exit_code == 3
    assert "its training step runs elsewhere" in result.stderr


def test_refusal_in_diff_mode_changes_nothing_and_exits_3(project):
    path = copy_fixture("refuse_fsdp", project)
    before = path.read_bytes()
    result = invoke("train.py")
    assert result.exit_code == 3  # nothing would change, but it is not clean either
    assert result.stdout == ""
    assert "train.py: not converted: it shards the model with FSDP by hand" in result.stderr
    assert path.read_bytes() == before


# -- --apply ---------------------------------------------------------------------------------
def test_apply_writes_matches_fixture_and_exits_0(project):
    path = copy_fixture("module_level_script", project)
    result = invoke("--apply", "train.py")
    assert result.exit_code == 0, result.output
    assert path.read_bytes() == (FIXTURES / "module_level_script" / "expected.py").read_bytes()
    assert result.stdout.splitlines() == [
        "Fixed train.py (converted to Accelerate + TorchDynamoPlugin)",
        "Fixed 1 file (1 converted).",
    ]


def test_second_apply_is_idempotent(project):
    path = write(project, "train.py", PLAIN)
    assert invoke("--apply", "train.py").exit_code == 0
    once = path.read_bytes()
    again = invoke("--apply", "train.py")
    assert again.exit_code == 0
    assert again.stdout.startswith("No changes; nothing to convert in train.py: it already compiles through Accelerate")
    assert path.read_bytes() == once
    assert invoke("train.py").exit_code == 0  # and the check mode agrees


def test_apply_with_diff_prints_what_was_written(project):
    path = write(project, "train.py", PLAIN)
    result = invoke("--apply", "--diff", "train.py")
    assert result.exit_code == 0
    assert "+    accelerator.backward(loss)\n" in result.stdout
    assert "Fixed train.py" in result.stdout
    assert "accelerator.backward(loss)" in path.read_text(encoding="utf-8")


def test_refusal_with_apply_is_byte_identical_and_exits_3(project):
    for case in ("refuse_fsdp",):
        path = copy_fixture(case, project)
        before = path.read_bytes()
        mtime = path.stat().st_mtime_ns
        result = invoke("--apply", "train.py")
        assert result.exit_code == 3, case
        refusal = (FIXTURES / case / "expected_refusal.txt").read_text(encoding="utf-8").strip()
        assert refusal.replace("input.py", "train.py") in result.stderr
        assert path.read_bytes() == before and path.stat().st_mtime_ns == mtime
        assert "1 file refused" in result.stdout


def test_torchrun_ddp_script_converts_by_default(project):
    path = copy_fixture("nanogpt_ddp", project)
    result = invoke("--apply", "train.py")
    assert result.exit_code == 0, result.output
    assert path.read_bytes() != (FIXTURES / "nanogpt_ddp" / "input.py").read_bytes()
    assert "DistributedDataParallel(" not in path.read_text(encoding="utf-8")
    assert "not converted" not in result.stderr


UNPREPARED_SCHEDULER = ROOT / "fixtures" / "lint" / "rc402_unprepared_scheduler.py"


def test_unfixed_unsafe_finding_exits_1_until_unsafe_fixes(project):
    """An Accelerate script whose per-step scheduler is not prepared: RC402 (unsafe fix) remains."""
    path = write(project, "train.py", UNPREPARED_SCHEDULER.read_bytes())
    first = invoke("--apply", "train.py")
    assert first.exit_code == 1
    assert "train.py: 1 finding with a fix not applied: RC402 (rerun with --unsafe-fixes)" in first.stderr
    second = invoke("--apply", "--unsafe-fixes", "train.py")
    assert second.exit_code == 0, second.output
    assert "Fixed train.py (1 lint fix (RC402))" in second.stdout
    assert "train_loader, scheduler = accelerator.prepare(" in path.read_text(encoding="utf-8")


ACCELERATE_SAVE_PRETRAINED = """\
import torch
from accelerate import Accelerator
from transformers import AutoConfig, AutoModelForCausalLM

accelerator = Accelerator()
model = AutoModelForCausalLM.from_config(AutoConfig.for_model("gpt2", n_layer=4))
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
model, optimizer = accelerator.prepare(model, optimizer)
for step in range(2):
    loss = model(torch.randint(0, 10, (2, 8)), labels=torch.randint(0, 10, (2, 8))).loss
    accelerator.backward(loss)
    optimizer.step()
    optimizer.zero_grad()
model.save_pretrained("out", is_main_process=accelerator.is_main_process)
"""


def test_an_rc404_the_conversion_caused_is_fixed_without_unsafe_fixes(project):
    """The conversion adds a regional plugin; the script saved the prepared model itself: that
    save would now raise (shared tensors of the compiled regions). The original wrote clean keys,
    so RC404's unwrap is applied as if safe, and nothing is left for --unsafe-fixes."""
    path = write(project, "train.py", ACCELERATE_SAVE_PRETRAINED)
    result = invoke("--apply", "train.py")
    assert result.exit_code == 0, result.output
    text = path.read_text(encoding="utf-8")
    assert "use_regional_compilation=True" in text
    assert 'accelerator.unwrap_model(model, keep_torch_compile=False).save_pretrained("out"' in text
    assert "--unsafe-fixes" not in result.stderr


LSTM_SCRIPT = """\
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(4, 8, batch_first=True)
        self.fc = nn.Linear(8, 1)

    def forward(self, x):
        output, hidden = self.rnn(x)
        return self.fc(output[:, -1])


model = Net()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    loss = model(torch.randn(2, 5, 4)).sum()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
"""


def test_a_finding_the_conversion_brings_and_leaves_is_explained_in_a_note(project):
    """The plain LSTM script has nothing to compile, so the lint is silent; the conversion adds a
    compile, which meets nn.LSTM (RC209, no fix): the note says so before the lint hook does."""
    write(project, "train.py", LSTM_SCRIPT)
    result = invoke("--apply", "train.py")
    assert result.exit_code == 0, result.output
    notes = [line for line in result.stderr.splitlines() if "left for you" in line]
    assert len(notes) == 1, result.stderr
    assert "RC209 (warning) at line 14 of the converted script (the original had none): `nn.LSTM`" in notes[0]


def test_a_finding_the_original_had_too_is_not_repeated_in_the_notes(project):
    write(project, "train.py", "import torch\n" + LSTM_SCRIPT.replace("model = Net()", "model = torch.compile(Net())"))
    result = invoke("--apply", "train.py")
    assert result.exit_code == 0, result.output
    assert "left for you" not in result.stderr, result.stderr


def test_settings_files_in_a_folder_get_lint_fixes_and_are_never_refused(project):
    """A folder with a launch script, a Dockerfile and an accelerate config beside the training
    script: they are the lint's to read, not scripts to convert (they were refused as Python that
    does not parse, exit 3)."""
    write(project, "train.py", PLAIN)
    write(project, "run.sh", "#!/bin/bash\naccelerate launch --mixed_precision fp16 train.py\n")
    write(project, "Dockerfile", "FROM python:3.11\n")
    write(project, "notes.sh", "echo hi\n")
    result = invoke(".")
    assert result.exit_code == 1, result.output
    assert "refused" not in result.stderr and "cannot parse" not in result.stderr, result.stderr
    assert "Would fix 1 file (1 converted)" in result.stderr


def test_a_backend_the_project_launches_with_is_left_to_the_launch(project):
    """`accelerate launch --dynamo_backend no train.py` in run.sh: a plugin backend would silently
    override it (RC406); the converted plugin leaves it unset and says where it comes from."""
    write(project, "train.py", PLAIN.replace('model = torch.compile(model, mode="max-autotune")\n', ""))
    write(project, "run.sh", "#!/bin/bash\naccelerate launch --dynamo_backend no train.py\n")
    result = invoke("--apply", ".")
    assert result.exit_code == 0, result.output
    text = (project / "train.py").read_text(encoding="utf-8")
    assert "dynamo_plugin = TorchDynamoPlugin()\n" in text
    assert "backend is left to the project's launch (run.sh:2 `--dynamo_backend no`)" in result.stderr


def test_ignore_drops_a_rule_from_the_count_and_the_fixes(project):
    write(project, "train.py", UNPREPARED_SCHEDULER.read_bytes())
    assert invoke("--apply", "--ignore", "RC402", "train.py").exit_code == 0
    noqa = write(project, "noqa.py", UNUSED_NOQA)
    assert invoke("--apply", "--ignore", "RC0", "noqa.py").exit_code == 0
    assert noqa.read_text(encoding="utf-8") == UNUSED_NOQA


#: Conversions whose output still has a finding, with the measured reason (strict xfails: a fix fails the suite
#: until its entry goes).
_FLAGGED_TODAY: dict[str, str] = {}


@pytest.mark.parametrize(
    "case",
    [
        pytest.param(name, marks=pytest.mark.xfail(strict=True, reason=_FLAGGED_TODAY[name]))
        if name in _FLAGGED_TODAY
        else name
        for name in sorted(p.name for p in FIXTURES.iterdir() if (p / "input.py").exists())
    ],
)
def test_what_the_converter_leaves_on_purpose_is_not_flagged(case):
    """Each conversion lints clean with the default selection: the eval loaders and per-epoch
    schedulers it leaves unprepared on purpose are not RC402 findings (so the hook can pass)."""
    from regcomp_lint.codemod.convert import convert_source
    from regcomp_lint.files import writeback
    from regcomp_lint.lint.config import Settings
    from regcomp_lint.lint.engine import lint_source

    text = writeback.read(str(FIXTURES / case / "input.py")).text  # the encoding and BOM decoded
    converted = convert_source(text, "train.py")
    if converted.refused is not None or not converted.changed:
        pytest.skip("not converted")
    findings = [f"{d.code} {d.message}" for d in lint_source(converted.text, "train.py", Settings())]
    assert findings == []


def test_select_runs_lint_fixes_after_conversion(project):
    noqa = write(project, "noqa.py", UNUSED_NOQA)
    result = invoke("--apply", "--select", "RC002,RC1", "noqa.py")
    assert result.exit_code == 0
    assert noqa.read_text(encoding="utf-8") == "x = 1\n"
    assert "Fixed noqa.py (1 lint fix (RC002))" in result.stdout
    write(project, "noqa.py", UNUSED_NOQA)
    assert (
        invoke("--apply", "--select", "RC4", "noqa.py").stdout
        == "No changes; no training script found (no X.backward() call).\n"
    )
    assert noqa.read_text(encoding="utf-8") == UNUSED_NOQA


def test_unknown_selector_is_a_usage_error(project):
    write(project, "train.py", PLAIN)
    result = invoke("--select", "RC9999", "train.py")
    assert result.exit_code == 2
    assert "unknown rule selector 'RC9999'" in result.stderr


def test_exit_non_zero_on_fix(project):
    write(project, "train.py", PLAIN)
    result = invoke("--apply", "--exit-non-zero-on-fix", "train.py")
    assert result.exit_code == 1
    assert "Fixed train.py" in result.stdout
    assert invoke("--apply", "--exit-non-zero-on-fix", "train.py").exit_code == 0  # nothing left to change


# -- plugin flags and the plan ---------------------------------------------------------------
def test_plugin_flags_override_the_script(project):
    path = write(project, "train.py", PLAIN)
    result = invoke(
        "--apply", "--backend", "eager", "--mode", "default", "--fullgraph", "--no-dynamic", "--regional", "train.py"
    )
    assert result.exit_code == 0, result.output
    line = plugin_line(path.read_text(encoding="utf-8"))
    assert 'backend="eager"' in line and 'mode="default"' in line
    assert "fullgraph=True" in line and "dynamic=False" in line and "use_regional_compilation=True" in line
    assert "max-autotune" not in line


def test_flags_left_off_keep_the_scripts_settings(project):
    path = write(project, "train.py", PLAIN)
    assert invoke("--apply", "train.py").exit_code == 0
    line = plugin_line(path.read_text(encoding="utf-8"))
    assert line == 'TorchDynamoPlugin(backend="inductor", mode="max-autotune")'


def test_no_flags_turn_settings_off(project):
    path = write(project, "train.py", PLAIN.replace('mode="max-autotune"', "fullgraph=True, dynamic=True"))
    assert invoke("--apply", "--no-fullgraph", "--no-dynamic", "--no-regional", "train.py").exit_code == 0
    line = plugin_line(path.read_text(encoding="utf-8"))
    assert "fullgraph=False" in line and "dynamic=False" in line
    assert "use_regional_compilation=True" not in line


def test_valid_plan_matches_fixture(project):
    path = copy_fixture("plan_full", project)
    options = json.loads((FIXTURES / "plan_full" / "options.json").read_text(encoding="utf-8"))
    result = invoke(
        "--apply", "--plan", str(FIXTURES / "plan_full" / "plan.json"), "--backend", options["backend"], "train.py"
    )
    assert result.exit_code == 0, result.output
    assert path.read_bytes() == (FIXTURES / "plan_full" / "expected.py").read_bytes()


def test_plan_applies_and_flags_override_it(project):
    plan = write(
        project,
        "plan.json",
        json.dumps({"version": 1, "strategy": "full", "plugin": {"backend": "aot_eager", "fullgraph": True}}),
    )
    path = write(project, "train.py", PLAIN)
    assert invoke("--apply", "--plan", str(plan), "train.py").exit_code == 0
    line = plugin_line(path.read_text(encoding="utf-8"))
    assert 'backend="aot_eager"' in line and "fullgraph=True" in line
    path = write(project, "train.py", PLAIN)
    assert invoke("--apply", "--plan", str(plan), "--no-fullgraph", "--backend", "eager", "train.py").exit_code == 0
    line = plugin_line(path.read_text(encoding="utf-8"))
    assert 'backend="eager"' in line and "fullgraph=True" not in line


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ('{"version": 2, "strategy": "full"}', "unknown version 2"),
        ('{"version": 1, "strategy": "full", "plugin": {"bakend": "eager"}}', 'unknown plugin key "bakend"'),
        ("{not json", "not valid JSON"),
    ],
)
def test_invalid_plan_exits_2_and_changes_nothing(project, document, message):
    plan = write(project, "plan.json", document)
    path = write(project, "train.py", PLAIN)
    result = invoke("--apply", "--plan", str(plan), "train.py")
    assert result.exit_code == 2
    assert message in result.stderr and "plan.json" in result.stderr
    assert "Traceback" not in result.output
    assert path.read_text(encoding="utf-8") == PLAIN


def test_missing_plan_exits_2(project):
    write(project, "train.py", PLAIN)
    result = invoke("--plan", "nope.json", "train.py")
    assert result.exit_code == 2
    assert "cannot read nope.json" in result.stderr


# -- bad arguments and errors ----------------------------------------------------------------
def test_no_paths_is_a_usage_error(project):
    result = invoke()
    assert result.exit_code == 2
    assert "give the files or folders to fix" in result.stderr


def test_missing_path_exits_2(project):
    write(project, "train.py", PLAIN)
    result = invoke("--apply", "train.py", "gone.py")
    assert result.exit_code == 2
    assert "gone.py: no such file or directory" in result.stderr
    assert "accelerator.backward" in (project / "train.py").read_text(encoding="utf-8")  # the rest still ran


def test_unknown_option_exits_2(project):
    assert invoke("--frobnicate", "x.py").exit_code == 2


def test_stdin_with_other_paths_is_a_usage_error(project):
    write(project, "train.py", PLAIN)
    result = invoke("-", "train.py", input=PLAIN)
    assert result.exit_code == 2
    assert "cannot be combined" in result.stderr


def test_read_only_file_exits_2_untouched(project):
    path = write(project, "train.py", PLAIN)
    path.chmod(0o444)
    try:
        result = invoke("--apply", "train.py")
        assert result.exit_code == 2
        assert "train.py: read-only file; not written" in result.stderr
        assert path.read_text(encoding="utf-8") == PLAIN
        assert stat.S_IMODE(path.stat().st_mode) == 0o444
        assert invoke("train.py").exit_code == 1  # the diff still works
    finally:
        path.chmod(0o644)


def test_unreadable_file_exits_2(project, monkeypatch):
    write(project, "train.py", PLAIN)
    write(project, "other.py", PLAIN)

    def refuse(path):
        if path.endswith("train.py"):
            raise PermissionError(13, "Permission denied")
        return real_read(path)

    real_read = fix_invocation.writeback.read
    monkeypatch.setattr(fix_invocation.writeback, "read", refuse)
    result = invoke("--apply", "train.py", "other.py")
    assert result.exit_code == 2
    assert "train.py: cannot read: Permission denied; left untouched" in result.stderr
    assert (project / "train.py").read_text(encoding="utf-8") == PLAIN
    assert "Fixed other.py" in result.stdout


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root reads any file")
def test_unreadable_file_on_disk_exits_2(project):
    path = write(project, "train.py", PLAIN)
    path.chmod(0)
    try:
        result = invoke("--apply", "train.py")
        assert result.exit_code == 2
        assert "train.py: cannot read" in result.stderr
    finally:
        path.chmod(0o644)


def test_undecodable_file_exits_2_untouched(project):
    path = write(project, "train.py", b"x = '\xff\xfe'\nloss.backward()\n")
    result = invoke("--apply", "train.py")
    assert result.exit_code == 2
    assert "train.py: cannot read" in result.stderr
    assert path.read_bytes() == b"x = '\xff\xfe'\nloss.backward()\n"


def test_changed_on_disk_between_read_and_write_is_not_overwritten(project, monkeypatch):
    path = write(project, "train.py", PLAIN)
    edited = PLAIN + "# saved by an editor meanwhile\n"
    real = fix_invocation.convert_source

    def convert_then_edit(text, filename, options):
        result = real(text, filename, options)
        path.write_text(edited, encoding="utf-8")
        return result

    monkeypatch.setattr(fix_invocation, "convert_source", convert_then_edit)
    result = invoke("--apply", "train.py")
    assert result.exit_code == 2
    assert "train.py: changed on disk since it was read; not overwritten" in result.stderr
    assert path.read_text(encoding="utf-8") == edited
    assert not [p for p in project.iterdir() if p.name.endswith(".regcomp-tmp")]


def test_syntax_error_is_bad_input_exit_2_and_nothing_is_written(project):
    """Not a refusal to opt out of: the file is not Python this interpreter reads (one line)."""
    path = write(project, "train.py", "def f(:\n    loss.backward()\n")
    result = invoke("--apply", "train.py")
    assert result.exit_code == 2
    lines = [line for line in result.stderr.splitlines() if "cannot parse" in line]
    assert len(lines) == 1 and "train.py: cannot parse line 1" in lines[0], result.stderr
    assert "Python 3." in lines[0] and "refused" not in result.stderr
    assert path.read_text(encoding="utf-8") == "def f(:\n    loss.backward()\n"


# -- what is kept ----------------------------------------------------------------------------
def test_file_mode_is_kept(project):
    path = write(project, "train.py", PLAIN)
    path.chmod(0o751)
    assert invoke("--apply", "train.py").exit_code == 0
    assert stat.S_IMODE(path.stat().st_mode) == 0o751
    assert "accelerator.backward" in path.read_text(encoding="utf-8")


@pytest.mark.parametrize("case", ["crlf_newlines", "bom_utf8", "tabs_indent", "latin1_coding"])
def test_newlines_bom_tabs_encoding_are_kept(project, case):
    path = copy_fixture(case, project)
    result = invoke("--apply", "train.py")
    assert result.exit_code == 0, result.output
    expected = (FIXTURES / case / "expected.py").read_bytes()
    assert path.read_bytes() == expected
    if case == "crlf_newlines":
        assert expected.count(b"\r\n") == expected.count(b"\n")
    if case == "bom_utf8":
        assert expected.startswith(b"\xef\xbb\xbf") and not expected.startswith(b"\xef\xbb\xbf" * 2)


def test_directory_walk_respects_excludes_and_gitignore(project):
    write(project, "pkg/train.py", PLAIN)
    write(project, "pkg/ignored/train.py", PLAIN)
    write(project, "pkg/.gitignore", "ignored/\n")
    write(project, "pkg/build/train.py", PLAIN)  # `build` is in the default excludes
    write(project, "pkg/notes.txt", "loss.backward()\n")
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    result = invoke("--apply", "pkg")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        f"Fixed {os.path.join('pkg', 'train.py')} (converted to Accelerate + TorchDynamoPlugin)",
        "Fixed 1 file (1 converted).",
    ]
    assert (project / "pkg/ignored/train.py").read_text(encoding="utf-8") == PLAIN
    assert (project / "pkg/build/train.py").read_text(encoding="utf-8") == PLAIN


def test_all_fixtures_at_once_in_diff_mode(project):
    """Every fixture: a diff for each one that converts, a refusal line for each refusal, nothing written."""
    for case in sorted(p.name for p in FIXTURES.iterdir() if (p / "options.json").exists() is False and p.is_dir()):
        copy_fixture(case, project / "cases", f"{case}.py")
    before = {p: p.read_bytes() for p in (project / "cases").iterdir()}
    result = invoke("cases")
    assert result.exit_code == 3  # a refusal outranks "would change"
    for path, data in before.items():
        assert path.read_bytes() == data
        expected = (FIXTURES / path.stem / "expected.py").read_bytes()
        if expected != data:
            assert f"+++ b/{os.path.join('cases', path.name)}\n" in result.stdout, path.name
    assert "refuse_fsdp.py: not converted" in result.stderr


# -- exit codes and opt-outs ----------------------------------------------------------------
SKIP = "# regcomp-fix: skip  (we shard it with FSDP ourselves)\n"


@pytest.mark.parametrize("apply", [False, True])
def test_exit_codes_tell_clean_changed_and_refused_apart(project, apply):
    flags = ["--apply"] if apply else []
    write(project, "clean.py", NOT_TRAINING)
    assert invoke(*flags, "clean.py").exit_code == 0
    write(project, "train.py", PLAIN)
    assert invoke(*flags, "--exit-non-zero-on-fix", "train.py").exit_code == 1
    copy_fixture("refuse_fsdp", project, "fsdp.py")
    assert invoke(*flags, "fsdp.py").exit_code == 3
    assert invoke(*flags, "clean.py", "fsdp.py").exit_code == 3


def test_help_documents_the_exit_codes():
    text = invoke("--help").stdout
    assert "3 a script was refused" in " ".join(text.split())


def test_skip_comment_opts_a_refused_file_out(project):
    data = (FIXTURES / "refuse_fsdp" / "input.py").read_text(encoding="utf-8")
    path = write(project, "fsdp.py", SKIP + data)
    for flags in ([], ["--apply", "--exit-non-zero-on-fix"]):
        result = invoke(*flags, "fsdp.py")
        assert result.exit_code == 0, result.output
        assert "not converted:" not in result.stderr
        assert "1 file not converted (opted out)" in result.output
    assert path.read_text(encoding="utf-8") == SKIP + data
    # only near the top: further down it is just a comment
    late = write(project, "late.py", data + "\n" * 30 + SKIP)
    assert invoke("late.py").exit_code == 3 and late.read_text(encoding="utf-8").endswith(SKIP)


def test_skip_comment_keeps_a_training_script_unconverted_but_lint_fixed(project):
    path = write(project, "train.py", SKIP + PLAIN + UNUSED_NOQA)
    result = invoke("--apply", "train.py")
    assert result.exit_code == 0, result.output
    assert path.read_text(encoding="utf-8") == SKIP + PLAIN + "x = 1\n"  # RC002's safe fix only
    assert "Accelerator" not in path.read_text(encoding="utf-8")


def test_fix_exclude_in_pyproject_opts_files_out(project):
    write(project, "pyproject.toml", '[tool.regcomp-lint]\nfix-exclude = ["legacy/"]\n')
    legacy = copy_fixture("refuse_fsdp", project / "legacy", "fsdp.py")
    before = legacy.read_bytes()
    trainer = write(project, "src/train.py", PLAIN)
    result = invoke("--apply", ".")
    assert result.exit_code == 0, result.output
    assert legacy.read_bytes() == before
    assert "accelerator.backward(loss)" in trainer.read_text(encoding="utf-8")
    assert "1 file not converted (opted out)" in result.stdout
    # stdin named into the excluded folder is excluded too
    piped = invoke("--stdin-filename", "legacy/other.py", "-", input=PLAIN)
    assert piped.exit_code == 0 and piped.stdout == PLAIN


# -- stdin -----------------------------------------------------------------------------------
def test_stdin_writes_the_result_to_stdout(project):
    result = invoke("-", input=PLAIN)
    assert result.exit_code == 1  # no --apply: something would change
    assert "accelerator.backward(loss)" in result.stdout
    assert result.stdout.startswith("import torch\nfrom accelerate import Accelerator\n")
    applied = invoke("--apply", "-", input=PLAIN)
    assert applied.exit_code == 0
    assert applied.stdout == result.stdout
    assert "Fixed -" in applied.stderr


def test_stdin_unchanged_echoes_the_original_bytes(project):
    data = "\ufeffimport torch\r\nx = 1\r\n".encode("utf-8")
    result = CliRunner().invoke(fix_main, ["-"], input=data, catch_exceptions=False)
    assert result.exit_code == 0
    assert result.stdout_bytes == data


def test_stdin_keeps_crlf_and_bom(project):
    data = (FIXTURES / "bom_utf8" / "input.py").read_bytes()
    result = CliRunner().invoke(fix_main, ["--apply", "-"], input=data, catch_exceptions=False)
    assert result.exit_code == 0
    assert result.stdout_bytes == (FIXTURES / "bom_utf8" / "expected.py").read_bytes()
    data = (FIXTURES / "crlf_newlines" / "input.py").read_bytes()
    result = CliRunner().invoke(fix_main, ["--apply", "-"], input=data, catch_exceptions=False)
    assert result.stdout_bytes == (FIXTURES / "crlf_newlines" / "expected.py").read_bytes()


def test_stdin_diff_and_filename(project):
    result = invoke("--diff", "--stdin-filename", "scripts/train.py", "-", input=PLAIN)
    assert result.exit_code == 1
    assert result.stdout.startswith("--- a/scripts/train.py\n+++ b/scripts/train.py\n")
    assert "scripts/train.py: 1 X.backward() call(s)" in result.stderr


def test_stdin_filename_alone_reads_stdin(project):
    result = invoke("--apply", "--stdin-filename", "t.py", input=PLAIN)
    assert result.exit_code == 0
    assert "accelerator.backward(loss)" in result.stdout


def test_stdin_refusal_echoes_input_and_exits_3(project):
    data = (FIXTURES / "refuse_fsdp" / "input.py").read_bytes()
    result = CliRunner().invoke(
        fix_main, ["--apply", "--stdin-filename", "fsdp.py", "-"], input=data, catch_exceptions=False
    )
    assert result.exit_code == 3
    assert result.stdout_bytes == data
    assert "fsdp.py: not converted" in result.stderr


# -- the installed console script ------------------------------------------------------------
def test_version_and_console_script(project):
    result = invoke("--version")
    assert result.exit_code == 0 and result.stdout == f"regcomp-fix {__version__}\n"
    script = VENV_BIN / "regcomp-fix"
    if not script.exists():
        pytest.skip("regcomp-fix is not installed in this environment (pip install -e .)")
    path = write(project, "train.py", PLAIN)
    proc = subprocess.run(
        [str(script), "--apply", "train.py"], cwd=project, capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert "accelerator.backward(loss)" in path.read_text(encoding="utf-8")


def test_fixer_never_imports_torch_or_the_script(project):
    marker = project / "imported.txt"
    write(project, "train.py", PLAIN + f"open({str(marker)!r}, 'w').write('ran')\n")
    code = (
        "import sys\n"
        "from regcomp_lint.cli.commands import fix_main\n"
        "try:\n    fix_main(['--apply', 'train.py'])\nexcept SystemExit:\n    pass\n"
        "bad = [m for m in ('torch', 'accelerate', 'transformers') if m in sys.modules]\n"
        "print('IMPORTED', bad)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=project, capture_output=True, text=True, timeout=120, check=False
    )
    assert "IMPORTED []" in proc.stdout, proc.stdout + proc.stderr
    assert not marker.exists()
    assert "accelerator.backward(loss)" in (project / "train.py").read_text(encoding="utf-8")


def test_no_op_fix_never_imports_libcst(project):
    """A file without a training step is answered from its ``ast`` alone (issue 16: a no-op fix
    within 1.3x of ``regcomp-lint --version``; importing libcst and the codemod doubled it)."""
    write(project, "util.py", "import os\n\n\ndef f(x):\n    return os.path.join(x, 'a')\n")
    code = (
        "import sys\n"
        "from regcomp_lint.cli.commands import fix_main\n"
        "try:\n    fix_main(['util.py'])\nexcept SystemExit:\n    pass\n"
        "print('HEAVY', sorted(m for m in ('libcst', 'torch') if m in sys.modules))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}  # (this checkout's package, not an installed one)
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=project, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert "no training script found" in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    assert "HEAVY []" in proc.stdout, proc.stdout + proc.stderr


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--backend", "inductr"], "'inductr' is not a TorchDynamoPlugin backend; did you mean 'inductor'?"),
        (["--backend", "nvprims_nvfuser"], "(torch no longer registers it)"),
        (["--mode", "max_autotune"], "'max_autotune' is not a torch.compile mode; did you mean 'max-autotune'?"),
    ],
)
def test_backend_and_mode_are_checked_with_the_lints_tables(project, flags, message):
    path = write(project, "train.py", PLAIN)
    result = invoke("--apply", *flags, "train.py")
    assert result.exit_code == 2
    assert message in " ".join(result.output.split())
    assert path.read_text(encoding="utf-8") == PLAIN


ACCELERATE_WITH_PLUGIN = """\
import torch
from accelerate import Accelerator
from accelerate.utils import TorchDynamoPlugin

dynamo_plugin = TorchDynamoPlugin(backend="inductor")
accelerator = Accelerator(dynamo_plugin=dynamo_plugin)
model = torch.nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
model, optimizer = accelerator.prepare(model, optimizer)
for step in range(3):
    loss = model(torch.randn(2, 4)).sum()
    accelerator.backward(loss)
    optimizer.step()
"""


@pytest.mark.parametrize("apply", [False, True])
def test_an_accelerate_script_with_nothing_to_convert_says_why(project, apply):
    """accelerate's fsdp2_fp8.py already passes its TorchDynamoPlugin: 'No changes.' alone read
    like the fixer had not looked."""
    write(project, "train.py", ACCELERATE_WITH_PLUGIN)
    result = invoke(*(["--apply"] if apply else []), "train.py")
    assert result.exit_code == 0, result.output
    summary = result.stdout if apply else result.stderr
    assert (
        'No changes; nothing to convert in train.py: it already compiles through Accelerate: TorchDynamoPlugin(backend="inductor") '
        "at line 5 is passed to Accelerator(...) at line 6.\n"
    ) in summary
    write(project, "other.py", ACCELERATE_WITH_PLUGIN)
    result = invoke(*(["--apply"] if apply else []), ".")
    summary = result.stdout if apply else result.stderr
    assert "No changes; nothing to convert in 2 files that already pass their compile settings to Accelerate" in summary


# transformers' run_clm_no_trainer.py and peft's LoRA example: an unwrap saved, and the prepared model saved
ACCELERATE_SAVES = (
    ACCELERATE_SAVE_PRETRAINED.split("model.save_pretrained(")[0]
    + """\
    unwrapped_model = accelerator.unwrap_model(model)
    unwrapped_model.save_pretrained("out", is_main_process=accelerator.is_main_process)
accelerator.unwrap_model(model).save_pretrained("last")
model.save_pretrained("final")
"""
)


def test_every_edit_the_lint_fixes_make_after_a_conversion_has_a_note(project):
    """The RC404 unwraps the regional plugin makes necessary were made without a word (the
    notes listed only the plugin); one note per kind of edit, with its lines in the original
    script and why."""
    path = write(project, "train.py", ACCELERATE_SAVES)
    result = invoke("train.py")
    assert result.exit_code == 1, result.output
    notes = [line for line in result.stderr.splitlines() if "RC404" in line]
    assert len(notes) == 1, result.stderr
    (saves,) = notes
    # the unwraps are the conversion's own edit now (codemod/plain_model_access.py), with its note
    unwraps = next(line for line in result.stderr.splitlines() if "unwrap_model() at" in line)
    assert unwraps.startswith(
        "train.py: unwrap_model() at lines 14, 16 -> unwrap_model(..., keep_torch_compile=False):"
    ), unwraps
    assert "_orig_mod" in unwraps
    assert saves.startswith(
        'train.py: model.save_pretrained("final") -> '
        'accelerator.unwrap_model(model, keep_torch_compile=False).save_pretrained("final") at line 17 (RC404):'
    ), saves
    assert "_orig_mod" in saves
    assert path.read_text(encoding="utf-8") == ACCELERATE_SAVES  # diff mode


ACCELERATE_TWO_SAVES = """\
import torch
from accelerate import Accelerator

accelerator = Accelerator()
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
model, opt = accelerator.prepare(model, opt)
loss = model(torch.randn(2, 4)).sum()
accelerator.backward(loss)
opt.step()
torch.save(accelerator.get_state_dict(model), "b.pt")
accelerator.save_model(model, "c")
"""


def test_two_rc404_fixes_with_one_fix_message_get_a_note_each(project):
    """survey 15: `get_state_dict(model)` and `save_model(model, ...)` share RC404's fix message;
    one note showed the get_state_dict edit 'at lines 11, 12', line 12 being the save_model."""
    write(project, "train.py", ACCELERATE_TWO_SAVES)
    result = invoke("train.py")
    notes = [line for line in result.stderr.splitlines() if "RC404" in line]
    assert len(notes) == 2, result.stderr
    assert notes[0].startswith("train.py: accelerator.get_state_dict(model) -> ") and " at line 11 (RC404)" in notes[0]
    assert notes[1].startswith('train.py: accelerator.save_model(model, "c") -> ') and " at line 12 (RC404)" in notes[1]
