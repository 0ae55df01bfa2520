"""The runtime facts RC401 and RC404 encode, re-measured with real torch and accelerate.

Static lint never imports torch; these tests run a probe in the interpreter named by
``REGCOMP_TORCH_PYTHON`` (for example a throwaway venv with torch==2.13.0 accelerate==1.15.0),
else in this one, and are skipped when it cannot import torch and accelerate. The probe compiles
a 4-block model with ``backend="eager"`` on CPU (a few seconds) and reports state-dict keys.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

TORCH_PYTHON = os.environ.get("REGCOMP_TORCH_PYTHON") or sys.executable

PROBE = textwrap.dedent(
    """
    import json, os, tempfile
    import torch
    from torch import nn
    from accelerate import Accelerator
    from accelerate.state import AcceleratorState
    from accelerate.utils import TorchDynamoPlugin, compile_regions
    from safetensors.torch import load_file

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)
        def forward(self, x):
            return self.fc(x)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = nn.ModuleList([Block() for _ in range(4)])
            self.head = nn.Linear(4, 2)
        def forward(self, x):
            for block in self.blocks:
                x = block(x)
            return self.head(x)

    def keys(sd):
        return sorted(sd)[0]

    def saved(save):
        with tempfile.TemporaryDirectory() as d:
            save(d)
            return keys(load_file(os.path.join(d, "model.safetensors")))

    def raises(call):
        try:
            call()
        except TypeError:
            return True
        return False

    out = {"torch.compile": keys(torch.compile(Net(), backend="eager").state_dict())}
    out["torch.compile _orig_mod"] = keys(torch.compile(Net(), backend="eager")._orig_mod.state_dict())
    inplace = Net()
    inplace.compile(backend="eager")
    out["in place"] = keys(inplace.state_dict())
    regions = compile_regions(Net(), backend="eager")
    out["compile_regions"] = keys(regions.state_dict())
    out["compile_regions _orig_mod"] = keys(regions._orig_mod.state_dict())

    for regional in (False, True):
        AcceleratorState._reset_state(True)
        acc = Accelerator(cpu=True, dynamo_plugin=TorchDynamoPlugin(backend="eager", use_regional_compilation=regional))
        model, opt = acc.prepare(Net(), torch.optim.SGD(Net().parameters(), lr=0.1))
        r = {
            "unwrap": keys(acc.unwrap_model(model).state_dict()),
            "unwrap keep=False": keys(acc.unwrap_model(model, keep_torch_compile=False).state_dict()),
            "get_state_dict": keys(acc.get_state_dict(model)),
            "save_model": saved(lambda d: acc.save_model(model, d)),
            "save_model(unwrap keep=False)": saved(lambda d: acc.save_model(acc.unwrap_model(model, keep_torch_compile=False), d)),
            "save_state": saved(acc.save_state),
            "get_state_dict rejects keep": raises(lambda: acc.get_state_dict(model, keep_torch_compile=False)),
            "save_model rejects keep": raises(lambda: acc.save_model(model, "unused", keep_torch_compile=False)),
            "still compiled": "_orig_mod" in model.__dict__ or hasattr(model, "_orig_mod"),
        }
        out["regional" if regional else "full"] = r

    # RC404 round trip (issue 13): an in-memory copy goes back into the same compiled model;
    # the `_orig_mod.state_dict()` the fix used to write does not
    import copy
    compiled = torch.compile(Net(), backend="eager")
    best = copy.deepcopy(compiled.state_dict())
    compiled.load_state_dict(best)
    out["round trip loads"] = True
    try:
        compiled.load_state_dict(copy.deepcopy(compiled._orig_mod.state_dict()))
        out["unprefixed into compiled loads"] = True
    except RuntimeError:
        out["unprefixed into compiled loads"] = False
    # the named_parameters leak: parameter names of a compiled model carry the prefix too
    out["named_parameters"] = next(name for name, _ in compiled.named_parameters())
    out["named_parameters _orig_mod"] = next(name for name, _ in compiled._orig_mod.named_parameters())

    # RC401: with Accelerate's defaults, accelerator.backward(loss) is loss.backward()
    AcceleratorState._reset_state(True)
    acc = Accelerator(cpu=True)
    torch.manual_seed(0)
    a = Net()
    b = Net()
    b.load_state_dict(a.state_dict())
    x = torch.randn(3, 4)
    a(x).pow(2).mean().backward()
    acc.backward(b(x).pow(2).mean())
    out["backward same grads"] = all(torch.equal(p.grad, q.grad) for p, q in zip(a.parameters(), b.parameters()))
    print("RESULT " + json.dumps(out))
    """
)


@pytest.fixture(scope="module")
def measured() -> dict:
    check = subprocess.run(
        [TORCH_PYTHON, "-c", "import torch, accelerate, safetensors"], capture_output=True, timeout=120
    )
    if check.returncode != 0:
        pytest.skip(f"torch/accelerate not importable by {TORCH_PYTHON}; set REGCOMP_TORCH_PYTHON")
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="", TORCHDYNAMO_VERBOSE="0")
    proc = subprocess.run([TORCH_PYTHON, "-c", PROBE], capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr[-4000:]
    line = next(text for text in proc.stdout.splitlines() if text.startswith("RESULT "))
    return json.loads(line[len("RESULT ") :])


def test_hand_compile_prefixes_and_in_place_compile_does_not(measured):
    assert measured["torch.compile"].startswith("_orig_mod.")
    assert "_orig_mod" not in measured["torch.compile _orig_mod"]
    assert "_orig_mod" not in measured["in place"]
    assert measured["compile_regions"].startswith("blocks.0._orig_mod.")
    assert "_orig_mod" not in measured["compile_regions _orig_mod"]


def test_a_state_dict_copy_round_trips_into_the_same_compiled_model(measured):
    assert measured["round trip loads"]
    assert measured["unprefixed into compiled loads"] is False


def test_named_parameters_of_a_compiled_model_carry_the_prefix(measured):
    assert measured["named_parameters"].startswith("_orig_mod.")
    assert not measured["named_parameters _orig_mod"].startswith("_orig_mod")


def test_accelerate_keeps_the_wrapper_unless_asked(measured):
    for mode, marker in (("full", "_orig_mod."), ("regional", "._orig_mod.")):
        r = measured[mode]
        for saved_by in ("unwrap", "get_state_dict", "save_model"):
            assert marker in r[saved_by] or r[saved_by].startswith(marker), (mode, saved_by, r[saved_by])
        for clean in ("unwrap keep=False", "save_model(unwrap keep=False)", "save_state"):
            assert "_orig_mod" not in r[clean], (mode, clean, r[clean])
        assert r["get_state_dict rejects keep"] and r["save_model rejects keep"]
        assert r["still compiled"]


def test_default_accelerator_backward_equals_tensor_backward(measured):
    assert measured["backward same grads"]
