"""Script capture mode: ``capture_script`` runs a training script until its model's first forward."""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
accelerate = pytest.importorskip("accelerate")

from regcomp_lint.trace.capture import Captured, CompileRequest, capture_script  # noqa: E402
from regcomp_lint.trace.errors import TraceError  # noqa: E402

SCRIPTS = Path(__file__).resolve().parents[2] / "fixtures" / "trace" / "scripts"


def script(name: str) -> str:
    return str(SCRIPTS / name)


def only(requests: list[CompileRequest]) -> CompileRequest:
    assert len(requests) == 1, requests
    return requests[0]


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path, monkeypatch):
    """Every test runs in its own folder, so a script that got too far would leave files here."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("REGCOMP_TEST_MARKER", raising=False)


def originals():
    import accelerate.accelerator
    import accelerate.utils
    import accelerate.utils.other

    return (
        torch.compile,
        torch.nn.Module.__dict__["compile"],
        torch.nn.Module.__dict__["__call__"],
        accelerate.utils.compile_regions,
        accelerate.utils.other.compile_regions,
        accelerate.accelerator.compile_regions,
        accelerate.Accelerator.__dict__["prepare"],
        accelerate.Accelerator.__dict__["prepare_model"],
        signal.getsignal(signal.SIGALRM),
    )


def test_plain_compile_stops_before_backward_and_step(tmp_path, capsys):
    marker = tmp_path / "marker.txt"
    before = originals()
    got = capture_script(script("plain_compile.py"), ["--marker", str(marker)])
    assert isinstance(got, Captured)
    assert type(got.model).__name__ == "MLP"
    assert not isinstance(got.model, torch._dynamo.eval_frame.OptimizedModule)
    assert len(got.args) == 1 and tuple(got.args[0].shape) == (4, 8) and got.kwargs == {}
    assert got.where == f"{script('plain_compile.py')}:33"
    request = only(got.requests)
    assert request.api == "torch.compile"
    assert request.kwargs == {"backend": "inductor", "mode": "max-autotune", "fullgraph": True}
    assert request.where.endswith("plain_compile.py:28")
    # stopped before the forward ran: no backward, no optimizer step, no marker
    assert not marker.exists()
    assert all(p.grad is None for p in got.model.parameters())
    # the script's print went to stderr, stdout stays clean for --format json
    out, err = capsys.readouterr()
    assert out == "" and "training starts" in err
    assert originals() == before
    assert not got.model._forward_pre_hooks  # our hook is gone
    # the model still runs after the script's module has gone (its globals, such as F, live on)
    assert tuple(got.model(*got.args, **got.kwargs).shape) == (4, 4)


def test_accelerate_regional_plugin_and_prepare(tmp_path, monkeypatch):
    marker = tmp_path / "stepped"
    monkeypatch.setenv("REGCOMP_TEST_MARKER", str(marker))
    got = capture_script(script("accelerate_regional.py"), [])
    assert type(got.model).__name__ == "TinyNet"  # the module itself: no DDP, no compile wrapper
    assert got.args == ()
    assert set(got.kwargs) == {"ids", "labels"} and tuple(got.kwargs["ids"].shape) == (2, 6)
    assert got.where.endswith("accelerate_regional.py:29")
    request = only(got.requests)
    assert request.api == "TorchDynamoPlugin"
    assert request.kwargs["backend"] == "inductor"
    assert request.kwargs["use_regional_compilation"] is True
    assert request.kwargs["fullgraph"] is False
    assert request.where.endswith("accelerate_regional.py:26")
    json.dumps(request.kwargs)
    assert not marker.exists()
    assert not (tmp_path / "checkpoint-that-must-not-exist").exists()
    assert next(got.model.parameters()).device.type == "cpu"
    # Accelerate's process-wide state is reset: a later Accelerator can be configured afresh
    from accelerate.state import AcceleratorState

    assert not AcceleratorState._shared_state


def test_prepare_returns_its_arguments_unchanged():
    from accelerate import Accelerator

    path = Path("prep.py")
    path.write_text(
        "import torch\n"
        "from accelerate import Accelerator\n"
        "acc = Accelerator(cpu=True)\n"
        "m = torch.nn.Linear(2, 2)\n"
        "opt = torch.optim.SGD(m.parameters(), lr=1)\n"
        "assert acc.prepare(m) is m\n"
        "m2, opt2 = acc.prepare(m, opt)\n"
        "assert m2 is m and opt2 is opt\n"
        "assert acc.prepare_model(m) is m\n"
        "m(torch.ones(1, 2))\n"
    )
    got = capture_script(str(path), [])
    assert isinstance(got.model, torch.nn.Linear)
    assert got.requests == []  # the accelerator has no dynamo backend: nothing was asked
    assert Accelerator.__dict__["prepare"].__code__.co_filename.endswith("accelerator.py")


def test_decorator_forms_and_root_module_fallback():
    got = capture_script(script("decorated.py"), [])
    assert type(got.model).__name__ == "Net"
    assert tuple(got.args[0].shape) == (2, 4)
    assert [r.api for r in got.requests] == ["torch.compile", "torch.compile"]
    assert got.requests[0].kwargs == {} and got.requests[0].where.endswith("decorated.py:8")
    assert got.requests[1].kwargs == {"backend": "eager", "dynamic": True}
    assert got.requests[1].where.endswith("decorated.py:18")
    assert got.where.endswith("decorated.py:25")


def test_module_compile():
    got = capture_script(script("module_compile.py"), [])
    assert type(got.model).__name__ == "TinyNet"
    request = only(got.requests)
    assert request.api == "Module.compile"
    assert request.kwargs == {"backend": "eager", "fullgraph": True, "dynamic": False}
    assert request.where.endswith("module_compile.py:8")
    assert not hasattr(got.model, "_compiled_call_impl") or got.model._compiled_call_impl is None


def test_compile_regions():
    got = capture_script(script("regions.py"), [])
    assert type(got.model).__name__ == "TinyNet"
    assert [tuple(a.shape) for a in got.args] == [(3, 7), (3, 7)]
    request = only(got.requests)
    assert request.api == "compile_regions"
    assert request.kwargs == {"mode": "reduce-overhead", "options": None}
    assert request.where.endswith("regions.py:10")


def test_argv_reaches_argparse_and_is_restored():
    argv, path = list(sys.argv), list(sys.path)
    got = capture_script(script("with_args.py"), ["--batch-size", "3", "--seq-len", "5", "--layers", "4"])
    assert tuple(got.args[0].shape) == (3, 5)
    assert len(got.model.blocks) == 4
    assert only(got.requests).kwargs == {"dynamic": True}
    assert sys.argv == argv and sys.path == path


def test_script_sees_its_own_argv_and_folder(tmp_path):
    sub = tmp_path / "proj"
    sub.mkdir()
    (sub / "helper_mod_for_capture.py").write_text("VALUE = 7\n")
    (sub / "train.py").write_text(
        "import os, sys, torch\n"
        "import helper_mod_for_capture\n"
        "assert sys.argv == [os.path.join('proj', 'train.py'), 'a', '--b'], sys.argv\n"
        "assert __name__ == '__main__'\n"
        f"assert os.getcwd() == {str(tmp_path)!r}\n"
        "torch.nn.Linear(1, 1)(torch.ones(1, 1) * helper_mod_for_capture.VALUE)\n"
    )
    got = capture_script(os.path.join("proj", "train.py"), ["a", "--b"])
    assert float(got.args[0]) == 7.0
    assert got.where == os.path.join("proj", "train.py") + ":6"
    sys.modules.pop("helper_mod_for_capture", None)


def test_sys_exit_before_forward():
    before = originals()
    with pytest.raises(TraceError) as info:
        capture_script(script("exits.py"), [])
    message = str(info.value)
    assert "status 3" in message and "sys.exit" in message and "\n" not in message
    assert originals() == before


def test_argparse_error_names_the_arguments(capsys):
    with pytest.raises(TraceError, match=r"status 2\).*argparse"):
        capture_script(script("plain_compile.py"), [])  # --marker is required
    assert "--marker" in capsys.readouterr().err


def test_never_calls_forward():
    with pytest.raises(TraceError, match=r"never called a model's forward; pass --model/--inputs instead"):
        capture_script(script("no_forward.py"), [])


def test_script_raises_names_exception_and_line():
    argv, path = list(sys.argv), list(sys.path)
    before = originals()
    with pytest.raises(TraceError) as info:
        capture_script(script("raises.py"), [])
    message = str(info.value)
    assert "ValueError: bad config: n_layer must be > 0" in message
    assert f"{script('raises.py')}:9" in message
    assert "\n" not in message and "second line" not in message
    assert originals() == before and sys.argv == argv and sys.path == path


def test_runs_past_max_seconds_restores_alarm():
    fired = []
    previous = signal.signal(signal.SIGALRM, lambda *a: fired.append(a))
    try:
        with pytest.raises(TraceError, match=r"more than 1 s.*--max-seconds"):
            capture_script(script("sleeps.py"), [], max_seconds=1)
        assert signal.getsignal(signal.SIGALRM) is not previous
        assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    finally:
        signal.signal(signal.SIGALRM, previous)
    assert not fired


def test_script_that_swallows_the_stop_still_never_steps(tmp_path, monkeypatch):
    marker = tmp_path / "stepped"
    monkeypatch.setenv("REGCOMP_TEST_MARKER", str(marker))
    got = capture_script(script("swallows.py"), [])
    assert isinstance(got.model, torch.nn.Linear) and tuple(got.args[0].shape) == (2, 3)
    assert got.where.endswith("swallows.py:12")
    assert not marker.exists()


def test_missing_and_non_python_scripts(tmp_path):
    with pytest.raises(TraceError, match="script not found: nope.py"):
        capture_script("nope.py", [])
    with pytest.raises(TraceError, match="not a file"):
        capture_script(str(tmp_path), [])
    binary = tmp_path / "model.bin"
    binary.write_bytes(b"\x00\x01\x02PK\x03\x04\xff\xfe")
    with pytest.raises(TraceError, match="is not a Python script"):
        capture_script(str(binary), [])
    text = tmp_path / "notes.py"
    text.write_text("this is not python at all\n")
    with pytest.raises(TraceError, match=r"is not a Python script: .*line 1"):
        capture_script(str(text), [])


def test_non_json_kwargs_are_repr_d():
    Path("odd.py").write_text(
        "import torch\n"
        "def my_backend(gm, inputs):\n"
        "    return gm\n"
        "m = torch.compile(torch.nn.Linear(2, 2), backend=my_backend, options={'a': (1, 2)})\n"
        "m(torch.ones(1, 2))\n"
    )
    got = capture_script("odd.py", [])
    kwargs = only(got.requests).kwargs
    assert kwargs["backend"].startswith("<function my_backend")
    assert kwargs["options"] == {"a": [1, 2]}
    json.dumps(kwargs)


def test_a_trainer_script_stops_at_its_first_forward_inside_train(tmp_path, monkeypatch):
    """The Trainer builds the plugin from TrainingArguments(torch_compile=True): recorded as built by it."""
    pytest.importorskip("transformers")
    marker = tmp_path / "trainer-out"
    monkeypatch.setenv("REGCOMP_TEST_MARKER", str(marker))
    saved = dict(os.environ)  # TrainingArguments(torch_compile=True) exports ACCELERATE_DYNAMO_*
    try:
        got = capture_script(script("trainer_compile.py"), [])
    finally:
        os.environ.clear()
        os.environ.update(saved)
    assert type(got.model).__name__ == "GPT2LMHeadModel"
    assert tuple(got.kwargs["input_ids"].shape) == (4, 16)
    request = only(got.requests)
    assert (request.api, request.via) == ("TorchDynamoPlugin", "transformers Trainer")
    assert request.kwargs["backend"] == "inductor" and request.kwargs["use_regional_compilation"] is False
    assert not list(marker.glob("checkpoint-*"))  # stopped before any step
