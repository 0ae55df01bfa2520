"""A dataset whose ``__getitem__`` draws at random (survey 25c miditok_gpt2's ``EPianoDataset``:
a window at ``torch.randint``, the index ignored) in a script that seeds its generators once.
Converted and launched on 2 processes, both ranks seeded alike, so their loader workers drew the
same windows: a replica trained on identical windows on rank 0 and rank 1 at 14 of 14 steps. The
conversion does not offset the seed (the draws happen in the loader's workers, seeded from the
generator the script seeded before the Accelerator exists); it says so in a note instead."""

from __future__ import annotations

from regcomp_lint.codemod import convert_source

SCRIPT = """\
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset


class Windows(Dataset):
    def __init__(self, data, size):
        self.data, self.size = data, size

    def __len__(self):
        return len(self.data) // self.size

    def __getitem__(self, idx):
        start = torch.randint(0, len(self.data) - self.size, (1,)).item()
        return self.data[start : start + self.size]


def main():
    SEED
    model = nn.Linear(8, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(Windows(torch.randn(400), 8), batch_size=4, num_workers=2)
    for x in loader:
        loss = model(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()


if __name__ == "__main__":
    main()
"""


def _notes(seed: str) -> list[str]:
    result = convert_source(SCRIPT.replace("SEED", seed), "train.py")
    assert result.refused is None, result.refused
    return [n for n in result.notes if "Windows.__getitem__" in n]


def test_a_dataset_drawing_at_random_in_a_seeded_script_is_named():
    notes = _notes("torch.manual_seed(0)")
    assert len(notes) == 1, notes
    assert "torch.randint (line 14)" in notes[0] and "torch.manual_seed(0) (line 19)" in notes[0], notes
    assert "process_index" in notes[0], notes


def test_an_unseeded_script_draws_its_own_in_each_process_and_is_not_named():
    assert _notes("pass") == []


def test_a_generator_of_its_own_seeded_is_no_seed_of_the_draws():
    assert _notes("g = torch.Generator().manual_seed(0)") == []
