"""codemod/even_batches.py: a prepared training loader whose epoch changes size on several
processes (accelerate's even_batches pads the last batches with samples from the start; with
``drop_last=True`` the full batches that do not make a round are dropped) is named in a note."""

from __future__ import annotations

from regcomp_lint.codemod import convert_source

SCRIPT = """\
import torch
from torch.utils.data import DataLoader, TensorDataset


def main():
    data = TensorDataset(torch.randn({n}, 4), torch.randn({n}, 1))
    loader = DataLoader({dataset}, batch_size=8, shuffle=True{extra})
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(3):
        for x, y in loader:
            loss = torch.nn.functional.mse_loss(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()


if __name__ == "__main__":
    main()
"""


def _notes(n: int = 60, dataset: str = "data", extra: str = "") -> list[str]:
    result = convert_source(SCRIPT.format(n=n, dataset=dataset, extra=extra), "train.py")
    assert result.refused is None, result.refused
    return [note for note in result.notes if "even_batches" in note or "drop_last" in note]


def test_a_known_size_that_two_processes_pad_is_named_with_the_figures():
    """survey 20a poster_sam: 60 samples, batch 8: 64 per epoch on 2 processes (measured)."""
    (note,) = _notes(60)
    assert "64 samples, not 60" in note and "loader" in note, note


def test_a_known_size_that_fills_every_round_gets_no_note():
    assert _notes(64) == []


def test_an_unknown_size_is_named_in_general():
    (note,) = _notes(dataset="make_dataset()")
    assert "multiple of N × 8" in note, note


def test_drop_last_drops_the_batches_that_do_not_make_a_round():
    (note,) = _notes(56, extra=", drop_last=True")  # 7 full batches: 6 on 2 processes
    assert "6 batches of 8, not 7" in note, note
    assert _notes(64, extra=", drop_last=True") == []


def test_tensors_bound_together_and_randint_labels_are_read():
    body = "    xs, ys = torch.randn(60, 4), torch.randint(0, 2, (60,)).float()[:, None]\n"
    script = SCRIPT.format(n=60, dataset="TensorDataset(xs, ys)", extra="").replace(
        "    data = TensorDataset(torch.randn(60, 4), torch.randn(60, 1))\n", body
    )
    result = convert_source(script, "train.py")
    notes = [note for note in result.notes if "even_batches" in note]
    assert len(notes) == 1 and "N × 8" in notes[0], notes  # .float()[...] is not read: the general note
    script = script.replace("torch.randint(0, 2, (60,)).float()[:, None]", "torch.randint(0, 2, (60, 1))")
    notes = [note for note in convert_source(script, "train.py").notes if "even_batches" in note]
    assert len(notes) == 1 and "64 samples, not 60" in notes[0], notes


DDP_LOADER = """\
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
{sampler_import}

def main():
    dist.init_process_group("gloo")
    model = DDP(torch.nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    ds = TensorDataset(torch.randn(16, 4), torch.randn(16, 1))
    loader = DataLoader(ds, batch_size=4{sampler})
    for epoch in range(2):
        for x, y in loader:
            loss = torch.nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
    dist.destroy_process_group()


main()
"""


def test_a_ddp_script_s_unsharded_loader_prepared_says_each_rank_read_it_whole():
    # survey26f ddpm_avgmodel: 8 steps per rank an epoch in the original, 4 converted on 2 processes
    result = convert_source(DDP_LOADER.format(sampler_import="", sampler=""), "train.py")
    assert result.refused is None, result.refused
    assert "loader, opt" in result.text or "prepare(model, opt, loader)" in result.text, result.text
    notes = [n for n in result.notes if "every process iterated all of its batches" in n]
    assert len(notes) == 1 and notes[0].startswith("loader: "), result.notes


def test_a_loader_its_distributed_sampler_shards_gets_no_such_note():
    result = convert_source(
        DDP_LOADER.format(
            sampler_import="from torch.utils.data.distributed import DistributedSampler",
            sampler=", sampler=DistributedSampler(ds)",
        ),
        "train.py",
    )
    assert result.refused is None, result.refused
    assert not [n for n in result.notes if "every process iterated all" in n], result.notes


def test_a_one_process_script_gets_no_such_note():
    script = DDP_LOADER.format(sampler_import="", sampler="").replace(
        "DDP(torch.nn.Linear(4, 1))", "torch.nn.Linear(4, 1)"
    )
    result = convert_source(script.replace('    dist.init_process_group("gloo")\n', ""), "train.py")
    assert result.refused is None, result.refused
    assert not [n for n in result.notes if "every process iterated all" in n], result.notes
