"""A prepared model some of whose parameters get no gradient gets DDP's find_unused_parameters=True
(codemod/untrained_parameters.py, through frozen_parameters.allow_unused_parameters).

yunjey's image-captioning tutorial: the encoder's backbone output is detached and the optimizer
holds only decoder + encoder.linear + encoder.bn; the converted script failed on two processes at
step 2 ("parameters that were not used in producing loss"). Equivalence fixture
captioning_detached_backbone runs it on two processes."""

from regcomp_lint.codemod import convert_source

SCRIPT = """\
import torch
import torch.nn as nn


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(nn.Linear(8, 8), nn.ReLU())
        self.linear = nn.Linear(8, 4)
        self.bn = nn.BatchNorm1d(4)

    def forward(self, x):
        features = self.backbone(x)
        features = features.detach()
        return self.bn(self.linear(features))


encoder = Encoder()
decoder = nn.Linear(4, 2)
params = list(decoder.parameters()) + list(encoder.linear.parameters()) + list(encoder.bn.parameters())
optimizer = torch.optim.Adam(params, lr=0.01)
for step in range(5):
    loss = decoder(encoder(torch.randn(4, 8))).sum()
    decoder.zero_grad()
    encoder.zero_grad()
    loss.backward()
    optimizer.step()
"""
HANDLER = "kwargs_handlers=[DistributedDataParallelKwargs(find_unused_parameters=True)]"


def test_a_detached_submodule_output_asks_ddp_to_find_unused_parameters():
    result = convert_source(SCRIPT, "train.py")
    assert result.refused is None, result.refused
    assert HANDLER in result.text
    assert "from accelerate.utils import DistributedDataParallelKwargs, TorchDynamoPlugin\n" in result.text
    note = next(n for n in result.notes if "find_unused_parameters" in n)
    assert "encoder's Encoder.forward (line 12) detaches self.backbone's output (features.detach())" in note, note


# the cut hidden in a helper the forward calls: the optimizer says which submodule is left out
HIDDEN = SCRIPT.replace(
    "        features = self.backbone(x)\n        features = features.detach()\n",
    "        features = self.extract(x)\n",
).replace(
    "    def forward(self, x):\n",
    "    @torch.no_grad()\n    def extract(self, x):\n        return self.backbone(x)\n\n    def forward(self, x):\n",
)


def test_an_optimizer_over_some_submodules_of_a_prepared_model_asks_ddp_to_find_unused_parameters():
    result = convert_source(HIDDEN, "train.py")
    assert result.refused is None, result.refused
    assert HANDLER in result.text
    note = next(n for n in result.notes if "find_unused_parameters" in n)
    assert "optimizer (line 24) optimizes encoder.linear, encoder.bn but not encoder.backbone" in note, note


def test_param_groups_over_every_submodule_need_nothing():
    groups = '[{"params": encoder.backbone.parameters(), "lr": 0.001}, {"params": encoder.linear.parameters()}, ' + (
        '{"params": encoder.bn.parameters()}, {"params": decoder.parameters()}]'
    )
    text = HIDDEN.replace(
        "optimizer = torch.optim.Adam(params, lr=0.01)", f"optimizer = torch.optim.Adam({groups}, lr=0.01)"
    )
    result = convert_source(text, "train.py")
    assert result.refused is None, result.refused
    assert "find_unused_parameters" not in result.text


def test_a_library_model_with_only_its_head_optimized_needs_nothing():
    # torchvision's forward feeds every parameter to the loss: the backbone gets gradients, unused
    text = (
        "import torch\nimport torchvision\n\nmodel = torchvision.models.resnet18(num_classes=4)\n"
        "optimizer = torch.optim.SGD(model.fc.parameters(), lr=0.1)\nfor step in range(5):\n"
        "    loss = model(torch.randn(2, 3, 32, 32)).sum()\n    optimizer.zero_grad()\n    loss.backward()\n"
        "    optimizer.step()\n"
    )
    result = convert_source(text, "train.py")
    assert result.refused is None, result.refused
    assert "find_unused_parameters" not in result.text


def test_the_whole_model_in_the_optimizer_and_nothing_detached_needs_nothing():
    text = SCRIPT.replace("        features = features.detach()\n", "").replace(
        "list(encoder.linear.parameters()) + list(encoder.bn.parameters())", "list(encoder.parameters())"
    )
    result = convert_source(text, "train.py")
    assert result.refused is None, result.refused
    assert "find_unused_parameters" not in result.text


def test_the_rest_frozen_before_training_needs_nothing():
    # the transfer-learning tutorial: DDP leaves parameters that do not require grad out
    freeze = "encoder = Encoder()\nfor p in encoder.backbone.parameters():\n    p.requires_grad = False\n"
    result = convert_source(HIDDEN.replace("encoder = Encoder()\n", freeze), "train.py")
    assert result.refused is None, result.refused
    assert "find_unused_parameters" not in result.text


