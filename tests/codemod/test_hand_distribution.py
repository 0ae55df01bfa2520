"""The ``cpu=`` condition of a converted torchrun script (codemod/hand_distribution.py)."""

from __future__ import annotations

import re
import types

import pytest

from regcomp_lint.codemod.convert import convert_source

MPS_CHOICE = """\
import os
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def setup():
    if "WORLD_SIZE" in os.environ:
        dist.init_process_group(backend="gloo")
    if torch.cuda.is_available():
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0)))
    elif getattr(torch.backends, "mps", None) and torch.backends.mps.is_available():
        device = torch.device("mps")
    else:
        device = torch.device("cpu")
    return device


def main():
    device = setup()
    model = torch.nn.Linear(4, 1).to(device)
    if dist.is_initialized():
        model = DDP(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x.to(device)), y.to(device))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    if dist.is_initialized():
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
"""


def _cpu_keyword(text: str) -> str:
    found = re.search(r"Accelerator\(.*cpu=(.*)\)\n", text)
    assert found is not None, text
    return found.group(1)


def _fake_torch(cuda: bool, mps: bool) -> types.SimpleNamespace:
    backends = types.SimpleNamespace(mps=types.SimpleNamespace(is_available=lambda: mps))
    return types.SimpleNamespace(cuda=types.SimpleNamespace(is_available=lambda: cuda), backends=backends)


@pytest.mark.parametrize(
    ("cuda", "mps", "world_size", "cpu"),
    [
        (False, True, None, False),  # one process on an Apple machine: the script picks MPS, so does Accelerate
        (False, False, None, True),  # one process, no accelerator: the script picks the CPU
        (True, False, None, False),  # CUDA: the script picks CUDA
        (False, False, "2", True),  # several processes without CUDA: gloo on the CPU, as the original
        (
            False,
            True,
            "2",
            True,
        ),  # several processes on an Apple machine: gloo has no MPS; Accelerate joins them on the CPU
        (True, False, "2", False),
    ],
)
def test_the_cpu_condition_keeps_the_scripts_mps_choice(cuda, mps, world_size, cpu, monkeypatch):
    """cifar_basics (survey 22b): the script picks MPS without CUDA; the join-the-processes
    condition ``not torch.cuda.is_available()`` OR-ed with the script's own choice sent a
    one-process run on an Apple machine to the CPU. Only several processes need cpu=True."""
    result = convert_source(MPS_CHOICE, "train.py")
    assert result.refused is None, result.refused
    condition = _cpu_keyword(result.text)
    if world_size is None:
        monkeypatch.delenv("WORLD_SIZE", raising=False)
    else:
        monkeypatch.setenv("WORLD_SIZE", world_size)
    import os

    assert bool(eval(condition, {"torch": _fake_torch(cuda, mps), "os": os})) is cpu, condition
    assert "import os\n" in result.text


def test_a_script_that_picks_the_cpu_without_cuda_keeps_the_short_condition():
    """The script's own choice is ``not torch.cuda.is_available()`` already: one condition."""
    text = MPS_CHOICE.replace(
        '    elif getattr(torch.backends, "mps", None) and torch.backends.mps.is_available():\n'
        '        device = torch.device("mps")\n',
        "",
    )
    result = convert_source(text, "train.py")
    assert result.refused is None, result.refused
    assert _cpu_keyword(result.text) == "not torch.cuda.is_available()"


def test_a_choice_of_the_cpu_on_both_branches_keeps_cpu_true_and_its_note():
    """``if ddp: device = "cpu" ... else: device = "cpu"`` (fixtures/equivalence/torchrun_env_ddp):
    cpu=True always; the several-processes condition is not written, nor said in a note."""
    from pathlib import Path

    path = Path(__file__).parents[2] / "fixtures" / "equivalence" / "torchrun_env_ddp" / "train.py"
    result = convert_source(path.read_text(), "train.py")
    assert result.refused is None, result.refused
    assert _cpu_keyword(result.text) == "True"
    assert not any("WORLD_SIZE" in n for n in result.notes), result.notes


HELPER_GROUP = """\
import torch
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from utils.distributed import setup_distributed, cleanup_distributed


def train():
    rank, world_size = setup_distributed(backend="gloo")
    model = nn.Linear(4, 1)
    if world_size > 1:
        model = DDP(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(4):
        loss = model(torch.randn(2, 4)).sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    cleanup_distributed()


if __name__ == "__main__":
    train()
"""


def test_a_ddp_wrap_whose_process_group_a_helper_sets_up_still_runs_distributed_on_the_cpu(tmp_path):
    """Survey 23b, gpt2_chakra: the process group comes from ``setup_distributed()`` of a module
    not in the file, the script wraps DDP itself. Without ``cpu=`` Accelerate, on a machine without
    CUDA, under torchrun, took each process for a single one: no gradient sync, the two ranks ended
    with different weights (replica, 2 gloo processes: 9.084585 and 9.548167, the original 9.403088
    on both)."""
    result = convert_source(HELPER_GROUP, str(tmp_path / "train.py"))
    assert result.refused is None, result.refused
    assert "Accelerator(dynamo_plugin=dynamo_plugin, cpu=not torch.cuda.is_available())" in result.text, result.text
    assert any(n.startswith("cpu=not torch.cuda.is_available()") for n in result.notes), result.notes


def test_a_dataparallel_wrap_alone_gets_no_cpu_flag(tmp_path):
    text = HELPER_GROUP.replace("DDP(model)", "nn.DataParallel(model)")
    result = convert_source(text, str(tmp_path / "train.py"))
    assert result.refused is None, result.refused
    assert "cpu=not torch.cuda.is_available()" not in result.text, result.text


def test_a_ddp_script_importing_torch_under_another_name_still_runs_distributed_on_the_cpu():
    """``import torch as t`` (survey25a, nanovit's style in a DDP script): the ``cpu=`` condition was
    left out because no plain ``torch`` name exists, and under torchrun on 2 gloo processes the
    conversion's ranks trained apart (parameter sums -0.747137 and -0.892806 after the first step,
    the original -0.819972 on both). Now the condition is written and ``import torch`` added."""
    text = (
        "import torch as t\nimport torch.distributed as dist\n"
        "from torch.nn.parallel import DistributedDataParallel as DDP\n\n"
        'dist.init_process_group("gloo")\n'
        "model = DDP(t.nn.Linear(4, 1))\nopt = t.optim.SGD(model.parameters(), lr=0.1)\n"
        "for step in range(3):\n"
        "    opt.zero_grad()\n    model(t.randn(2, 4)).sum().backward()\n    opt.step()\n"
    )
    result = convert_source(text, "train.py")
    assert result.refused is None, result.refused
    assert "Accelerator(dynamo_plugin=dynamo_plugin, cpu=not torch.cuda.is_available())" in result.text, result.text
    assert "\nimport torch\n" in result.text, result.text
    compile(result.text, "train.py", "exec")
