"""Hand-written batch sources get a seed per process where that is exact (codemod/batch_seeds.py)."""

from __future__ import annotations

import pytest

from regcomp_lint.codemod import convert_source
from tests.codemod.test_own_loader_class import ENDLESS

#: ng-video-lecture / char-level GPT style: module-level config, a seed, get_batch() drawing rows.
SCRIPT = """\
import numpy as np
import torch
import torch.nn as nn

batch_size = 8
block_size = 16
device = "cuda" if torch.cuda.is_available() else "cpu"
SEED
data = torch.arange(1000) % 50
DATA


def get_batch():
    ix = DRAW
    x = torch.stack([data[i : i + block_size] for i in ix])
    y = torch.stack([data[i + 1 : i + block_size + 1] for i in ix])
    return x.to(device), y.to(device)


model = nn.Sequential(nn.Embedding(50, 32), nn.Linear(32, 50)).to(device)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
for it in range(100):
    xb, yb = get_batch()
    loss = nn.functional.cross_entropy(model(xb).view(-1, 50), yb.view(-1))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
"""
TORCH_DRAW = "torch.randint(len(data) - block_size, (batch_size,))"


def _convert(seed="torch.manual_seed(1337)", data="", draw=TORCH_DRAW):
    text = SCRIPT.replace("SEED", seed).replace("DATA", data).replace("DRAW", draw)
    result = convert_source(text, "train.py")
    assert result.refused is None, result.refused
    note = next(n for n in result.notes if n.startswith("no DataLoader feeds the training loop"))
    return result.text, note


def test_the_seed_of_the_drawn_generator_adds_the_process_index():
    text, note = _convert()
    assert "torch.manual_seed(1337 + accelerator.process_index)\n" in text
    assert text.index("accelerator = Accelerator(") < text.index("torch.manual_seed(")
    assert "torch.manual_seed(...) at line 8" in note and "each process draws its own batches" in note


@pytest.mark.parametrize(
    ("seed", "expected"),
    [
        ("torch.manual_seed(seed=1337)", "torch.manual_seed(seed=1337 + accelerator.process_index)"),
        (
            "torch.manual_seed(7 if batch_size else 1)",
            "torch.manual_seed((7 if batch_size else 1) + accelerator.process_index)",
        ),
        ("torch.manual_seed(batch_size * 3)", "torch.manual_seed((batch_size * 3) + accelerator.process_index)"),
        (
            "from accelerate.utils import set_seed\nset_seed(42)",
            "set_seed(42 + accelerator.process_index)",
        ),
    ],
)
def test_the_seed_expression_keeps_its_meaning(seed, expected):
    text, _ = _convert(seed=seed)
    assert expected in text


def test_a_numpy_draw_is_offset_through_numpys_seed_only():
    text, _ = _convert(
        seed="torch.manual_seed(1337)\nnp.random.seed(3)",
        draw="np.random.randint(len(data) - block_size, size=batch_size)",
    )
    assert "np.random.seed(3 + accelerator.process_index)" in text
    assert "torch.manual_seed(1337)\n" in text  # torch draws only the weights here: left alone


def test_data_drawn_at_random_before_training_keeps_one_seed():
    """With a seed per process, each process would draw another dataset."""
    text, note = _convert(data="noise = torch.randn(1000)")
    assert "torch.manual_seed(1337)\n" in text
    assert "torch.randn(...) at line 10 makes values at random before training" in note
    assert "every process draws the same batches from torch.randint (line 14)" in note


