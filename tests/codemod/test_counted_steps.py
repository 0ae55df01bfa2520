"""A per-step scheduler of a loop whose number of steps a counter fixes stays unprepared.

``while global_step < total_steps:`` around ``for batch in loader: ... scheduler.step();
global_step += 1``, or ``for step in range(max_steps):`` drawing ``next(data_iter)``: each process
takes the original's number of optimizer steps whatever share of the data it gets, so a prepared
scheduler (which steps once per process at each call) ran its schedule out at half the run on 2
processes while the loop went on. Unprepared, it steps once per step, as in the original. A
scheduler of ``for epoch in range(E): for batch in loader:`` (steps that shrink with the shard)
is still prepared. RC402 (the same roles) asks for neither kept scheduler."""

from __future__ import annotations

import pytest

from regcomp_lint.api import lint_source
from regcomp_lint.codemod import convert_source
from regcomp_lint.lint.config import Settings

HEAD = """\
import argparse

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--total_steps", type=int, default=20)
    args = parser.parse_args()
    torch.manual_seed(0)
    model = nn.Linear(8, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    total_steps = args.total_steps
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: max(0.0, 1 - s / total_steps))
    loader = DataLoader(TensorDataset(torch.randn(64, 8), torch.randn(64, 1)), batch_size=8, shuffle=True)
"""

STEP = """\
            optimizer.zero_grad()
            loss = nn.functional.mse_loss(model(x), y)
            loss.backward()
            optimizer.step()
            scheduler.step()
"""
#: the same step one loop level up
STEP8 = STEP.replace("\n    ", "\n").removeprefix("    ")

TAIL = """

if __name__ == "__main__":
    main()
"""

LOOPS = {
    "while counter around the loader loop": (
        "    global_step = 0\n"
        "    while global_step < total_steps:\n"
        "        for x, y in loader:\n" + STEP + "            global_step += 1\n"
        "            if global_step >= total_steps:\n"
        "                break\n"
    ),
    "while counter, bound on the left": (
        "    step = 0\n"
        "    while total_steps > step:\n"
        "        for batch_idx, (x, y) in enumerate(loader):\n" + STEP + "            step = step + 1\n"
        "            if step == total_steps:\n"
        "                break\n"
    ),
    "while True with a counter break": (
        "    global_step = 0\n"
        "    done = False\n"
        "    while True:\n"
        "        for x, y in loader:\n" + STEP + "            global_step += 1\n"
        "            if global_step >= total_steps:\n"
        "                done = True\n"
        "                break\n"
        "        if global_step >= total_steps:\n"
        "            break\n"
    ),
    "while not done, the flag set by a counter test": (
        "    global_step = 0\n"
        "    done = False\n"
        "    while not done:\n"
        "        for x, y in loader:\n" + STEP + "            global_step += 1\n"
        "            if global_step >= total_steps:\n"
        "                done = True\n"
        "                break\n"
    ),
    "range of steps drawing next()": (
        "    data_iter = iter(loader)\n"
        "    for step in range(total_steps):\n"
        "        try:\n"
        "            x, y = next(data_iter)\n"
        "        except StopIteration:\n"
        "            data_iter = iter(loader)\n"
        "            x, y = next(data_iter)\n" + STEP8
    ),
    # survey 26e vit_pydantic: `pbar = trange(cfg.max_train_steps)`, then `for step in pbar:`
    "progress bar named before the loop": (
        "    from tqdm.auto import trange\n"
        "    pbar = trange(total_steps)\n"
        "    data_iter = iter(loader)\n"
        "    for step in pbar:\n"
        "        try:\n"
        "            x, y = next(data_iter)\n"
        "        except StopIteration:\n"
        "            data_iter = iter(loader)\n"
        "            x, y = next(data_iter)\n" + STEP8
    ),
}


@pytest.mark.parametrize("style", sorted(LOOPS))
def test_a_per_step_scheduler_of_a_counted_loop_stays_unprepared(style):
    src = HEAD + LOOPS[style] + TAIL
    result = convert_source(src, "train.py")
    assert result.refused is None, result.refused
    assert "model, optimizer, loader = accelerator.prepare(model, optimizer, loader)\n" in result.text, result.text
    assert any(n.startswith("scheduler steps once per optimizer step of a loop") for n in result.notes), result.notes
    converted = [d for d in lint_source(result.text, "train.py", Settings(select=("RC402",))) if d.code == "RC402"]
    assert converted == [], converted


def test_a_per_step_scheduler_of_an_epoch_loop_is_still_prepared():
    """``for epoch in range(E): for batch in loader:`` takes fewer steps per process once the
    loader is sharded: the prepared scheduler keeps its schedule in step with the original's."""
    loop = "    for epoch in range(3):\n        for x, y in loader:\n" + STEP
    result = convert_source(HEAD + loop + TAIL, "train.py")
    assert result.refused is None, result.refused
    assert (
        "model, optimizer, loader, scheduler = accelerator.prepare(model, optimizer, loader, scheduler)\n"
        in result.text
    ), result.text


