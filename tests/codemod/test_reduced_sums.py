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
