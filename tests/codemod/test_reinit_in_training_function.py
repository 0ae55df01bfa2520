"""A re-initialisation inside the training function the prepare scope calls (``fit(model, ...)``
whose first line is ``model.apply(init)``, a trainer's ``_train()`` calling ``self._reset_params()``):
the draw runs after prepare(), and a copy after ``fit()`` returns would come after its training,
so process 0's values are copied inside it, right after the draw, with the function's own names
for the model and the accelerator."""

from regcomp_lint.codemod import convert_source

SCRIPT = """\
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def init(m):
    if isinstance(m, nn.Linear):
        nn.init.xavier_uniform_(m.weight)


def fit(net, loader, optimizer):
    net.apply(init)
    for xb, yb in loader:
        loss = nn.functional.cross_entropy(net(xb), yb)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def main():
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
    x = torch.randn(64, 8)
    loader = DataLoader(TensorDataset(x, (x.sum(1) > 0).long()), batch_size=8, shuffle=True)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for run in range(2):
        fit(model, loader, optimizer)


if __name__ == "__main__":
    main()
"""


def test_the_draw_in_the_training_function_is_synced_there():
    result = convert_source(SCRIPT, "train.py")
    assert result.refused is None, result.refused
    text = result.text
    assert (
        "def fit(net, loader, optimizer, accelerator):\n"
        "    net.apply(init)\n"
        "    if accelerator.distributed_type not in (DistributedType.FSDP, DistributedType.DEEPSPEED):\n"
        "        for param in accelerator.unwrap_model(net, keep_torch_compile=False).parameters():\n"
        "            param.data.copy_(broadcast(param.data))\n"
        "    for xb, yb in loader:\n"
    ) in text, text
    assert text.count("broadcast(param.data)") == 1, text
    assert any("net.apply(init) (line 12)" in note for note in result.notes), result.notes


def test_a_helper_the_training_function_calls_is_synced_there_too():
    script = SCRIPT.replace("    net.apply(init)\n", "    reset(net)\n").replace(
        "def fit(", "def reset(m):\n    m.apply(init)\n\n\ndef fit("
    )
    result = convert_source(script, "train.py")
    assert result.refused is None, result.refused
    assert (
        "    reset(net)\n"
        "    if accelerator.distributed_type not in (DistributedType.FSDP, DistributedType.DEEPSPEED):\n"
        "        for param in accelerator.unwrap_model(net, keep_torch_compile=False).parameters():\n"
    ) in result.text, result.text
    assert result.text.count("broadcast(param.data)") == 1, result.text


def test_a_training_function_without_a_draw_gets_nothing():
    assert "broadcast" not in convert_source(SCRIPT.replace("    net.apply(init)\n", ""), "train.py").text


TRAINER = """\
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class Instructor:
    def __init__(self):
        self.model = nn.Linear(8, 2)
        x = torch.randn(64, 8)
        self.loader = DataLoader(TensorDataset(x, (x.sum(1) > 0).long()), batch_size=8, shuffle=True)

    def _reset_params(self):
        for p in self.model.parameters():
            nn.init.uniform_(p, -0.1, 0.1)

    def _train(self, optimizer):
        self._reset_params()
        for x, y in self.loader:
            optimizer.zero_grad()
            loss = nn.functional.cross_entropy(self.model(x), y)
            loss.backward()
            optimizer.step()

    def run(self):
        optimizer = torch.optim.Adam(self.model.parameters(), lr=0.01)
        for i in range(2):
            self._train(optimizer)


if __name__ == "__main__":
    Instructor().run()
"""


def test_a_trainer_method_that_resets_then_trains():
    result = convert_source(TRAINER, "train.py")
    assert result.refused is None, result.refused
    assert (
        "        self._reset_params()\n"
        "        if self.accelerator.distributed_type not in (DistributedType.FSDP, DistributedType.DEEPSPEED):\n"
        "            for param in self.accelerator.unwrap_model(self.model, keep_torch_compile=False).parameters():\n"
        "                param.data.copy_(broadcast(param.data))\n"
        "        for x, y in self.loader:\n"
    ) in result.text, result.text


def _rebinding(returned: str) -> str:
    """``net = reset(net)``: a helper that re-initialises the model it is handed and returns
    ``returned`` (session 19 left this alone: the sync followed only a call made as a statement;
    replica on 2 processes, final parameter sums -3.143364 on rank 0, -9.472526 on rank 1)."""
    return SCRIPT.replace("    net.apply(init)\n", "    net = reset(net)\n").replace(
        "def fit(", f"def reset(m):\n    m.apply(init)\n    return {returned}\n\n\ndef fit("
    )


def test_a_helper_that_returns_the_model_it_reinitialised_is_synced_after_the_rebinding():
    result = convert_source(_rebinding("m"), "train.py")
    assert result.refused is None, result.refused
    assert (
        "    net = reset(net)\n"
        "    if accelerator.distributed_type not in (DistributedType.FSDP, DistributedType.DEEPSPEED):\n"
        "        for param in accelerator.unwrap_model(net, keep_torch_compile=False).parameters():\n"
        "            param.data.copy_(broadcast(param.data))\n"
        "    for xb, yb in loader:\n"
    ) in result.text, result.text
    assert any("net = reset(net) (line 17)" in note for note in result.notes), result.notes


def test_a_helper_that_reinitialises_and_returns_something_else_is_refused_naming_the_line():
    result = convert_source(_rebinding("copy.deepcopy(m)"), "train.py")
    assert result.refused is not None, result.text
    assert "net = reset(net) (line 17)" in result.refused, result.refused