def test_a_while_loop_ended_by_the_data_is_not_counted():
    """``while True: try: next(it) except StopIteration: break``: the data ends the loop, so the
    steps shrink with the shard, as in an epoch loop."""
    loop = (
        "    data_iter = iter(loader)\n"
        "    while True:\n"
        "        try:\n"
        "            x, y = next(data_iter)\n"
        "        except StopIteration:\n"
        "            break\n" + STEP8
    )
    result = convert_source(HEAD + loop + TAIL, "train.py")
    assert result.refused is None, result.refused
    assert "scheduler = accelerator.prepare(model, optimizer, loader, scheduler)\n" in result.text, result.text


def test_a_while_not_done_loop_whose_flag_the_data_sets_is_not_counted():
    """``while not done:`` left by ``done = True`` when the data runs out: the steps shrink with
    the shard, so the scheduler is prepared as for an epoch loop (a counter that only paces
    logging does not end the loop)."""
    loop = (
        "    global_step = 0\n"
        "    done = False\n"
        "    data_iter = iter(loader)\n"
        "    while not done:\n"
        "        try:\n"
        "            x, y = next(data_iter)\n"
        "        except StopIteration:\n"
        "            done = True\n"
        "            continue\n" + STEP8 + "        global_step += 1\n"
        "        if global_step % 4 == 0:\n"
        "            print(global_step)\n"
    )
    result = convert_source(HEAD + loop + TAIL, "train.py")
    assert result.refused is None, result.refused
    assert "scheduler = accelerator.prepare(model, optimizer, loader, scheduler)\n" in result.text, result.text


@pytest.mark.parametrize("style", sorted(LOOPS))
def test_rc402_does_not_ask_for_the_scheduler_of_a_counted_loop(style):
    src = (
        (HEAD + LOOPS[style] + TAIL)
        .replace("import torch\n", "import torch\nfrom accelerate import Accelerator\n", 1)
        .replace(
            "    loader = DataLoader(TensorDataset(torch.randn(64, 8), torch.randn(64, 1)), batch_size=8, shuffle=True)\n",
            "    loader = DataLoader(TensorDataset(torch.randn(64, 8), torch.randn(64, 1)), batch_size=8, shuffle=True)\n"
            "    accelerator = Accelerator()\n"
            "    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)\n",
        )
    )
    assert [d for d in lint_source(src, "train.py", Settings(select=("RC402",))) if d.code == "RC402"] == []


def test_rc402_still_asks_for_the_scheduler_of_an_epoch_loop():
    loop = "    for epoch in range(3):\n        for x, y in loader:\n" + STEP
    src = (
        (HEAD + loop + TAIL)
        .replace("import torch\n", "import torch\nfrom accelerate import Accelerator\n", 1)
        .replace(
            "    loader = DataLoader(TensorDataset(torch.randn(64, 8), torch.randn(64, 1)), batch_size=8, shuffle=True)\n",
            "    loader = DataLoader(TensorDataset(torch.randn(64, 8), torch.randn(64, 1)), batch_size=8, shuffle=True)\n"
            "    accelerator = Accelerator()\n"
            "    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)\n",
        )
    )
    found = [d for d in lint_source(src, "train.py", Settings(select=("RC402",))) if d.code == "RC402"]
    assert [d.message.split("`")[1] for d in found] == ["scheduler"], found


def test_a_bound_sized_from_the_whole_loader_before_the_scheduler_is_fixed():
    """``total_steps = epochs * len(loader)``, computed to size the scheduler: read before
    ``prepare``, it is the whole loader's length, and the counter still fixes every process's steps."""
    src = (HEAD + LOOPS["while counter around the loader loop"] + TAIL).replace(
        "    total_steps = args.total_steps\n"
        "    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: max(0.0, 1 - s / total_steps))\n"
        "    loader = DataLoader(TensorDataset(torch.randn(64, 8), torch.randn(64, 1)), batch_size=8, shuffle=True)\n",
        "    loader = DataLoader(TensorDataset(torch.randn(64, 8), torch.randn(64, 1)), batch_size=8, shuffle=True)\n"
        "    total_steps = 3 * len(loader)\n"
        "    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: max(0.0, 1 - s / total_steps))\n",
    )
    result = convert_source(src, "train.py")
    assert result.refused is None, result.refused
    assert "model, optimizer, loader = accelerator.prepare(model, optimizer, loader)\n" in result.text, result.text


