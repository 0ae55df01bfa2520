"""An in-place (re)initialisation of the prepared model's parameters that runs after prepare()
(ABSA-PyTorch's ``run()`` calls ``self._reset_params()`` in its repeat loop, after building the
optimizer; a training function's ``model.apply(weights_init)`` inside its epoch loop): DDP
broadcasts process 0's weights once, when prepare() wraps the model, so values drawn after it
differ between processes for the whole run. The conversion copies process 0's values to every
process right after such a call (``accelerate.utils.broadcast``), with a note naming it."""

from regcomp_lint.codemod import convert_source

TRAINER = """\
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 2)

    def forward(self, x):
        return self.fc(x)


class Instructor:
    def __init__(self):
        self.model = Net()
        x = torch.randn(64, 8)
        self.train_dataloader = DataLoader(TensorDataset(x, (x.sum(1) > 0).long()), batch_size=8, shuffle=True)

    def _reset_params(self):
        for p in self.model.parameters():
            if p.requires_grad:
                if len(p.shape) > 1:
                    torch.nn.init.xavier_uniform_(p)
                else:
                    stdv = 1.0 / (p.shape[0] ** 0.5)
                    torch.nn.init.uniform_(p, a=-stdv, b=stdv)

    def _train(self, criterion, optimizer):
        for epoch in range(2):
            for x, y in self.train_dataloader:
                self.model.train()
                optimizer.zero_grad()
                loss = criterion(self.model(x), y)
                loss.backward()
                optimizer.step()

    def run(self, repeats=1):
        criterion = nn.CrossEntropyLoss()
        _params = filter(lambda p: p.requires_grad, self.model.parameters())
        optimizer = torch.optim.Adam(_params, lr=0.01)
        for i in range(repeats):
            self._reset_params()
            self._train(criterion, optimizer)


if __name__ == "__main__":
    Instructor().run(2)
"""

PLAIN = """\
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def weights_init(m):
    if isinstance(m, nn.Linear):
        nn.init.xavier_uniform_(m.weight)
        nn.init.zeros_(m.bias)


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

SYNC_SELF = (
    "            self._reset_params()\n"
    "            if self.accelerator.distributed_type not in (DistributedType.FSDP, DistributedType.DEEPSPEED):\n"
    "                for param in self.accelerator.unwrap_model(self.model, keep_torch_compile=False).parameters():\n"
    "                    param.data.copy_(broadcast(param.data))\n"
)


def test_trainer_reset_in_the_repeat_loop_is_synced_from_process_0():
    result = convert_source(TRAINER, "train.py")
    assert result.refused is None, result.refused
    text = result.text
    assert "self.accelerator.prepare(" in text
    assert text.index("self.accelerator.prepare(") < text.index("self._reset_params()\n")
    assert SYNC_SELF in text, text
    assert "from accelerate import Accelerator, DistributedType\n" in text, text
    assert "from accelerate.utils import TorchDynamoPlugin, broadcast\n" in text, text
    assert any("self._reset_params() (line 44)" in note and "process 0" in note for note in result.notes), result.notes


def test_plain_apply_in_the_run_loop_is_synced_from_process_0():
    result = convert_source(PLAIN, "train.py")
    assert result.refused is None, result.refused
    text = result.text
    assert (
        "        model.apply(weights_init)\n"
        "        if accelerator.distributed_type not in (DistributedType.FSDP, DistributedType.DEEPSPEED):\n"
        "            for param in accelerator.unwrap_model(model, keep_torch_compile=False).parameters():\n"
        "                param.data.copy_(broadcast(param.data))\n"
        "        for xb, yb in loader:\n"
    ) in text, text
    assert any("model.apply(weights_init) (line 18)" in note for note in result.notes), result.notes


def test_a_helper_that_reinitialises_the_model_it_is_handed_after_the_optimizer():
    script = PLAIN.replace("        model.apply(weights_init)\n", "        init_params(model)\n").replace(
        "def train():",
        "def init_params(net):\n    for p in net.parameters():\n        nn.init.uniform_(p, -0.1, 0.1)\n\n\ndef train():",
    )
    result = convert_source(script, "train.py")
    assert result.refused is None, result.refused
    assert (
        "        init_params(model)\n"
        "        if accelerator.distributed_type not in (DistributedType.FSDP, DistributedType.DEEPSPEED):\n"
        "            for param in accelerator.unwrap_model(model, keep_torch_compile=False).parameters():\n"
        "                param.data.copy_(broadcast(param.data))\n"
    ) in result.text, result.text


def test_once_before_the_loop_prepare_moves_past_a_helper_instead():
    script = PLAIN.replace(
        "    for run in range(2):\n        model.apply(weights_init)\n", "    init_params(model)\n    if True:\n"
    ).replace(
        "def train():",
        "def init_params(net):\n    for p in net.parameters():\n        nn.init.uniform_(p, -0.1, 0.1)\n\n\ndef train():",
    )
    result = convert_source(script, "train.py")
    assert result.refused is None, result.refused
    assert "broadcast" not in result.text, result.text
    assert result.text.index("init_params(model)\n    dynamo_plugin") > 0, result.text


def test_what_does_not_write_the_parameters_gets_no_sync():
    result = convert_source(PLAIN.replace("        model.apply(weights_init)\n", "        model.train()\n"), "train.py")
    assert result.refused is None, result.refused
    assert "broadcast" not in result.text
    harmless = PLAIN.replace("nn.init.xavier_uniform_(m.weight)\n        nn.init.zeros_(m.bias)", "print(m)")
    result = convert_source(harmless, "train.py")
    assert "broadcast" not in result.text, result.text


def test_a_random_reinit_each_step_is_synced_too():
    script = PLAIN.replace("        model.apply(weights_init)\n", "").replace(
        "            optimizer.step()\n", "            optimizer.step()\n            model.apply(weights_init)\n"
    )
    result = convert_source(script, "train.py")
    assert result.refused is None, result.refused
    assert "            model.apply(weights_init)\n            if accelerator.distributed_type not in" in result.text, (
        result.text
    )


def test_constant_writes_and_copies_get_no_sync():
    """``zeros_`` / ``constant_`` and an EMA-style ``copy_`` of what every process holds write the
    same values on every process."""
    constant = PLAIN.replace("nn.init.xavier_uniform_(m.weight)", "nn.init.constant_(m.weight, 0.1)")
    assert "broadcast" not in convert_source(constant, "train.py").text
    copy = PLAIN.replace(
        "nn.init.xavier_uniform_(m.weight)\n        nn.init.zeros_(m.bias)", "m.weight.data.copy_(m.weight.data * 0.5)"
    )
    assert "broadcast" not in convert_source(copy, "train.py").text
    drawn = PLAIN.replace(
        "nn.init.xavier_uniform_(m.weight)\n        nn.init.zeros_(m.bias)",
        "m.weight.data.copy_(torch.randn_like(m.weight) * 0.02)",
    )
    assert "param.data.copy_(broadcast(param.data))" in convert_source(drawn, "train.py").text


def test_a_name_broadcast_of_the_script_is_refused():
    script = PLAIN.replace("def train():", "def broadcast(x):\n    return x\n\n\ndef train():")
    refused = convert_source(script, "train.py").refused
    assert refused is not None and "'broadcast'" in refused, refused