def test_a_submodule_run_under_no_grad_in_the_model_s_forward_counts_with_the_whole_model_in_the_optimizer():
    text = SCRIPT.replace(
        "        features = self.backbone(x)\n        features = features.detach()\n",
        "        with torch.no_grad():\n            features = self.backbone(x)\n",
    ).replace("list(encoder.linear.parameters()) + list(encoder.bn.parameters())", "list(encoder.parameters())")
    result = convert_source(text, "train.py")
    assert result.refused is None, result.refused
    assert HANDLER in result.text
    note = next(n for n in result.notes if "find_unused_parameters" in n)
    assert "Encoder.forward (line 12) runs self.backbone under torch.no_grad()" in note, note


def test_a_detached_submodule_in_a_model_of_another_module_of_the_project(tmp_path):
    model_py, _, train = SCRIPT.partition("\n\nencoder = Encoder()\n")
    (tmp_path / "model.py").write_text(model_py + "\n")
    script = "import torch\nimport torch.nn as nn\nfrom model import Encoder\n\nencoder = Encoder()\n" + train
    script = script.replace(
        "list(encoder.linear.parameters()) + list(encoder.bn.parameters())", "list(encoder.parameters())"
    )
    path = tmp_path / "train.py"
    path.write_text(script)
    result = convert_source(script, str(path))
    assert result.refused is None, result.refused
    assert HANDLER in result.text


def test_a_cut_in_a_sibling_module_names_that_file_as_the_user_would_type_it(tmp_path, monkeypatch):
    # the note named the module by its absolute path, unlike every other path the fixer prints
    project = tmp_path / "project"
    project.mkdir()
    model_source, _, script_rest = SCRIPT.partition("\n\nencoder = Encoder()")
    (project / "model.py").write_text(model_source + "\n")
    script = "import torch\nimport torch.nn as nn\nfrom model import Encoder\n\nencoder = Encoder()" + script_rest
    (project / "train.py").write_text(script)
    monkeypatch.chdir(tmp_path)
    result = convert_source(script, "project/train.py")
    note = next(n for n in result.notes if "find_unused_parameters" in n)
    assert "Encoder.forward (project/model.py, line 12) detaches" in note, note


FROZEN_PART = """\
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.vision_encoder = nn.Linear(8, 4)
        self.head = nn.Linear(6, 2)

    def forward(self, noisy, features):
        return self.head(torch.cat([noisy, features], dim=1))


def train():
    loader = DataLoader(TensorDataset(torch.randn(32, 8), torch.randn(32, 2)), batch_size=4)
    model = Policy()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for epoch in range(2):
        for image, action in loader:
            with torch.no_grad():
                features = model.vision_encoder(image)
            noise = torch.randn_like(action)
            pred = model(action + noise, features)
            loss = nn.functional.mse_loss(pred, noise)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()


if __name__ == "__main__":
    train()
"""


def test_a_submodule_run_under_no_grad_to_feed_the_loss_is_read_through_unwrap_model():
    """LeRobot's PushT diffusion policy: ``model.vision_encoder(obs)`` under ``torch.no_grad()``
    feeds the loss as data, not as a gradient path, so it is not "the loss computed with the
    model's own method" (it was refused so); through DDP it is read from the unwrapped model, and
    its parameters get no gradient in any step, which DDP survives with find_unused_parameters."""
    result = convert_source(FROZEN_PART, "train.py")
    assert result.refused is None, result.refused
    assert "features = accelerator.unwrap_model(model, keep_torch_compile=False).vision_encoder(image)" in result.text
    assert HANDLER in result.text
    assert any("model.vision_encoder(...) (line 23) runs under torch.no_grad()" in n for n in result.notes), (
        result.notes
    )


def test_the_same_call_with_grad_still_refuses_naming_it():
    result = convert_source(
        FROZEN_PART.replace(
            "            with torch.no_grad():\n                features",
            "            if True:\n                features",
        ),
        "train.py",
    )
    assert result.refused is not None and "model.vision_encoder(...) at line 23 computes the loss" in result.refused


GENERATE_AFTER_TRAINING = """\
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class Seq2Seq(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 2)

    def forward(self, x, y):
        return nn.functional.mse_loss(self.fc(x), y)

    def generate(self, x):
        return self.fc(x).argmax(-1)


loader = DataLoader(TensorDataset(torch.randn(32, 8), torch.randn(32, 2)), batch_size=4)
model = Seq2Seq()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
for epoch in range(2):
    for x, y in loader:
        outputs = model(x, y)
        loss = outputs
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()

model = Seq2Seq()
model.load_state_dict(torch.load("model.pt"))
with torch.no_grad():
    outputs = model.generate(torch.randn(1, 8))
    print(outputs)
"""


