"""A training step whose count can differ between processes (an RL episode loop that ends on
what the environment or ``random`` says) is refused: converted, a 2-process DDP run hangs in the
all-reduce of the process that steps more. Loops that end on counters still convert. A script
that draws its batches at random without a seed is not told every rank draws the same ones."""

from __future__ import annotations

import textwrap

import pytest

from regcomp_lint.codemod import convert_source

HEAD = """\
import random

import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
policy_net = torch.nn.Linear(4, 2).to(device)
optimizer = torch.optim.RMSprop(policy_net.parameters())
memory = []


def optimize_model():
    if len(memory) < 8:
        return
    batch = torch.stack(random.sample(memory, 8))
    loss = policy_net(batch).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()

"""


def _convert(loop: str):
    return convert_source(HEAD + textwrap.dedent(loop), "dqn.py")


def test_an_episode_loop_ending_on_a_random_draw_is_refused_naming_it_and_the_early_return():
    result = _convert(
        """
        for episode in range(10):
            done = False
            while not done:
                memory.append(torch.randn(4, device=device))
                optimize_model()
                done = random.random() < 0.1
        """
    )
    assert not result.changed
    assert result.refused == (
        "dqn.py: not converted: the number of training steps can differ between processes: the loop at line 23 "
        "(`while not done:`) that runs the step ends on `not done`, computed by `done = random.random() < 0.1` "
        "(line 26); optimize_model() also returns before its X.backward() when `len(memory) < 8` (line 12); "
        "every X.backward() all-reduces gradients across processes, so one that steps fewer times leaves the "
        "others waiting (a 2-process run hangs); convert by hand, giving every process the same number of steps"
    )


def test_a_break_on_what_the_environment_returns_is_refused():
    result = _convert(
        """
        from itertools import count

        for episode in range(10):
            for t in count():
                state, reward, done, info = env.step(0)
                memory.append(torch.randn(4, device=device))
                optimize_model()
                if done:
                    break
        """
    )
    assert result.refused is not None
    assert "the loop at line 24 (`for t in count():`) that runs the step ends on `done`, computed by " in (
        result.refused
    )
    assert "`state, reward, done, info = env.step(0)` (line 25)" in result.refused


def test_a_while_test_that_calls_a_clock_is_refused():
    result = _convert(
        """
        import time

        start = time.time()
        while time.time() - start < 60:
            memory.append(torch.randn(4, device=device))
            optimize_model()
        """
    )
    assert result.refused is not None
    assert "ends on `time.time() - start < 60` (line 24), which calls time.time()" in result.refused


@pytest.mark.parametrize(
    "loop",
    [
        # nanoGPT: an endless loop that ends on a counter
        """
        it = 0
        while True:
            memory.append(torch.randn(4, device=device))
            optimize_model()
            it += 1
            if it > 100:
                break
        """,
        # a draw from a generator seeded alike: every process draws the same (per_process.py)
        """
        rng = random.Random(0)
        done = False
        while not done:
            memory.append(torch.randn(4, device=device))
            optimize_model()
            done = rng.random() < 0.1
        """,
        # llm.c: a flag computed from the loop variable alone
        """
        for step in range(101):
            last_step = step == 100
            memory.append(torch.randn(4, device=device))
            optimize_model()
            if last_step or len(memory) > 1000:
                break
        """,
    ],
)
def test_loops_ending_on_counters_still_convert(loop):
    result = _convert(loop)
    assert result.refused is None
    assert result.changed


def test_unseeded_random_batches_are_not_said_to_be_the_same_on_every_rank():
    result = _convert(
        "for step in range(100):\n    memory.append(torch.randn(4, device=device))\n    optimize_model()\n"
    )
    notes = [n for n in result.notes if n.startswith("no DataLoader feeds the training loop")]
    assert notes == [
        "no DataLoader feeds the training loop: its batches come from the script's own code, which accelerate "
        "launch does not split; the script draws at random without a seed (random.sample (line 14)), so under "
        "several processes each rank draws different batches (gradients are averaged over them) and no run "
        "repeats another"
    ]


