"""codemod/reduced_sums.py: an early stop decided on the epoch's training loss, summed by each
process over its own batches, converts with the sum taken across processes after the batch loop.

survey21c siamese_hw (``losses.append(running_loss / len(train_loader))``, ``break`` when the
last three rose) and survey21e galaxy_diff (``epoch_loss += loss.item()``, patience on
``epoch_loss / len(dataloader)``) were refused since each process would stop at its own epoch.
The one-process script sums over every batch: summed across processes once the batch loop is
over, every process reads that sum and stops at the same epoch. What the conversion cannot sum
exactly (a running mean, a decision inside the batch loop: survey21c moco_pp3) stays refused.
"""

from __future__ import annotations

import pytest

from regcomp_lint.codemod import convert_source

PATIENCE = """\
import torch
from torch.utils.data import DataLoader, TensorDataset
from tqdm import tqdm

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Linear(8, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
train_loader = DataLoader(TensorDataset(torch.randn(64, 4), torch.randn(64, 1)), batch_size=8, shuffle=True)

best, epochs_no_improve = float("inf"), 0
for epoch in range(20):
    model.train()
    epoch_loss = 0.0
    progress_bar = tqdm(train_loader, desc=f"epoch {epoch}")
    for x, y in progress_bar:
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        epoch_loss += loss.item()
        progress_bar.set_postfix(loss=epoch_loss)
    mean_loss = epoch_loss / len(train_loader)
    print(f"epoch {epoch}: {mean_loss:.6f}")
    improved = mean_loss < best - 1e-3
    if improved:
        best, epochs_no_improve = mean_loss, 0
    else:
        epochs_no_improve += 1
        if epochs_no_improve >= 3:
            break
"""

REDUCED = "    epoch_loss = sum(gather_object([epoch_loss]))\n"


def test_a_patience_stop_on_the_summed_training_loss_converts_with_the_sum_reduced():
    """survey21e galaxy_diff's structure (a tqdm bar over the loader, patience with an absolute
    ``min_delta``): the sum is gathered right after the batch loop and the mean divides by every
    process's batches, so the value compared with ``best - 1e-3`` is the one-process mean."""
    result = convert_source(PATIENCE, "train.py")
    assert result.refused is None, result.refused
    text = result.text
    assert "        progress_bar.set_postfix(loss=epoch_loss)\n" + REDUCED + "    mean_loss = " in text, text
    assert "mean_loss = epoch_loss / (len(train_loader) * accelerator.num_processes)\n" in text, text
    assert "from accelerate.utils import TorchDynamoPlugin, gather_object" in text, text
    assert text.index("accelerator = Accelerator(") < text.index(REDUCED)
    compile(text, "train.py", "exec")
    note = next(n for n in result.notes if "gather_object" in n)
    assert "ends on epoch_loss (line 20)" in note and "same epoch" in note, note
    assert "len(train_loader)" in note and "num_processes" in note, note


def test_a_list_of_epoch_means_ending_on_three_rises_converts():
    """survey21c siamese_hw: the mean goes into a list that the stop compares."""
    text = (
        PATIENCE.replace('best, epochs_no_improve = float("inf"), 0\n', "losses = []\n")
        .replace("        progress_bar.set_postfix(loss=epoch_loss)\n", "")
        .split("    mean_loss = ")[0]
        + "    losses.append(epoch_loss / len(train_loader))\n"
        "    if len(losses) > 3:\n"
        "        if losses[-1] > losses[-2] and losses[-2] > losses[-3]:\n"
        "            break\n"
    )
    result = convert_source(text, "train.py")
    assert result.refused is None, result.refused
    assert "        epoch_loss += loss.item()\n" + REDUCED in result.text, result.text
    assert "losses.append(epoch_loss / (len(train_loader) * accelerator.num_processes))" in result.text


def test_a_sample_weighted_sum_and_its_count_are_both_reduced():
    """``loss.item() * x.size(0)`` over ``seen += x.size(0)``: both sums are gathered."""
    text = (
        PATIENCE.replace("    epoch_loss = 0.0\n", "    epoch_loss = 0.0\n    seen = 0\n")
        .replace(
            "        epoch_loss += loss.item()\n",
            "        epoch_loss += loss.item() * x.size(0)\n        seen += len(x)\n",
        )
        .replace("epoch_loss / len(train_loader)", "epoch_loss / seen")
    )
    result = convert_source(text, "train.py")
    assert result.refused is None, result.refused
    assert REDUCED + "    seen = sum(gather_object([seen]))\n" in result.text, result.text
    assert "mean_loss = epoch_loss / seen\n" in result.text