def test_a_call_under_no_grad_after_the_last_backward_does_not_feed_the_loss():
    """PEFT's AdaLoRA example (survey 22c) ends with ``outputs = model.generate(...)`` under
    ``torch.no_grad()`` after training, on a model it loads again; the name ``outputs`` also holds
    the training forward's result, so the call was taken as one feeding the loss and the
    conversion asked DDP for find_unused_parameters=True, naming line 180. It runs after every
    backward of the script, outside their loop: it cannot feed one."""
    result = convert_source(GENERATE_AFTER_TRAINING, "train.py")
    assert result.refused is None, result.refused
    assert HANDLER not in result.text, result.text
    assert not any("runs under torch.no_grad()" in n for n in result.notes), result.notes


BYOL = """\
import copy

import torch
import torch.nn as nn


class BYOL(nn.Module):
    def __init__(self):
        super().__init__()
        self.online = nn.Linear(8, 4)
        self.predictor = nn.Linear(4, 4)
        self.target = copy.deepcopy(self.online)
        for p in self.target.parameters():
            p.requires_grad = False

    def forward(self, v1, v2):
        p = self.predictor(self.online(v1))
        with torch.no_grad():
            z = self.target(v2)
        return (p - z).pow(2).mean()


model = BYOL()
model = torch.nn.parallel.DistributedDataParallel(model, find_unused_parameters=False)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(5):
    loss = model(torch.randn(4, 8), torch.randn(4, 8))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
"""


def test_a_target_network_frozen_in_init_and_run_under_no_grad_needs_nothing():
    """BYOL's (and MoCo's) momentum encoder: built in ``__init__`` with its parameters'
    ``requires_grad`` set to False, run under no_grad in ``forward``. DDP leaves those parameters
    out, so the script's own ``find_unused_parameters=False`` serves; the conversion was refused
    ("DDP only survives that with find_unused_parameters=True") although the original trained on
    2 gloo processes (survey23a byol_spawn replica, weight sums equal on both ranks)."""
    result = convert_source(BYOL, "train.py")
    assert result.refused is None, result.refused
    assert "find_unused_parameters=True" not in result.text
    zipped = BYOL.replace(
        "        for p in self.target.parameters():\n            p.requires_grad = False\n",
        "        for po, pt in zip(self.online.parameters(), self.target.parameters()):\n"
        "            pt.data.copy_(po.data)\n            pt.requires_grad = False\n",
    )
    assert convert_source(zipped, "train.py").refused is None
    thawed = BYOL.replace("p.requires_grad = False", "p.requires_grad = True")
    assert convert_source(thawed, "train.py").refused is not None  # still cut off the loss: refused as before


# survey26d gpt2_distill: an early-exit GPT runs `self.h[:current_depth]` and one of four heads
# chosen in an if/elif chain; the conversion failed on two processes at its second step
EARLY_EXIT = """\
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.h = nn.ModuleList([nn.Linear(8, 8) for _ in range(4)])
        self.heads = nn.ModuleList([nn.Linear(8, 2) for _ in range(2)])

    def forward(self, x, depth):
        for block in self.h[:depth]:
            x = block(x)
        return self.heads[0](x)


model = Net()
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
for step in range(5):
    loss = model(torch.randn(4, 8), 1 + step % 4).sum()
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
"""

BRANCHED_HEADS = EARLY_EXIT.replace(
    "        for block in self.h[:depth]:\n            x = block(x)\n        return self.heads[0](x)\n",
    "        for block in self.h:\n            x = block(x)\n"
    "        if depth > 2:\n            y = self.heads[1](x)\n        else:\n            y = self.heads[0](x)\n"
    "        return y\n",
)


def test_blocks_run_up_to_a_forward_argument_ask_ddp_to_find_unused_parameters():
    result = convert_source(EARLY_EXIT, "train.py")
    assert result.refused is None, result.refused
    assert HANDLER in result.text
    note = next(n for n in result.notes if "find_unused_parameters" in n)
    assert "model's Net.forward (line 11) runs only self.h[:depth]" in note, note


def test_blocks_of_a_nested_module_list_run_up_to_a_forward_argument_count_too():
    text = EARLY_EXIT.replace("self.h = nn.ModuleList", "self.body = nn.Module()\n        self.body.h = nn.ModuleList")
    text = text.replace("self.h[:depth]", "self.body.h[:depth]")
    result = convert_source(text, "train.py")
    assert result.refused is None, result.refused
    note = next(n for n in result.notes if "find_unused_parameters" in n)
    assert "runs only self.body.h[:depth]" in note, note


def test_one_entry_of_a_module_list_per_branch_asks_ddp_to_find_unused_parameters():
    result = convert_source(BRANCHED_HEADS, "train.py")
    assert result.refused is None, result.refused
    assert HANDLER in result.text
    note = next(n for n in result.notes if "find_unused_parameters" in n)
    assert "calls self.heads[1] only where depth > 2" in note, note


def test_every_block_run_and_a_fixed_head_needs_nothing():
    text = EARLY_EXIT.replace("self.h[:depth]", "self.h").replace(
        "self.heads[0](x)", "self.heads[0](x) + self.heads[1](x)"
    )
    result = convert_source(text, "train.py")
    assert result.refused is None, result.refused
    assert "find_unused_parameters" not in result.text