def test_an_unknown_seeding_helper_keeps_the_same_batches_note():
    text = HEAD.replace("memory = []\n", "memory = []\nset_seed(0)\n") + (
        "for step in range(100):\n    memory.append(torch.randn(4, device=device))\n    optimize_model()\n"
    )
    result = convert_source(text, "dqn.py")
    assert any("every rank draws the same batches" in note for note in result.notes)


def test_a_seeded_draw_in_the_step_gets_a_seed_per_process():
    """random.seed(0) seeds random.sample's generator: each process gets its own seed (batch_seeds.py)."""
    text = HEAD.replace("memory = []\n", "memory = []\nrandom.seed(0)\n") + (
        "for step in range(100):\n    memory.append(torch.randn(4, device=device))\n    optimize_model()\n"
    )
    result = convert_source(text, "dqn.py")
    assert "random.seed(0 + accelerator.process_index)\n" in result.text


def test_an_unseeded_draw_in_a_replay_memory_method_the_step_calls_is_named():
    text = HEAD.replace(
        "memory = []\n",
        "class Replay(list):\n    def draw(self, n):\n        return random.sample(self, n)\n\n\nmemory = Replay()\n",
    ).replace("torch.stack(random.sample(memory, 8))", "torch.stack(memory.draw(8))")
    result = convert_source(
        text + "for step in range(100):\n    memory.append(torch.randn(4))\n    optimize_model()\n", "dqn.py"
    )
    assert any("without a seed (random.sample (line 10))" in note for note in result.notes), result.notes


EARLY_STOP = """\
import torch

torch.manual_seed(1337)
data = torch.linspace(-1, 1, 4000).reshape(1000, 4)
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.05)


def get_batch():
    ix = torch.randint(len(data), (4,))
    x = data[ix]
    return x, x.sum(1, keepdim=True)


def evaluate():
    with torch.no_grad():
        x, y = get_batch()
        return torch.nn.functional.mse_loss(model(x), y).item()


best, patience = float("inf"), 0
for it in range(300):
    x, y = get_batch()
    loss = torch.nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if it % 5 == 0 and it > 0:
        DECIDE
        if patience >= 2:
            break
"""


def test_an_early_stopping_counter_decided_by_an_evaluation_is_refused():
    """A nanoGPT-style trainer with patience: each process draws its own evaluation batches (the
    conversion seeds them per process), counts its own patience and stops at its own iteration; the
    other hung (2 gloo processes: 'Connection closed by peer' in accelerator.backward)."""
    decide = "val = evaluate()\n        if val < best:\n            best = val\n            patience = 0\n        else:\n            patience += 1"
    result = convert_source(EARLY_STOP.replace("DECIDE", decide), "train.py")
    assert result.refused is not None
    assert "ends on `patience >= 2`, computed by `val = evaluate()` (line 29)" in result.refused


def test_a_counter_decided_by_the_iteration_still_converts():
    decide = "if it % 50 == 0:\n            patience += 1"
    result = convert_source(EARLY_STOP.replace("DECIDE", decide), "train.py")
    assert result.refused is None, result.refused


WHOLE_EVAL = """\
import torch
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Dropout(0.1), torch.nn.Linear(8, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
train_loader = DataLoader(TensorDataset(torch.randn(64, 4), torch.randn(64, 1)), batch_size=8, shuffle=True)
valid_loader = DataLoader(TensorDataset(torch.randn(32, 4), torch.randn(32, 1)), batch_size=8)


def evaluate(model, loader):
    MODE
    total = 0.0
    with torch.no_grad():
        for x, y in loader:
            total += torch.nn.functional.mse_loss(model(x), y).item()
    return total


best, bad_epochs = float("inf"), 0
for epoch in range(20):
    model.train()
    for x, y in train_loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    val_loss = evaluate(model, LOADER)
    if val_loss < best:
        best, bad_epochs = val_loss, 0
    else:
        bad_epochs += 1
        if bad_epochs >= 3:
            break
"""


def test_early_stopping_on_an_evaluation_of_whole_data_converts():
    """Kaggle's patience counter: the synchronized model, in eval mode, on the loader the
    conversion leaves whole gives every process the same loss, so every process stops together."""
    text = WHOLE_EVAL.replace("MODE", "model.eval()").replace("LOADER", "valid_loader")
    result = convert_source(text, "train.py")
    assert result.refused is None, result.refused
    assert any(
        "ends on what evaluate(model, valid_loader) (line 28) returns" in note and "the same on every process" in note
        for note in result.notes
    ), result.notes


