"""A module-level script's own Dataset that places its items on the GPU (lucidrains' enwik8
trainers: ``return full_seq.cuda()``) places them on each process's device after conversion."""

from regcomp_lint.codemod import convert_source

SCRIPT = """\
import torch
from torch.utils.data import DataLoader, Dataset


class TextSamplerDataset(Dataset):
    def __init__(self, data, seq_len):
        super().__init__()
        self.data = data
        self.seq_len = seq_len

    def __getitem__(self, index):
        start = torch.randint(0, self.data.size(0) - self.seq_len - 1, (1,))
        full_seq = self.data[start : start + self.seq_len + 1].long()
        return full_seq.cuda()

    def __len__(self):
        return self.data.size(0) // self.seq_len


def cycle(loader):
    while True:
        for data in loader:
            yield data


model = torch.nn.Linear(9, 1).cuda()
data = torch.randint(0, 255, (1000,))
train_dataset = TextSamplerDataset(data, 8)
val_dataset = TextSamplerDataset(data, 8)
train_loader = cycle(DataLoader(train_dataset, batch_size=4, drop_last=True))
val_loader = cycle(DataLoader(val_dataset, batch_size=4, drop_last=True))
optim = torch.optim.Adam(model.parameters(), lr=1e-3)
for i in range(10):
    loss = model(next(train_loader).float()).mean()
    loss.backward()
    optim.step()
    optim.zero_grad()
    if i % 5 == 0:
        with torch.no_grad():
            print(model(next(val_loader).float()).mean().item())
"""


def test_dataset_items_follow_the_accelerator_device():
    """The unprepared validation loader's batches would stay on GPU 0 while rank 1's model is
    on GPU 1 (a crash on two GPUs); the prepared one's would be copied there from GPU 0."""
    result = convert_source(SCRIPT, "train.py")
    assert result.refused is None, result.refused
    assert "        return full_seq.to(accelerator.device)\n" in result.text
    assert ".cuda()" not in result.text


def test_not_when_an_item_is_read_at_module_level_before_training():
    """``sample = train_dataset[0]`` runs at import: the accelerator may not exist yet."""
    text = SCRIPT.replace("train_loader = cycle(", "sample = train_dataset[0]\ntrain_loader = cycle(")
    result = convert_source(text, "train.py")
    assert result.refused is None, result.refused
    assert "        return full_seq.cuda()\n" in result.text


def test_not_when_the_script_trains_in_a_function():
    """There the accelerator is a local of main(): a dataset method cannot see it."""
    body = SCRIPT.split("\n\nmodel = ")[1]
    text = (
        SCRIPT.split("\n\nmodel = ")[0]
        + "\n\ndef main():\n"
        + "".join("    " + line if line else line for line in ("model = " + body).splitlines(keepends=True))
        + "\n\nmain()\n"
    )
    result = convert_source(text, "train.py")
    assert result.refused is None, result.refused
    assert "        return full_seq.cuda()\n" in result.text
