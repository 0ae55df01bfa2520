"""The copy of process 0's re-initialised weights is for replicas (DDP, one process, XLA): under
FSDP each process holds a shard of every parameter (FSDP2: a DTensor, which
``torch.distributed.broadcast`` refuses -- "c10d.broadcast_.default does not have a sharding
strategy registered", measured on 2 gloo processes; FSDP1: flat shards that differ by design),
and DeepSpeed's engine holds the weights its optimizer steps. The inserted copy runs only when
``accelerator.distributed_type`` is neither, and the note says what is not made right there."""

from regcomp_lint.codemod import convert_source

PLAIN = """\
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def weights_init(m):
    if isinstance(m, nn.Linear):
        nn.init.xavier_uniform_(m.weight)


def train():
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
    x = torch.randn(64, 8)
    loader = DataLoader(TensorDataset(x, (x.sum(1) > 0).long()), batch_size=8, shuffle=True)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for run in range(2):
        model.apply(weights_init)
        for xb, yb in loader:
            loss = nn.functional.cross_entropy(model(xb), yb)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()


if __name__ == "__main__":
    train()
"""


def test_the_copy_is_skipped_under_fsdp_and_deepspeed():
    result = convert_source(PLAIN, "train.py")
    assert result.refused is None, result.refused
    assert (
        "        model.apply(weights_init)\n"
        "        if accelerator.distributed_type not in (DistributedType.FSDP, DistributedType.DEEPSPEED):\n"
        "            for param in accelerator.unwrap_model(model, keep_torch_compile=False).parameters():\n"
        "                param.data.copy_(broadcast(param.data))\n"
        "        for xb, yb in loader:\n"
    ) in result.text, result.text
    assert "from accelerate import Accelerator, DistributedType\n" in result.text, result.text
    compile(result.text, "train.py", "exec")


def test_the_note_says_what_fsdp_and_deepspeed_do_not_get():
    notes = [n for n in convert_source(PLAIN, "train.py").notes if "model.apply(weights_init) (line 17)" in n]
    assert len(notes) == 1, notes
    assert "FSDP" in notes[0] and "DeepSpeed" in notes[0] and "before prepare()" in notes[0], notes[0]


def test_a_name_distributed_type_of_the_script_is_refused():
    script = PLAIN.replace("def train():", "DistributedType = 'ddp'\n\n\ndef train():")
    refused = convert_source(script, "train.py").refused
    assert refused is not None and "'DistributedType'" in refused, refused


def test_the_scripts_own_import_of_distributed_type_is_used():
    script = PLAIN.replace("import torch\n", "import torch\nfrom accelerate.utils import DistributedType\n", 1)
    result = convert_source(script, "train.py")
    assert result.refused is None, result.refused
    assert "if accelerator.distributed_type not in (DistributedType.FSDP, DistributedType.DEEPSPEED):" in result.text
    assert "from accelerate import Accelerator, DistributedType\n" not in result.text, result.text


def test_a_distributed_type_imported_from_elsewhere_is_refused():
    script = PLAIN.replace("import torch\n", "import torch\nfrom mylib import DistributedType\n", 1)
    refused = convert_source(script, "train.py").refused
    assert refused is not None and "'DistributedType' (line 2)" in refused, refused