def test_an_evaluation_whose_parameter_is_named_like_the_training_loader_converts():
    """``def evaluate(model, loader)`` beside a training ``loader``: the parameter is the loader
    handed in (``valid_loader``), not the prepared one."""
    text = (
        WHOLE_EVAL.replace("train_loader", "loader").replace("MODE", "model.eval()").replace("LOADER", "valid_loader")
    )
    result = convert_source(text, "train.py")
    assert result.refused is None, result.refused


def test_early_stopping_on_an_evaluation_of_the_prepared_training_loader_is_refused():
    """Each process evaluates its own shard: the losses, and the epochs they stop at, differ."""
    text = WHOLE_EVAL.replace("MODE", "model.eval()").replace("LOADER", "train_loader")
    result = convert_source(text, "train.py")
    assert result.refused is not None and "ends on `bad_epochs >= 3`" in result.refused, result.refused


def test_early_stopping_on_an_evaluation_in_train_mode_is_refused():
    """Without model.eval() dropout draws from each process's own generator."""
    text = WHOLE_EVAL.replace("MODE", "pass").replace("LOADER", "valid_loader")
    result = convert_source(text, "train.py")
    assert result.refused is not None and "computed by `val_loss = evaluate(model, valid_loader)`" in result.refused


SHARED_EPOCH = """\
import torch
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Dropout(0.1), torch.nn.Linear(8, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
train_loader = DataLoader(TensorDataset(torch.randn(64, 4), torch.randn(64, 1)), batch_size=8, shuffle=True)
valid_loader = DataLoader(TensorDataset(torch.randn(32, 4), torch.randn(32, 1)), batch_size=8)


def run_epoch(loader, train_mode):
    model.train(train_mode)
    total = 0.0
    torch.set_grad_enabled(train_mode)
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        if train_mode:
            opt.zero_grad()
            loss.backward()
            opt.step()
        total += loss.item()
    torch.set_grad_enabled(True)
    return total


best, bad_epochs = float("inf"), 0
for epoch in range(20):
    train_loss = run_epoch(train_loader, train_mode=True)
    val_loss = run_epoch(EVAL_ARGS)
    if val_loss < best:
        best, bad_epochs = val_loss, 0
    else:
        bad_epochs += 1
        if bad_epochs >= 3:
            break
"""


@pytest.mark.parametrize("args", ["valid_loader, train_mode=False", "valid_loader, False"])
def test_early_stopping_on_a_shared_epoch_function_called_to_evaluate_converts(args):
    """survey19d's NWM runoff LSTM: one run_epoch(loader, train_mode) trains and evaluates;
    called with train_mode=False it puts the model in eval mode (model.train(False)) and skips
    the step under `if train_mode:`, on the validation loader the conversion leaves whole: every
    process computes the same loss and stops at the same epoch. It was refused (the function
    holds a backward, and model.train(train_mode) was not read as eval mode)."""
    result = convert_source(SHARED_EPOCH.replace("EVAL_ARGS", args), "train.py")
    assert result.refused is None, result.refused
    assert "model, opt, train_loader = accelerator.prepare(model, opt, train_loader)" in result.text
    assert any("valid_loader is not iterated by the training loop" in note for note in result.notes), result.notes
    assert any(
        f"ends on what run_epoch({args}) (line 29) returns" in note and "the same on every process" in note
        for note in result.notes
    ), result.notes