def test_a_range_over_the_loader_length_read_in_the_loop_is_not_counted():
    """``for step in range(3 * len(loader))`` read after ``prepare``: one process's share, which
    shrinks with the shard, so the scheduler is prepared as for an epoch loop."""
    loop = (
        "    data_iter = iter(loader)\n"
        "    for step in range(3 * len(loader)):\n"
        "        try:\n"
        "            x, y = next(data_iter)\n"
        "        except StopIteration:\n"
        "            data_iter = iter(loader)\n"
        "            x, y = next(data_iter)\n" + STEP8
    )
    result = convert_source(HEAD + loop + TAIL, "train.py")
    assert result.refused is None, result.refused
    assert "scheduler = accelerator.prepare(model, optimizer, loader, scheduler)\n" in result.text, result.text


TRAINER = """\
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class Trainer:
    def __init__(self, model, loader, max_steps):
        self.model = model
        self.loader = loader
        self.max_steps = max_steps
        self.optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(self.optimizer, lambda s: max(0.0, 1 - s / max_steps))
        self.global_step = 0

    def train_step(self, x, y):
        self.optimizer.zero_grad()
        loss = nn.functional.mse_loss(self.model(x), y)
        loss.backward()
        self.optimizer.step()
        self.scheduler.step()
        self.global_step += 1

    def fit(self):
        while self.global_step < self.max_steps:
            for x, y in self.loader:
                self.train_step(x, y)
                if self.global_step >= self.max_steps:
                    break


def main():
    model = nn.Linear(8, 1)
    loader = DataLoader(TensorDataset(torch.randn(64, 8), torch.randn(64, 1)), batch_size=8, shuffle=True)
    Trainer(model, loader, 20).fit()


if __name__ == "__main__":
    main()
"""


def test_a_trainer_class_whose_step_method_adds_to_the_counter_keeps_its_scheduler_unprepared():
    """``while self.global_step < self.max_steps:`` in ``fit()``, the counter added to in the
    ``train_step()`` it calls: the counter still ends the loop."""
    result = convert_source(TRAINER, "train.py")
    assert result.refused is None, result.refused
    assert "self.scheduler = self.accelerator.prepare(" not in result.text, result.text
    assert "self.scheduler" not in next(line for line in result.text.splitlines() if ".prepare(" in line)
    assert any(n.startswith("self.scheduler steps once per optimizer step of a loop") for n in result.notes), (
        result.notes
    )


#: survey 21d, the speech decoder's resume script: the start step is counted from the evaluations
#: of the previous run kept in a list (``start_step = len(testCER) * log_every``), read after the
#: scheduler is built; the list's length is no share of the data
RESUMED_FROM_A_LIST = {
    "list() of a loaded value, or an empty list": (
        "    if args.stats:\n"
        "        history = list(torch.load(args.stats).get('cer', []))\n"
        "    else:\n"
        "        history = []\n"
    ),
    "a list comprehension": "    history = [h for h in torch.load(args.stats)['cer']]\n",
    "a tuple display": "    history = (0.9, 0.8)\n",
}


@pytest.mark.parametrize("style", sorted(RESUMED_FROM_A_LIST))
def test_a_bound_that_reads_the_length_of_a_list_is_still_fixed(style):
    """``total = len(history) * 5 + extra`` read after the scheduler is built: ``len()`` of a
    list the script keeps, not of a loader, so the counter still fixes every process's steps and
    the scheduler stays unprepared (before: prepared, and on 2 processes its LinearLR reached its
    end after half the run)."""
    loop = (
        RESUMED_FROM_A_LIST[style] + "    start_step = len(history) * 5\n"
        "    total = start_step + total_steps\n"
        "    global_step = start_step\n"
        "    data_iter = iter(loader)\n"
        "    while global_step < total:\n"
        "        try:\n"
        "            x, y = next(data_iter)\n"
        "        except StopIteration:\n"
        "            data_iter = iter(loader)\n"
        "            x, y = next(data_iter)\n" + STEP8 + "        global_step += 1\n"
    )
    src = (HEAD + loop + TAIL).replace(
        '    parser.add_argument("--total_steps", type=int, default=20)\n',
        '    parser.add_argument("--total_steps", type=int, default=20)\n    parser.add_argument("--stats")\n',
    )
    result = convert_source(src, "train.py")
    assert result.refused is None, result.refused
    assert "model, optimizer, loader = accelerator.prepare(model, optimizer, loader)\n" in result.text, result.text
    assert any(n.startswith("scheduler steps once per optimizer step of a loop") for n in result.notes), result.notes


def test_a_bound_that_reads_the_length_of_a_list_of_the_loader_is_not_fixed():
    """``list(loader)`` holds the batches: its length, read after ``prepare``, shrinks with the
    shard, so the loop is not counted and the scheduler is prepared as for an epoch loop."""
    loop = (
        "    batches = list(loader)\n"
        "    total = 3 * len(batches)\n"
        "    global_step = 0\n"
        "    while global_step < total:\n"
        "        for x, y in loader:\n" + STEP + "            global_step += 1\n"
    )
    result = convert_source(HEAD + loop + TAIL, "train.py")
    assert result.refused is None, result.refused
    assert "scheduler = accelerator.prepare(model, optimizer, loader, scheduler)\n" in result.text, result.text