def test_a_mean_over_the_whole_data_set_and_an_in_place_division_convert():
    text = PATIENCE.replace(
        "    mean_loss = epoch_loss / len(train_loader)\n",
        "    epoch_loss /= len(train_loader.dataset)\n    mean_loss = epoch_loss\n",
    )
    result = convert_source(text, "train.py")
    assert result.refused is None, result.refused
    assert REDUCED + "    epoch_loss /= len(train_loader.dataset)\n" in result.text, result.text


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (  # moco_pp3: a running mean, not a sum
            (
                "        epoch_loss += loss.item()\n",
                "        epoch_loss = epoch_loss + (loss.item() - epoch_loss) / 2\n",
            ),
            "set anew in the batch loop (line 20), not summed (`name += <number>`)",
        ),
        (  # moco_pp3: the counter decided inside the batch loop on the running value
            (
                "        progress_bar.set_postfix(loss=epoch_loss)\n",
                "        if epoch_loss > 100:\n            epochs_no_improve += 1\n",
            ),
            "read inside the batch loop at line 21",
        ),
        (
            (
                "        epoch_loss += loss.item()\n",
                "        if loss.item() < 1:\n            epoch_loss += loss.item()\n",
            ),
            "added under `if loss.item() < 1:` (line 20)",
        ),
        (  # the index of the batch loop counts one process's batches
            ("epoch_loss / len(train_loader)", "epoch_loss / (i + 1)"),
            "divided by `(i + 1)` (line 22)",
        ),
        (  # a count of one process's batches, or of every batch: not told
            ("epoch_loss / len(train_loader)", "epoch_loss / n_batches"),
            "divided by n_batches, which is no sum of the batch loop",
        ),
        (
            ("    epoch_loss = 0.0\n", ""),
            "not reset before the batch loop",
        ),
        (  # each process takes its own count of batches
            (
                "        progress_bar.set_postfix(loss=epoch_loss)\n",
                "        if x.shape[0] < 8:\n            break\n",
            ),
            "its batch loop (line 15) can end before the loader does (line 22)",
        ),
        (  # a tensor: no number to gather
            ("        epoch_loss += loss.item()\n", "        epoch_loss += loss.detach()\n"),
            "adds `loss.detach()`, not a number",
        ),
    ],
)
def test_a_value_the_conversion_cannot_sum_exactly_stays_refused_naming_why(change, reason):
    text = PATIENCE.replace(*change)
    if "(i + 1)" in change[1]:
        text = text.replace("    for x, y in progress_bar:\n", "    for i, (x, y) in enumerate(progress_bar):\n")
    result = convert_source(text, "train.py")
    assert result.refused is not None, "converted"
    assert "ends on `epochs_no_improve >= 3`" in result.refused, result.refused
    assert reason in result.refused, result.refused


def test_a_sum_no_stop_reads_is_left_as_it_is():
    """Only what an ending reads is gathered: a printed epoch loss stays each process's own."""
    text = PATIENCE.split("    improved = ")[0]
    result = convert_source(text, "train.py")
    assert result.refused is None, result.refused
    assert "gather_object" not in result.text, result.text


def test_a_save_and_read_back_of_the_best_under_the_gathered_stop_converts_with_a_barrier():
    """The gathered sum is the same on every process for the checks after the ending too: the
    best model saved and loaded back under ``if improved:`` is decided alike, so it converts with
    ``accelerator.wait_for_everyone()`` (without it: refused, "each process decides that branch
    from its own values")."""
    text = PATIENCE.replace(
        "        best, epochs_no_improve = mean_loss, 0\n",
        "        best, epochs_no_improve = mean_loss, 0\n"
        '        torch.save(model.state_dict(), "best.pt")\n'
        '        model.load_state_dict(torch.load("best.pt"))\n',
    )
    result = convert_source(text, "train.py")
    assert result.refused is None, result.refused
    assert "accelerator.wait_for_everyone()" in result.text, result.text


# -- a sum the training function returns, read by its caller's stop (session 22c) -----------------

RETURNED = """\
import torch
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Linear(8, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
train_loader = DataLoader(TensorDataset(torch.randn(64, 4), torch.randn(64, 1)), batch_size=8, shuffle=True)


def train_one_epoch(model, loader, optimizer):
    model.train()
    running = 0.0
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        running += loss.item()
    return running / len(loader)


best, bad = float("inf"), 0
for epoch in range(20):
    train_loss = train_one_epoch(model, train_loader, optimizer)
    print(f"epoch {epoch}: {train_loss:.6f}")
    if train_loss < best - 1e-3:
        best, bad = train_loss, 0
    else:
        bad += 1
        if bad >= 3:
            break
"""