@pytest.mark.parametrize(
    "args",
    [
        "train_loader, train_mode=False",  # each process evaluates its own shard
        "valid_loader, train_mode=True",  # trains on it: prepared, each process its own shard
        "valid_loader, train_mode=bool(epoch % 2)",  # not a constant: prepared too
    ],
)
def test_early_stopping_on_a_shared_epoch_function_of_each_processs_shard_gathers_its_sum(args):
    """Each process sums its own shard of a prepared loader, so these were refused; run_epoch()
    returns ``total``, a sum the conversion gathers after its batch loop (every call hands it a
    prepared loader; :mod:`~regcomp_lint.codemod.reduced_sums`, session 22c): every process reads
    the one-process total and stops at the same epoch."""
    result = convert_source(SHARED_EPOCH.replace("EVAL_ARGS", args), "train.py")
    assert result.refused is None, result.refused
    assert "        total += loss.item()\n    total = sum(gather_object([total]))\n" in result.text, result.text


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (("        total += loss.item()\n", "        total = loss.item()\n"), "set anew in the batch loop (line 21)"),
        (("    return total\n", "    return total / x.shape[0]\n"), "divided by `x.shape[0]`"),
    ],
)
def test_early_stopping_on_a_shared_epoch_function_otherwise_is_refused(change, reason):
    text = SHARED_EPOCH.replace("EVAL_ARGS", "train_loader, train_mode=False").replace(*change)
    result = convert_source(text, "train.py")
    assert result.refused is not None and "ends on `bad_epochs >= 3`" in result.refused, result.refused
    assert f"run_epoch() returns total, which is {reason}" in result.refused, result.refused


COUNTER_ATTRIBUTE = """\
import torch


class Trainer:
    def __init__(self, max_steps):
        self.model = torch.nn.Linear(4, 1)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.05)
        self.max_steps = max_steps
        self.global_step = 0
        self.best_eval_loss = float("inf")

    def evaluate(self):
        with torch.no_grad():
            return self.model(torch.ones(2, 4)).sum().item()

    def train(self):
        while self.global_step < self.max_steps:
            loss = self.model(torch.randn(8, 4)).pow(2).mean()
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            self.global_step += 1
            if self.global_step % 10 == 0:
                val_loss = self.evaluate()
                if val_loss < self.best_eval_loss:
                    self.best_eval_loss = val_loss


Trainer(100).train()
"""


def test_a_loop_on_a_step_counter_attribute_converts_beside_an_attribute_an_evaluation_decides():
    """card_ar (survey21b): `while self.global_step < cfg.max_steps:` was read as the names `self`,
    `global_step`, `cfg`, `max_steps`, and `self` matched the target of `self.best_eval_loss =
    val_loss` under `if val_loss < self.best_eval_loss:`: refused as ending on `val_loss =
    self.evaluate()`. The loop ends on a counter every process increments alike."""
    result = convert_source(COUNTER_ATTRIBUTE, "trainer.py")
    assert result.refused is None, result.refused
    assert result.changed


def test_a_loop_on_a_flag_attribute_an_evaluation_decides_is_still_refused():
    text = (
        COUNTER_ATTRIBUTE.replace("while self.global_step < self.max_steps:", "while not self.stop:")
        .replace(
            "self.best_eval_loss = val_loss",
            "self.best_eval_loss = val_loss\n                else:\n                    self.stop = True",
        )
        .replace("self.global_step = 0\n", "self.global_step = 0\n        self.stop = False\n")
    )
    result = convert_source(text, "trainer.py")
    assert result.refused is not None
    assert "ends on `not self.stop`, computed by `val_loss = self.evaluate()`" in result.refused, result.refused


EPOCH_LOSSES = """\
import torch
from torch.utils.data import DataLoader, TensorDataset

model = torch.nn.Linear(8, 4)
optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
train_loader = DataLoader(TensorDataset(torch.randn(64, 8)), batch_size=8, shuffle=True)
losses = []
for epoch in range(12):
    running_loss = 0.0
    for (x,) in train_loader:
        loss = model(x).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        running_loss += loss.item()
    ENDING
"""


