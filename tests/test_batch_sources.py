"""Hand-written batch sources and per-rank seeding (analysis/batch_sources.py)."""

from __future__ import annotations

import ast
import textwrap

from regcomp_lint.analysis.batch_sources import batch_sources, seed_offsets, seeded_per_rank
from regcomp_lint.analysis.file_context import FileContext
from regcomp_lint.analysis.training_roles import TrainingRoles
from regcomp_lint.files.source import SourceFile
from regcomp_lint.lint.engine import walk

NANOGPT = """\
import numpy as np
import torch
seed_offset = ddp_rank if ddp else 0
torch.manual_seed(1337 + seed_offset)
train_data = np.memmap("train.bin", dtype=np.uint16, mode="r")
def get_batch(split):
    data = train_data if split == "train" else val_data
    ix = torch.randint(len(data) - block_size, (batch_size,))
    x = torch.stack([torch.from_numpy(data[i : i + block_size].astype(np.int64)) for i in ix])
    return x, x
def log(msg):
    print(msg)
model = GPT(config)
optimizer = torch.optim.AdamW(model.parameters())
X, Y = get_batch("train")
for it in range(max_iters):
    logits, loss = model(X, Y)
    X, Y = get_batch("train")
    loss.backward()
    optimizer.step()
    log(loss)
"""


class Script:
    def __init__(self, src: str) -> None:
        src = textwrap.dedent(src)
        self.ctx = FileContext(SourceFile("t.py", src), ast.parse(src))
        self.roles: TrainingRoles = self.ctx.semantic.training_roles
        walk(self.ctx, [])

    def text(self, node: ast.AST) -> str:
        return self.ctx.source.segment(node)


def test_nanogpts_get_batch_is_a_batch_source_and_its_seed_differs_per_rank():
    script = Script(NANOGPT)
    (source,) = batch_sources(script.roles)
    assert source.function.name == "get_batch"
    assert [c.lineno for c in source.calls] == [18]  # the call in the training loop, not the one before it
    assert [script.text(d.func) for d in source.draws] == ["torch.randint"]
    assert [script.text(s) for s in source.slices] == ["data[i : i + block_size]"]
    assert [script.text(c) for c in seeded_per_rank(script.ctx)] == ["torch.manual_seed(1337 + seed_offset)"]


def test_a_fixed_seed_is_the_same_in_every_process():
    script = Script("import torch\nimport random\ntorch.manual_seed(1337)\nrandom.seed(args.seed)\n")
    assert seeded_per_rank(script.ctx) == []


def test_a_script_fed_by_a_data_loader_has_no_batch_source():
    script = Script("""\
        import torch
        from torch.utils.data import DataLoader
        def to_device(batch):
            return [t.cuda() for t in batch]
        model = Net()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for batch in DataLoader(ds):
            x, y = to_device(batch)
            model(x).sum().backward()
            opt.step()
        """)
    assert batch_sources(script.roles) == []


def test_a_sampling_function_called_outside_training_is_no_batch_source():
    script = Script("""\
        import torch
        def sample_eval(data):
            ix = torch.randint(len(data), (8,))
            return data[ix]
        model = Net()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            model(x).sum().backward()
            opt.step()
        for _ in range(3):
            sample_eval(val)
        """)
    assert batch_sources(script.roles) == []


LECTURE = """\
import torch
torch.manual_seed(1337)
np_seeded = None
data = torch.arange(1000)
NOISE
def get_batch():
    ix = torch.randint(len(data) - 8, (4,))
    return torch.stack([data[i : i + 8] for i in ix])
model = Net()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(10):
    x = get_batch()
    x = x + torch.randn_like(x.float())
    model(x).sum().backward()
    opt.step()
"""


def test_seed_offsets_name_the_seed_of_the_drawn_generator():
    script = Script(LECTURE.replace("NOISE\n", ""))
    offsets = seed_offsets(script.roles)
    assert offsets is not None
    assert [script.text(d.func) for d in offsets.draws] == ["torch.randint"]
    assert [script.text(s) for s in offsets.seeds] == ["torch.manual_seed(1337)"]
    assert offsets.values_before == ()  # the noise drawn in the training loop differs per process as it should


def test_values_drawn_at_random_before_training_are_named():
    script = Script(LECTURE.replace("NOISE", "table = torch.randn(1000, 4)"))
    offsets = seed_offsets(script.roles)
    assert offsets is not None
    assert [script.text(v.func) for v in offsets.values_before] == ["torch.randn"]


def test_a_seed_of_another_generator_is_not_one_to_offset():
    script = Script(LECTURE.replace("NOISE\n", "").replace("torch.manual_seed(1337)", "import random\nrandom.seed(0)"))
    offsets = seed_offsets(script.roles)
    assert offsets is not None and offsets.seeds == ()