GATHERED_IN_FUNCTION = (
    "        running += loss.item()\n    running = sum(gather_object([running]))\n    return running / "
)


def _with_caller(loop: str, scheduler: bool = False) -> str:
    """RETURNED's function with ``loop`` as its caller (and a ReduceLROnPlateau), converted."""
    text = RETURNED
    if scheduler:
        text = text.replace(
            "optimizer = torch.optim.SGD(model.parameters(), lr=0.05)\n",
            "optimizer = torch.optim.SGD(model.parameters(), lr=0.05)\n"
            "scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, patience=1)\n",
        )
    result = convert_source(text.split("best, bad = ")[0] + loop, "train.py")
    assert result.refused is None, result.refused
    return result.text


def test_a_mean_the_training_function_returns_to_the_callers_stop_is_gathered_inside_the_function():
    """The common ``train_one_epoch(model, loader, optimizer)`` returning ``running / len(loader)``
    to a patience stop in its caller: the sum is gathered right after the function's batch loop,
    and ``len(loader)`` (a parameter every call hands the prepared loader) counts every process."""
    result = convert_source(RETURNED, "train.py")
    assert result.refused is None, result.refused
    text = result.text
    assert GATHERED_IN_FUNCTION in text, text
    assert "return running / (len(loader) * accelerator.num_processes)\n" in text, text
    assert "from accelerate.utils import TorchDynamoPlugin, gather_object" in text, text
    compile(text, "train.py", "exec")
    note = next(n for n in result.notes if "gather_object" in n)
    assert "train_one_epoch() (line 10) returns running (line 18)" in note, note
    assert "len(loader)" in note and "same epoch" in note, note


def test_a_walrus_stop_and_a_plateau_scheduler_on_the_returned_mean_convert():
    """``if (val := train_one_epoch(...)) > best: ... break`` and ``ReduceLROnPlateau.step(val)``."""
    text = _with_caller(
        'best = float("inf")\n'
        "for epoch in range(20):\n"
        "    if (val := train_one_epoch(model, train_loader, optimizer)) > best:\n"
        "        break\n"
        "    best = val\n"
        "    scheduler.step(val)\n",
        scheduler=True,
    )
    assert GATHERED_IN_FUNCTION in text, text


def test_a_returned_sum_and_a_best_save_in_the_caller_convert():
    """``return running`` (no mean) and the best model saved under the caller's test."""
    text = RETURNED.replace("    return running / len(loader)\n", "    return running\n").replace(
        "        best, bad = train_loss, 0\n",
        '        best, bad = train_loss, 0\n        torch.save(model.state_dict(), "best.pt")\n',
    )
    result = convert_source(text, "train.py")
    assert result.refused is None, result.refused
    assert "        running += loss.item()\n    running = sum(gather_object([running]))\n    return running\n" in (
        result.text
    ), result.text
    assert "num_processes" not in result.text, result.text


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (  # the index of the batch loop counts one process's batches
            (
                ("    for x, y in loader:\n", "    for i, (x, y) in enumerate(loader):\n"),
                ("running / len(loader)", "running / (i + 1)"),
            ),
            "train_one_epoch() returns running, which is divided by `(i + 1)` (line 19)",
        ),
        (  # a loader no call hands prepared: each process runs the whole data
            (
                (
                    "train_one_epoch(model, train_loader, optimizer)",
                    "train_one_epoch(model, [(torch.randn(8, 4), torch.randn(8, 1))], optimizer)",
                ),
            ),
            "iterates no loader the conversion prepares",
        ),
        (  # a running mean, not a sum
            (("        running += loss.item()\n", "        running = (running + loss.item()) / 2\n"),),
            "set anew in the batch loop (line 18), not summed",
        ),
    ],
)
def test_a_returned_value_the_conversion_cannot_sum_exactly_stays_refused_naming_why(change, reason):
    text = RETURNED
    for old, new in change:
        assert old in text
        text = text.replace(old, new)
    result = convert_source(text, "train.py")
    assert result.refused is not None, "converted"
    assert "ends on `bad >= 3`" in result.refused, result.refused
    assert reason in result.refused, result.refused


def test_a_plateau_scheduler_stepped_on_the_returned_mean_without_a_stop_gets_the_gathered_mean():
    """``ReduceLROnPlateau.step(train_loss)`` alone: no stop, but each process stepping the scheduler
    on its own mean lowers its own LR (measured on 2 gloo processes: one rank at 0.1, the other at
    0.01 from epoch 9, final weights apart); gathered, every process steps it on the one-process mean."""
    text = _with_caller(
        "for epoch in range(20):\n"
        "    train_loss = train_one_epoch(model, train_loader, optimizer)\n"
        "    scheduler.step(train_loss)\n",
        scheduler=True,
    )
    assert GATHERED_IN_FUNCTION in text, text