def test_early_stopping_on_a_list_of_epoch_training_losses_gathers_the_sum():
    """survey21c siamese_hw: ``losses.append(running_loss / len(train_loader))`` after the batch
    loop, ``break`` when the last three rose. Each process sums its own shard's losses: measured on
    2 gloo processes (seed 3), rank 0 stopped after epoch 9 and rank 1 went on into its next
    backward ('Connection closed by peer'). The list is filled by ``append``, the sum in the nested
    loop; neither was followed. Since reduced_sums.py the sum is gathered across processes after
    the batch loop (tests/codemod/test_reduced_sums.py); a tensor sum still is refused."""
    ending = (
        "losses.append(running_loss / len(train_loader))\n"
        "    if len(losses) > 3:\n"
        "        if losses[-1] > losses[-2] and losses[-2] > losses[-3]:\n"
        "            break"
    )
    result = convert_source(EPOCH_LOSSES.replace("ENDING", ending), "train.py")
    assert result.refused is None, result.refused
    assert "        running_loss += loss.item()\n    running_loss = sum(gather_object([running_loss]))\n" in result.text
    text = EPOCH_LOSSES.replace("ENDING", ending).replace("loss.item()", "loss.detach()")
    result = convert_source(text, "train.py")
    assert result.refused is not None
    assert "ends on `losses[-1] > losses[-2] and losses[-2] > losses[-3]`" in result.refused, result.refused
    assert "running_loss += loss.detach()` (line 15)" in result.refused, result.refused


def test_a_while_loop_ending_on_a_counter_decided_in_its_batch_loop_is_refused():
    """survey21c moco_pp3: ``while epoch < num_epochs and early_stop_cont < EARLY_STOP_NUM:``,
    the counter reset or raised inside the batch loop on the running training loss."""
    text = (
        EPOCH_LOSSES.replace("for epoch in range(12):", "epoch, bad, best = 0, 0, 1e9\nwhile epoch < 12 and bad < 3:")
        .replace(
            "        running_loss += loss.item()\n",
            "        running_loss += loss.item()\n"
            "        if best > running_loss:\n            best, bad = running_loss, 0\n        else:\n            bad += 1\n",
        )
        .replace("    ENDING\n", "    epoch += 1\n")
    )
    result = convert_source(text, "train.py")
    assert result.refused is not None
    assert "ends on `epoch < 12 and bad < 3`" in result.refused, result.refused


def test_a_list_of_counters_still_converts():
    ending = "losses.append(epoch)\n    if len(losses) > 3 and losses[-1] > 5:\n        break"
    result = convert_source(EPOCH_LOSSES.replace("ENDING", ending), "train.py")
    assert result.refused is None, result.refused


TRAIN_LOSS_STOP = """\
import torch
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Linear(8, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
train_loader = DataLoader(TensorDataset(torch.randn(64, 4), torch.randn(64, 1)), batch_size=8, shuffle=True)
valid_loader = DataLoader(TensorDataset(torch.randn(32, 4), torch.randn(32, 1)), batch_size=8)

best, epochs_no_improve = float("inf"), 0
for epoch in range(20):
    model.train()
    epoch_loss = 0.0
    for x, y in train_loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        epoch_loss += loss.item()
    mean_loss = epoch_loss / len(train_loader)
    improved = mean_loss < best - 1e-5
    if improved:
        best, epochs_no_improve = mean_loss, 0
    else:
        epochs_no_improve += 1
        if epochs_no_improve >= 3:
            break
"""


#: The training-loss stop of TRAIN_LOSS_STOP decided instead by an evaluation written inline.
INLINE_EVAL = TRAIN_LOSS_STOP.replace(
    "    mean_loss = epoch_loss / len(train_loader)\n",
    "    model.eval()\n"
    "    val_loss = 0.0\n"
    "    with torch.no_grad():\n"
    "        for x, y in valid_loader:\n"
    "            val_loss += torch.nn.functional.mse_loss(model(x), y).item()\n"
    "    mean_loss = val_loss / len(valid_loader)\n",
)


def test_early_stopping_on_the_training_loss_summed_in_the_step_loop_gathers_the_sum():
    """A galaxy-diffusion trainer (survey 21e) stops when its mean training loss, summed over the
    batches of the loop that runs the step, stops improving: each process sums its own shard's
    losses, so the processes stop at different epochs (measured: rank 1 stopped at epoch 4, rank 0
    went on and failed in its next backward with gloo's "Connection closed by peer"). Since
    reduced_sums.py the sum is gathered after the batch loop; summed under an ``if`` it is refused."""
    result = convert_source(TRAIN_LOSS_STOP, "train.py")
    assert result.refused is None, result.refused
    assert "    epoch_loss = sum(gather_object([epoch_loss]))\n" in result.text, result.text
    text = TRAIN_LOSS_STOP.replace("        epoch_loss += ", "        if epoch > 0:\n            epoch_loss += ")
    result = convert_source(text, "train.py")
    assert result.refused is not None, "converted"
    assert "ends on `epochs_no_improve >= 3`" in result.refused, result.refused
    assert "epoch_loss += loss.item()" in result.refused, result.refused


