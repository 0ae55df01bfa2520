"""The runtime facts RC407 encodes, re-measured under a real two-process launch.

A model with a ``generate`` method and a ``config`` field, prepared by an Accelerator with a
dynamo plugin (``backend="eager"``) under ``accelerate launch`` on 2 CPU processes: DDP has
neither attribute, ``unwrap_model`` gives both back, and DDP's own public attributes are the
ones ``knowledge.torch_api`` lists (so RC407 stays quiet on ``model.device``); a probe by name
(``hasattr(model, "config")``) answers no. And accelerate's
default ``unwrap_model(model)`` of a compiled model rewires the prepared model itself.
"""

from __future__ import annotations

import json
import textwrap

import pytest

from regcomp_lint.knowledge.torch_api import DATA_PARALLEL_INSTANCE_API, MODULE_API
from tests.launch import accelerate_launch, cpu_launch_environment, run_once_more_on_teardown_abort, torch_missing

PROBE = textwrap.dedent(
    """
    import json
    import torch
    from accelerate import Accelerator
    from accelerate.utils import TorchDynamoPlugin


    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(4, 4)
            self.config = {"vocab": 4}

        def forward(self, x):
            return self.fc(x)

        def generate(self, x):
            return self.fc(x).argmax(-1)


    accelerator = Accelerator(dynamo_plugin=TorchDynamoPlugin(backend="eager"))
    model = accelerator.prepare(Net())
    ddp = model._orig_mod
    report = {
        "processes": accelerator.num_processes,
        "wrapper": type(ddp).__name__,
        "own": sorted(n for n in dir(ddp) if not n.startswith("_") and not hasattr(torch.nn.Module, n)),
        "errors": {},
    }
    for name in ("generate", "config", "device"):
        try:
            getattr(model, name)
        except AttributeError as error:
            report["errors"][name] = str(error)
    unwrapped = accelerator.unwrap_model(model, keep_torch_compile=False)
    report["unwrapped"] = list(unwrapped.generate(torch.randn(2, 4)).shape)
    report["probes"] = [hasattr(model, "config"), getattr(model, "config", "default"), hasattr(unwrapped, "config")]
    report["after_keep_false"] = type(model._orig_mod).__name__
    accelerator.unwrap_model(model)  # keep_torch_compile=True, the default
    report["after_default"] = type(model._orig_mod).__name__
    if accelerator.is_main_process:
        print("RC407 " + json.dumps(report), flush=True)
    accelerator.wait_for_everyone()
    """
)


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    reason = torch_missing()
    if reason:
        pytest.skip(reason)
    folder = tmp_path_factory.mktemp("rc407")
    (folder / "probe.py").write_text(PROBE)
    done = run_once_more_on_teardown_abort(
        accelerate_launch(["probe.py"]), folder, cpu_launch_environment(folder), ["RC407 "]
    )
    line = next((line for line in done.stdout.splitlines() if line.startswith("RC407 ")), None)
    assert done.returncode == 0 and line is not None, done.output[-3000:]
    return json.loads(line[len("RC407 ") :])


def test_ddp_has_neither_a_model_method_nor_its_fields(measured):
    assert measured["processes"] == 2 and measured["wrapper"] == "DistributedDataParallel"
    assert "has no attribute 'generate'" in measured["errors"]["generate"]
    assert "has no attribute 'config'" in measured["errors"]["config"]
    assert "device" not in measured["errors"]  # DDP's own: RC407 stays quiet on model.device
    assert measured["unwrapped"] == [2]


def test_a_probe_by_name_answers_no_through_ddp(measured):
    """Why RC407 reports ``hasattr(model, "config")`` and regcomp-fix probes the unwrapped model."""
    assert measured["probes"] == [False, "default", True]


def test_the_default_unwrap_strips_ddp_from_the_prepared_model(measured):
    """Why RC407's fix passes keep_torch_compile=False when the plugin compiles: accelerate's
    unwrap_model(model) puts the bare module back into the compiled wrapper it returns, which is
    the prepared model itself (its DDP layer is gone: no ``no_sync`` any more)."""
    assert measured["after_keep_false"] == "DistributedDataParallel"
    assert measured["after_default"] == "Net"


def test_the_table_of_ddps_own_attributes_is_torchs(measured):
    own = set(measured["own"]) - {"training"}
    assert own == set(DATA_PARALLEL_INSTANCE_API) - set(MODULE_API), sorted(own ^ set(DATA_PARALLEL_INSTANCE_API))