def test_a_seed_that_runs_before_the_accelerator_is_named():
    """The Accelerator is created after the command line its settings read; a seed above that stays."""
    script = SCRIPT.replace('device = "cuda" if torch.cuda.is_available() else "cpu"\n', "")
    script = script.replace(".to(device)", "")
    script = script.replace(
        "SEED\n",
        "SEED\nimport argparse\nparser = argparse.ArgumentParser()\nparser.add_argument('--compile', action='store_true')\n"
        "args = parser.parse_args()\n",
    ).replace("for it in range(100):", "if args.compile:\n    model = torch.compile(model)\nfor it in range(100):")
    text = script.replace("SEED", "torch.manual_seed(1337)").replace("DATA", "").replace("DRAW", TORCH_DRAW)
    result = convert_source(text, "train.py")
    assert result.refused is None, result.refused
    assert "torch.manual_seed(1337)\n" in result.text
    assert result.text.index("torch.manual_seed(1337)") < result.text.index("accelerator = Accelerator(")
    (note,) = [n for n in result.notes if n.startswith("no DataLoader feeds")]
    assert "torch.manual_seed(...) at line 7 runs before the Accelerator exists" in note, note


@pytest.mark.parametrize(
    "seed",
    [
        "import os\ntorch.manual_seed(1337 + int(os.environ.get('RANK', 0)))",
        "import torch.distributed as dist\ntorch.manual_seed(1337 + dist.get_rank())",
        "seed_offset = 0\ntorch.manual_seed(1337 + seed_offset)",
    ],
)
def test_a_script_already_seeded_per_rank_is_left_alone(seed):
    text, _ = _convert(seed=seed)
    assert seed.split("\n")[-1] + "\n" in text


def test_unseeded_torch_draws_are_said_to_differ_between_processes():
    """torch's default CPU generator starts from OS entropy in every process (torch 2.13:
    ``torch.initial_seed()`` differs between two fresh processes; two unseeded ranks drew
    different ``torch.randperm`` orders, measured): the note said every rank draws the same."""
    text, note = _convert(seed="")
    assert "the script draws at random without a seed (torch.randint (line 14))" in note
    assert "each rank draws different batches" in note


def test_torch_draws_on_a_named_device_or_generator_are_not_said_to_differ():
    for draw in (
        "torch.randint(len(data) - block_size, (batch_size,), device=device)",
        "torch.randint(len(data) - block_size, (batch_size,), generator=torch.Generator())",
    ):
        text, note = _convert(seed="", draw=draw)
        assert "every rank draws the same batches unless that code uses accelerator.process_index" in note


def test_a_seed_under_an_if_is_named_with_what_each_process_draws_either_way():
    """llama_mmqa (survey 21e): ``if args.seed is not None: torch.manual_seed(args.seed)`` and an
    endless generator of ``torch.randperm`` orders. The note said every rank draws the same batches;
    measured on a replica (2 gloo processes): with ``--seed`` both ranks' batches, losses and weights
    are the original's, without it each rank draws its own order (first batches [8, 18] and
    [16, 18]), as torch's CPU generator starts from its own entropy in every process."""
    source = ENDLESS.replace(
        "model = torch.nn.Linear(4, 1)\n",
        "import sys\nseed = int(sys.argv[1]) if len(sys.argv) > 1 else None\nif seed is not None:\n"
        "    torch.manual_seed(seed)\nmodel = torch.nn.Linear(4, 1)\n",
    )
    result = convert_source(source, "train.py")
    assert result.refused is None, result.refused
    note = next(n for n in result.notes if n.startswith("no DataLoader feeds the training loop"))
    assert "every rank draws the same batches unless" not in note
    assert "torch.manual_seed(seed) (line 20, under the if at line 19)" in note
    assert "the original's gradients" in note and "each process draws its own" in note


def test_an_unseeded_generator_two_calls_down_is_said_to_differ_between_processes():
    """``get_data()`` hands back ``_endless(...)``, which draws ``torch.randperm`` each epoch
    (llama_mmqa without --seed): the draw is two calls below the step, and was not seen."""
    source = ENDLESS.replace("data = torch.randn(64, 4)", "data = torch.arange(256.0).view(64, 4)")
    result = convert_source(source, "train.py")
    note = next(n for n in result.notes if n.startswith("no DataLoader feeds the training loop"))
    assert "the script draws at random without a seed (torch.randperm (line 6))" in note