def test_early_stopping_on_a_loss_summed_in_an_inline_evaluation_of_whole_data_still_converts():
    """The same sum taken in a loop that does not run the step (an evaluation on the loader the
    conversion leaves whole, the model synchronized) is the same on every process: not followed."""
    text = INLINE_EVAL
    result = convert_source(text, "train.py")
    assert result.refused is None, result.refused


@pytest.mark.parametrize(
    "change",
    [
        ("for x, y in valid_loader:", "for x, y in train_loader:"),  # the prepared loader: its shard
        ("    model.eval()\n    val_loss = 0.0\n", "    val_loss = 0.0\n"),  # train mode: dropout draws
    ],
)
def test_early_stopping_on_an_inline_evaluation_otherwise_is_refused(change):
    text = INLINE_EVAL.replace(*change)
    result = convert_source(text, "train.py")
    assert result.refused is not None and "ends on `epochs_no_improve >= 3`" in result.refused, result.refused


def test_a_save_of_the_best_and_its_read_back_under_an_inline_evaluation_of_whole_data_still_converts():
    """leftalone21a's replica (/work/scratch-leftalone21a/load/val_inline.py): the best model saved
    and loaded back under ``if improved:``, decided by INLINE_EVAL's evaluation written inline, was
    refused ("the read ... would wait for it under `if improved:`") although every process takes
    the branch alike; over the training loader it still is."""
    text = INLINE_EVAL.replace(
        "        best, epochs_no_improve = mean_loss, 0\n",
        "        best, epochs_no_improve = mean_loss, 0\n"
        '        torch.save(model.state_dict(), "best.pt")\n'
        '        model.load_state_dict(torch.load("best.pt"))\n',
    )
    result = convert_source(text, "train.py")
    assert result.refused is None, result.refused
    assert "accelerator.wait_for_everyone()" in result.text, result.text
    result = convert_source(text.replace("for x, y in valid_loader:", "for x, y in train_loader:"), "train.py")
    assert result.refused is not None, "converted"


INLINE_SQRT_EVAL = """\
import math

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
train_loader = DataLoader(TensorDataset(torch.randn(64, 4), torch.randn(64, 1)), batch_size=8, shuffle=True)
val_loader = DataLoader(TensorDataset(torch.randn(32, 4), torch.randn(32, 1)), batch_size=8)
best_rmse, patience = 1e9, 0
for epoch in range(20):
    model.train()
    for x, y in train_loader:
        loss = F.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval(); se = 0.0; n = 0
    with torch.no_grad():
        for x, y in val_loader:
            se += F.mse_loss(model(x), y, reduction="sum").item()
            n += y.numel()
    val_rmse = VALUE
    if val_rmse < best_rmse:
        best_rmse, patience = val_rmse, 0
    else:
        patience += 1
        if patience >= 3:
            break
"""


def test_early_stopping_on_a_math_function_of_a_whole_data_evaluation_converts():
    """survey24b informer_ws: ``val_rmse = math.sqrt(se / n)`` of an inline evaluation over the
    loader the conversion leaves whole. ``math`` computes the same value from the same arguments in
    every process: its call is read through to them (main refused it as computed by a call)."""
    result = convert_source(INLINE_SQRT_EVAL.replace("VALUE", "math.sqrt(se / n)"), "train.py")
    assert result.refused is None, result.refused


def test_a_math_function_of_a_training_loss_still_decides_apart():
    """``math.sqrt(loss.item())``: the argument is the process's own loss."""
    result = convert_source(INLINE_SQRT_EVAL.replace("VALUE", "math.sqrt(loss.item())"), "train.py")
    assert result.refused is not None and "ends on `patience >= 3`" in result.refused, result.refused