def test_a_best_model_save_on_the_returned_mean_without_a_stop_gets_the_gathered_mean():
    """``if train_loss < best: torch.save(...)`` alone: no stop, but the main process decided on
    its own mean which epochs save (measured on 2 gloo processes, 25 epochs: rank 0 saved at 14
    epochs, the mean over both ranks improves at 19, rank 1 at 16 others); gathered, the save
    follows the one-process mean."""
    text = _with_caller(
        'best = float("inf")\n'
        "for epoch in range(20):\n"
        "    train_loss = train_one_epoch(model, train_loader, optimizer)\n"
        "    if train_loss < best:\n"
        "        best = train_loss\n"
        '        torch.save(model.state_dict(), "best.pt")\n'
    )
    assert GATHERED_IN_FUNCTION in text, text


def test_a_best_model_save_on_the_epoch_loop_sum_without_a_stop_gets_the_gathered_sum():
    text = PATIENCE.split("    improved = ")[0] + (
        '    if mean_loss < best:\n        best = mean_loss\n        torch.save(model.state_dict(), "best.pt")\n'
    )
    result = convert_source(text, "train.py")
    assert result.refused is None, result.refused
    assert REDUCED in result.text, result.text


def _gather_note(text: str) -> str:
    result = convert_source(text, "train.py")
    assert result.refused is None, result.refused
    return next(n for n in result.notes if "gather_object" in n)


def test_the_note_says_what_reads_the_gathered_sum():
    """The note names what the gathered value decides: a stop, a ReduceLROnPlateau step, a best-model
    save (survey23d crnn_ocr: the note said the loop "ends on" a sum only its plateau scheduler read)."""
    head = PATIENCE.split("    improved = ")[0]
    stop = _gather_note(PATIENCE)
    assert "ends on epoch_loss (line 20)" in stop and "stops at the same epoch" in stop, stop

    plateau = (
        head.replace(
            "opt = torch.optim.SGD(model.parameters(), lr=0.05)\n",
            "opt = torch.optim.SGD(model.parameters(), lr=0.05)\n"
            "scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, patience=1)\n",
        )
        + "    scheduler.step(mean_loss)\n"
    )
    note = _gather_note(plateau)
    assert "the loop at line 12 reads epoch_loss (line 21)" in note, note
    assert "steps its scheduler on the same value" in note and "stops" not in note, note

    save = (
        head + '    if mean_loss < best:\n        best = mean_loss\n        torch.save(model.state_dict(), "best.pt")\n'
    )
    note = _gather_note(save)
    assert "the loop at line 11 reads epoch_loss (line 20)" in note, note
    assert "saves at the same epochs" in note and "stops" not in note, note


def test_a_save_every_epoch_beside_a_printed_sum_gathers_nothing():
    """A save that no per-process value decides (every epoch) needs no gather."""
    text = PATIENCE.split("    improved = ")[0] + '    torch.save(model.state_dict(), "last.pt")\n'
    result = convert_source(text, "train.py")
    assert result.refused is None, result.refused
    assert "gather_object" not in result.text, result.text


def test_a_running_mean_tested_inside_the_batch_loop_is_refused_naming_the_test():
    """survey21c moco_pp3: ``train_loss_moco = train_loss_moco + (1 / (total_iters+1)) * (...)``
    and, every 10 batches, ``if best_loss > train_loss_moco:`` setting the stop counter. The
    running mean equals sum / count at the epoch's end (replica: to 1e-16), so its form is not
    what rules it out: the counter is decided on each process's partial mean inside the batch
    loop (replica, 2 processes: counters 2 and 10 after 4 epochs, the one-process run 7), which
    no gather after the batch loop can give. The refusal names that test, not the form."""
    text = PATIENCE.replace(
        "        epoch_loss += loss.item()\n", "        epoch_loss = epoch_loss + (loss.item() - epoch_loss) / 2\n"
    ).replace(
        "        progress_bar.set_postfix(loss=epoch_loss)\n",
        "        if epoch_loss > 100:\n            epochs_no_improve += 1\n",
    )
    result = convert_source(text, "train.py")
    assert result.refused is not None, "converted"
    assert "read inside the batch loop at line 21 (`if epoch_loss > 100:`)" in result.refused, result.refused
    assert "set anew" not in result.refused, result.refused
