"""prepare() comes after the model's own set-up calls that follow the optimizer (airbench's
``model.reset()`` / ``model.init_whiten(batch)``): DDP copies process 0's weights only when it
wraps the model, so weights drawn after that differ between processes."""

from regcomp_lint.codemod import convert_source

SCRIPT = """\
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 1)

    def reset(self):
        self.fc.reset_parameters()

    def forward(self, x):
        return self.fc(x)


model = Net()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
print(model)
model.reset()
for step in range(5):
    loss = model(torch.randn(2, 4)).sum()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
"""


def test_prepare_follows_a_reset_of_the_model_after_the_optimizer():
    result = convert_source(SCRIPT, "train.py")
    assert result.refused is None, result.refused
    assert "model.reset()\ndynamo_plugin = " in result.text
    assert "model, optimizer = accelerator.prepare(model, optimizer)\nfor step" in result.text
    assert any("prepare() follows model.reset() (line 20)" in note for note in result.notes), result.notes


def test_a_submodule_method_counts_too():
    result = convert_source(SCRIPT.replace("model.reset()", "model.fc.reset_parameters()"), "train.py")
    assert "model.fc.reset_parameters()\ndynamo_plugin = " in result.text


def test_train_and_eval_are_not_set_up_calls():
    result = convert_source(SCRIPT.replace("model.reset()", "model.train()"), "train.py")
    assert "optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\ndynamo_plugin" in result.text


def test_refused_when_something_in_between_holds_a_prepared_object():
    refused = convert_source(SCRIPT.replace("print(model)", "optimizers = [optimizer]"), "train.py").refused
    assert refused is not None and "model.reset() at line 20 changes the model" in refused, refused


RESUMED = """\
import copy

import torch
from torch.utils.data import DataLoader, TensorDataset


def load_ckpt(ckpt_path, model, optimizer=None):
    state = torch.load(ckpt_path)
    model.load_state_dict(state["model"])
    if optimizer is not None:
        optimizer.load_state_dict(state["optimizer"])
    return state["start_epoch"]


resume = False
loader = DataLoader(TensorDataset(torch.randn(32, 4), torch.randn(32, 1)), batch_size=8)
model = torch.nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
if resume:
    start_epoch = load_ckpt(ckpt_path="ckpt.pt", model=model, optimizer=optimizer)
else:
    start_epoch = 0
ema_model = copy.deepcopy(model).eval().requires_grad_(False)
for epoch in range(start_epoch, 3):
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
"""


def test_a_checkpoint_load_into_the_plain_objects_before_a_model_copy_is_kept_before_prepare():
    """Survey 22c's IDDM trainer: `if resume: start_epoch = load_ckpt(model=model, optimizer=optimizer)`
    between the optimizer and the EMA deepcopy was refused as if it held the objects to prepare.
    Loading into the plain model and optimizer before prepare() is exact (DDP then broadcasts the
    loaded weights; the optimizer keeps its state), and the copy must see the loaded weights."""
    result = convert_source(RESUMED, "train.py")
    assert result.refused is None, result.refused
    assert (
        "    start_epoch = 0\nema_model = copy.deepcopy(model).eval().requires_grad_(False)\n"
        "model, optimizer, loader = accelerator.prepare(model, optimizer, loader)\nfor epoch"
    ) in result.text, result.text
    assert any("load_ckpt(...) at line 20" in note for note in result.notes), result.notes


def test_a_loaded_statement_without_a_bound_result_needs_no_note():
    text = RESUMED.replace("    start_epoch = load_ckpt(", "    start_epoch = 1\n    load_ckpt(")
    result = convert_source(text, "train.py")
    assert result.refused is None, result.refused
    assert not any("load_ckpt" in note for note in result.notes), result.notes


def test_a_compound_statement_that_keeps_a_prepared_object_is_still_refused():
    text = RESUMED.replace("    start_epoch = 0\n", "    start_epoch = 0\n    optimizers = [optimizer]\n")
    refused = convert_source(text, "train.py").refused
    assert refused is not None and "line 19 already uses them" in refused, refused


def test_a_call_not_named_as_a_load_that_is_handed_the_objects_is_still_refused():
    text = RESUMED.replace("start_epoch = load_ckpt(", "start_epoch = build_trainer(").replace(
        "def load_ckpt(", "def build_trainer("
    )
    refused = convert_source(text, "train.py").refused
    assert refused is not None and "line 19 already uses them" in refused, refused


WRAPPED_FIRST = (
    RESUMED.replace("import copy\n", "import copy\nimport os\n\nimport torch.distributed as dist\n")
    .replace(
        "optimizer = torch.optim.SGD(",
        'distributed = "RANK" in os.environ\nif distributed:\n    dist.init_process_group("gloo")\n'
        "    model = torch.nn.parallel.DistributedDataParallel(model)\noptimizer = torch.optim.SGD(",
    )
    .replace(
        "def load_ckpt(ckpt_path, model, optimizer=None):",
        "def load_ckpt(ckpt_path, model, optimizer=None, is_distributed=False):",
    )
)


def test_a_load_before_prepare_told_whether_the_model_was_wrapped_is_refused_naming_it():
    """IDDM's ``load_ckpt(..., model=model, is_distributed=distributed)`` adds ``module.`` to a
    pretrained checkpoint's keys when told the model is DDP-wrapped; converted, it loads before
    prepare() into the plain module while still told ``distributed``: KeyError on 2 processes."""
    text = WRAPPED_FIRST.replace("optimizer=optimizer)\n", "optimizer=optimizer, is_distributed=distributed)\n")
    refused = convert_source(text, "train.py").refused
    assert refused is not None and "load_ckpt(...) at line 27 is handed model and distributed" in refused, refused
    assert "DistributedDataParallel(...) at line 24" in refused, refused


def test_a_load_before_prepare_not_told_of_the_wrap_converts():
    result = convert_source(WRAPPED_FIRST, "train.py")
    assert result.refused is None, result.refused


def test_a_save_of_the_model_is_no_set_up_call():
    """survey 26e vit_pydantic: ``model.save_pretrained(model_path)  # Save initial model state``
    after ``train_iter = iter(train_loader)``: a save only reads the model, so prepare() follows the
    scheduler and the save goes through ``unwrap_model`` on the main process (it was refused as a
    change of the model after the loader was used)."""
    script = SCRIPT.replace("print(model)\nmodel.reset()", "batches = iter([1])\nmodel.save_pretrained('init')")
    result = convert_source(script, "train.py")
    assert result.refused is None, result.refused
    assert "model, optimizer = accelerator.prepare(model, optimizer)\nbatches = iter([1])" in result.text
    assert ".save_pretrained('init', is_main_process=accelerator.is_main_process)" in result.text