STEP_COUNTER_RETURNED = """\
import torch
from torch.utils.data import DataLoader, TensorDataset


def train(global_step, loader, model, optimizer, num_steps):
    model.train()
    losses, last = [], None
    for x, y in loader:
        last = x.cuda()
        loss = torch.nn.functional.mse_loss(model(last), y.cuda())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        if global_step >= num_steps:
            break
        global_step += 1
    return global_step, model, optimizer, RETURNED


def main():
    model = torch.nn.Linear(4, 1).cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    loader = DataLoader(TensorDataset(torch.randn(32, 4), torch.randn(32, 1)), batch_size=4, shuffle=True)
    global_step = 0
    while ENDING:
        global_step, model, optimizer, losses, last = train(global_step, loader, model, optimizer, 20)
        print(sum(losses) / len(losses), last[0])


if __name__ == "__main__":
    main()
"""


def test_a_loop_ending_on_a_step_counter_returned_beside_batch_values_converts():
    """survey 26c's BraTS diffusion trainer: ``global_step, model, optimizer, loss_list, x, y =
    train(...)`` in ``while global_step < args.num_steps``. The step counter rises once per batch of
    the prepared loader, alike on every process; it was refused because train() also returns the
    last batch and the losses, which differ. Only the element the loop ends on is read now."""
    text = STEP_COUNTER_RETURNED.replace("RETURNED", "losses, last").replace("ENDING", "global_step < 20")
    result = convert_source(text, "train.py")
    assert result.refused is None, result.refused
    assert "prepared: model, optimizer, loader" in result.notes, result.notes


def test_a_loop_ending_on_a_batch_value_returned_in_a_tuple_is_still_refused():
    early = "        global_step += 1\n        if loss.item() > 100:\n            return int(loss.item()), model, optimizer, losses, last\n"
    for ending, more in (
        ("last is None or last.sum() > 0", ""),  # the element the loop reads is the batch's
        ("global_step < 20", early),  # another return hands back a loss where the counter stands
    ):
        text = STEP_COUNTER_RETURNED.replace("RETURNED", "losses, last").replace("ENDING", ending)
        text = text.replace("        global_step += 1\n", more or "        global_step += 1\n")
        result = convert_source(text, "train.py")
        assert result.refused is not None, ending
        assert "can differ between processes" in result.refused, result.refused


# YOLOv5's EarlyStopping (survey 26b cspdarknet_cls, from its model_loss.py): an object of the
# script's own class decides the stop from what it is handed, keeping its counters in ``self``.
STOPPER = """\

class EarlyStop:
    def __init__(self, patience=30):
        self.best_fitness = 0.0
        self.best_epoch = 0
        self.patience = patience or float("inf")

    def __call__(self, epoch, fitness):
        if fitness >= self.best_fitness:
            self.best_epoch = epoch
            self.best_fitness = fitness
        delta = epoch - self.best_epoch
        stop = delta >= self.patience
        if stop:
            print(f"stopping at {epoch}")
        return stop


stopper = EarlyStop(patience=3)
for epoch in range(20):
    model.train()
    for x, y in train_loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    fi = -evaluate(model, LOADER)
    if stopper(epoch=epoch, fitness=fi):
        break
"""


def _stopper_script(loader: str) -> str:
    head = WHOLE_EVAL.split("best, bad_epochs")[0].replace("MODE", "model.eval()")
    return head + STOPPER.replace("LOADER", loader)


def test_an_early_stopping_object_fed_an_evaluation_of_whole_data_converts():
    """Its ``__call__`` returns what it computes from its arguments and its own counters, so
    handed the same value on every process it stops every process at the same epoch."""
    result = convert_source(_stopper_script("valid_loader"), "train.py")
    assert result.refused is None, result.refused


def test_an_early_stopping_object_fed_an_evaluation_of_the_prepared_loader_is_refused():
    result = convert_source(_stopper_script("train_loader"), "train.py")
    assert result.refused is not None and "stopper(epoch=epoch, fitness=fi)" in result.refused, result.refused


def test_an_early_stopping_object_that_draws_a_random_number_is_refused():
    text = _stopper_script("valid_loader").replace(
        "stop = delta >= self.patience", "stop = delta >= self.patience or random.random() < 0.1"
    )
    result = convert_source("import random\n" + text, "train.py")
    assert result.refused is not None and "stopper(" in result.refused, result.refused
