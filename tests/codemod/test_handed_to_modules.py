"""The prepared model handed to another local module's function that reads its own attributes
(codemod/handed_to_modules.py)."""

from __future__ import annotations

import pytest

from regcomp_lint.codemod import convert_source

TRAIN = """\
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

from evaluate import evaluate


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.n_classes = 1
        self.fc = nn.Linear(4, 1)

    def forward(self, x):
        return self.fc(x)


model = Net()
ds = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
loader = DataLoader(ds, batch_size=8, shuffle=True)
val_loader = DataLoader(ds, batch_size=8)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for x, y in loader:
        loss = nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print("val", evaluate(model, val_loader))
"""


def _convert(tmp_path, module_py: str, *, script: str = TRAIN, module: str = "evaluate.py"):
    (tmp_path / module).write_text(module_py)
    path = tmp_path / "train.py"
    path.write_text(script)
    result = convert_source(script, str(path))
    assert result.refused is None, result.refused
    return result


def test_an_evaluation_reading_the_models_attribute_gets_the_unwrapped_model(tmp_path):
    """milesial's UNet: evaluate.py reads net.n_classes, which DDP does not pass through."""
    result = _convert(
        tmp_path,
        "import torch\n\n\ndef evaluate(net, loader):\n    net.eval()\n    total = 0.0\n    with torch.no_grad():\n"
        "        for x, y in loader:\n            if net.n_classes == 1:\n                total += net(x).mean().item()\n"
        "    net.train()\n    return total\n",
    )
    assert (
        'print("val", evaluate(accelerator.unwrap_model(model, keep_torch_compile=False), val_loader))' in result.text
    )
    assert any("evaluate() of evaluate.py reads net.n_classes (line 9)" in n for n in result.notes), result.notes


def test_a_function_using_only_the_module_api_gets_the_prepared_model(tmp_path):
    result = _convert(
        tmp_path,
        "def evaluate(net, loader):\n    net.eval()\n    out = [net(x).sum().item() for x, _ in loader]\n    net.train()\n"
        "    return sum(out)\n",
    )
    assert 'print("val", evaluate(model, val_loader))' in result.text


def test_a_function_that_trains_is_named_in_a_note(tmp_path):
    result = _convert(
        tmp_path,
        "def evaluate(net, loader):\n    for x, y in loader:\n        (net(x) * net.n_classes).sum().backward()\n",
    )
    assert 'print("val", evaluate(model, val_loader))' in result.text
    assert any("and trains it" in n and "net.n_classes (line 3)" in n for n in result.notes), result.notes


def test_without_the_modules_file_nothing_is_guessed(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(TRAIN)
    result = convert_source(TRAIN, str(script))
    assert 'print("val", evaluate(model, val_loader))' in result.text


CHECKPOINTED = """\
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

from utils import load_checkpoint, save_checkpoint


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return x + self.fc(x)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([Block() for _ in range(2)])
        self.head = nn.Linear(4, 1)

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return self.head(x)


def main(resume=None):
    model = Net()
    loader = DataLoader(TensorDataset(torch.randn(64, 4), torch.randn(64, 1)), batch_size=8, shuffle=True)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    start = 0
    if resume is not None:
        start = load_checkpoint(model, optimizer, resume)
    for epoch in range(start, 2):
        for x, y in loader:
            loss = nn.functional.mse_loss(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        save_checkpoint(model, optimizer, epoch, "ckpt")


if __name__ == "__main__":
    main()
"""

CHECKPOINT_UTILS = """\
import os

import torch


def save_checkpoint(model, optimizer, step, checkpoint_dir):
    os.makedirs(checkpoint_dir, exist_ok=True)
    state = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": step}
    torch.save(state, os.path.join(checkpoint_dir, f"ckpt_{step}.pt"))


def load_checkpoint(model, optimizer, path):
    checkpoint = torch.load(path, map_location="cpu")
    model.load_state_dict(checkpoint["model"])
    optimizer.load_state_dict(checkpoint["optimizer"])
    return checkpoint["step"] + 1
"""


def _convert_checkpointed(tmp_path, utils_py: str):
    return _convert(tmp_path, utils_py, script=CHECKPOINTED, module="utils.py")


def test_a_checkpoint_function_of_another_module_saves_and_loads_the_unwrapped_model(tmp_path):
    """survey20a gpt_scaler (utils.save_checkpoint / load_checkpoint): handed the compiled model, the
    checkpoint had `_orig_mod.` keys (`blocks.0._orig_mod.fc.weight`), loaded into a plain model
    strictly by no one, and the original's checkpoints no longer loaded for a resume."""
    result = _convert_checkpointed(tmp_path, CHECKPOINT_UTILS)
    unwrapped = "accelerator.unwrap_model(model, keep_torch_compile=False)"
    assert f'save_checkpoint({unwrapped}, optimizer, epoch, "ckpt")' in result.text, result.text
    assert f"start = load_checkpoint({unwrapped}, optimizer, resume)" in result.text, result.text
    assert any(
        "save_checkpoint() of utils.py takes model.state_dict() (line 8)" in n and "_orig_mod." in n
        for n in result.notes
    ), result.notes
    assert any(
        "load_checkpoint() of utils.py" in n and "model.load_state_dict(...) (line 14)" in n for n in result.notes
    )


def test_a_checkpoint_function_that_unwraps_ddp_itself_gets_the_prepared_model(tmp_path):
    """It reads model.module: the unwrapped model has none, so the call is left as it is."""
    utils_py = CHECKPOINT_UTILS.replace('"model": model.state_dict()', '"model": model.module.state_dict()')
    result = _convert_checkpointed(tmp_path, utils_py)
    assert 'save_checkpoint(model, optimizer, epoch, "ckpt")' in result.text, result.text


def test_a_function_that_trains_and_saves_is_named_in_a_note(tmp_path):
    utils_py = CHECKPOINT_UTILS.replace(
        "    os.makedirs(checkpoint_dir, exist_ok=True)\n",
        "    os.makedirs(checkpoint_dir, exist_ok=True)\n    model(torch.ones(1, 4)).sum().backward()\n",
    )
    result = _convert_checkpointed(tmp_path, utils_py)
    assert 'save_checkpoint(model, optimizer, epoch, "ckpt")' in result.text, result.text
    assert any("save_checkpoint() of utils.py" in n and "and trains it" in n for n in result.notes), result.notes


def test_a_checkpoint_function_that_unwraps_ddp_only_when_it_is_there_gets_the_unwrapped_model(tmp_path):
    """lmforge_trainer (survey21b, with a stand-in checkpoint module): `raw = model.module if
    hasattr(model, "module") else model`. On one process the prepared model is the compile wrapper
    without DDP, so it found no `module` and saved `_orig_mod.` keys; the resume from that file
    raised in load_state_dict. Handed the unwrapped model: the same LR, weights and clean keys as the
    original, and the resume loads (replica, 8 steps, python and accelerate launch with 2)."""
    utils_py = CHECKPOINT_UTILS.replace(
        '    state = {"model": model.state_dict(),',
        '    raw = model.module if hasattr(model, "module") else model\n    state = {"model": raw.state_dict(),',
    )
    result = _convert_checkpointed(tmp_path, utils_py)
    unwrapped = "accelerator.unwrap_model(model, keep_torch_compile=False)"
    assert f'save_checkpoint({unwrapped}, optimizer, epoch, "ckpt")' in result.text, result.text
    assert any("save_checkpoint() of utils.py takes raw.state_dict() (line 9)" in n for n in result.notes), result.notes


LOSS_TRAIN = (
    TRAIN.replace("from evaluate import evaluate\n", "from losses import compute_loss\n")
    .replace("        loss = nn.functional.mse_loss(model(x), y)\n", "        loss = compute_loss(model, x, y)\n")
    .replace('    print("val", evaluate(model, val_loader))\n', "")
)


def _convert_loss(tmp_path, module_py: str):
    (tmp_path / "losses.py").write_text(module_py)
    path = tmp_path / "train.py"
    path.write_text(LOSS_TRAIN)
    return convert_source(LOSS_TRAIN, str(path))


def test_a_loss_function_reading_the_models_attribute_is_refused(tmp_path):
    """Survey 21f (left alone): a loss helper of another module that reads the model's own
    attribute was handed the unwrapped model: its forward ran outside DDP, so no gradient was
    synced (replica, 2 gloo processes: weight sums 0.275431 and 0.490211; the original 0.490528).
    The prepared model fails there instead ("'DistributedDataParallel' object has no attribute
    'loss_scale'", measured): neither is exact, so it is refused, naming the read and the call."""
    result = _convert_loss(
        tmp_path,
        "import torch.nn.functional as F\n\n\ndef compute_loss(net, x, y):\n"
        "    return F.mse_loss(net(x), y) * net.n_classes\n",
    )
    assert result.refused is not None
    assert "compute_loss() of losses.py reads net.n_classes (line 5)" in result.refused
    assert "line 25" in result.refused and "feeds the loss" in result.refused


def test_a_loss_function_taking_the_state_dict_keeps_the_prepared_model(tmp_path):
    """As D2 (survey 21f) for methods: a function whose result feeds the loss keeps the prepared
    model, whose forward syncs the gradients."""
    result = _convert_loss(
        tmp_path,
        "import torch.nn.functional as F\n\n\ndef compute_loss(net, x, y):\n"
        "    keys = len(net.state_dict())\n    return F.mse_loss(net(x), y) * keys\n",
    )
    assert result.refused is None, result.refused
    assert "loss = compute_loss(model, x, y)\n" in result.text


RESTART_UTILS = """\
import os

import torch


def restart_from_checkpoint(ckp_path, run_variables=None, **kwargs):
    if not os.path.isfile(ckp_path):
        return
    checkpoint = torch.load(ckp_path, map_location="cpu")
    for key, value in kwargs.items():
        if key in checkpoint and value is not None:
            try:
                msg = value.load_state_dict(checkpoint[key], strict=False)
                print(msg)
            except TypeError:
                msg = value.load_state_dict(checkpoint[key])
    if run_variables is not None:
        for var_name in run_variables:
            if var_name in checkpoint:
                run_variables[var_name] = checkpoint[var_name]
"""


def test_a_model_handed_by_keyword_into_kwargs_that_a_loop_loads_gets_the_unwrapped_model(tmp_path):
    """SwAV's (and DINO's) ``restart_from_checkpoint(path, run_variables=..., state_dict=model,
    optimizer=optimizer)`` loads each ``**kwargs`` value with ``load_state_dict(..., strict=False)``:
    handed the prepared model, the clean keys the conversion saves matched none of its
    (``_orig_mod.``/``module.``) and the resume silently trained from fresh weights (survey23a
    replica: resumed epoch loss 4.665 against the original's 1.838)."""
    script = CHECKPOINTED.replace(
        "from utils import load_checkpoint, save_checkpoint", "from utils import restart_from_checkpoint"
    )
    script = script.replace(
        "    start = 0\n    if resume is not None:\n        start = load_checkpoint(model, optimizer, resume)\n",
        '    to_restore = {"epoch": 0}\n    restart_from_checkpoint("ckpt.pth", run_variables=to_restore, state_dict=model, '
        'optimizer=optimizer)\n    start = to_restore["epoch"]\n',
    ).replace(
        '        save_checkpoint(model, optimizer, epoch, "ckpt")\n',
        '        torch.save({"epoch": epoch + 1, "state_dict": model.state_dict()}, "ckpt.pth")\n',
    )
    result = _convert(tmp_path, RESTART_UTILS, script=script, module="utils.py")
    unwrapped = "accelerator.unwrap_model(model, keep_torch_compile=False)"
    assert f"state_dict={unwrapped}, optimizer=optimizer)" in result.text, result.text
    assert any(
        "restart_from_checkpoint() of utils.py calls value.load_state_dict(...) (line 13)" in n for n in result.notes
    ), result.notes


def _restarted(module: str) -> str:
    script = CHECKPOINTED.replace(
        "from utils import load_checkpoint, save_checkpoint", f"from {module} import restart_from_checkpoint"
    )
    return script.replace(
        "    start = 0\n    if resume is not None:\n        start = load_checkpoint(model, optimizer, resume)\n",
        '    to_restore = {"epoch": 0}\n    restart_from_checkpoint("ckpt.pth", run_variables=to_restore, state_dict=model, '
        'optimizer=optimizer)\n    start = to_restore["epoch"]\n',
    ).replace('        save_checkpoint(model, optimizer, epoch, "ckpt")\n', "")


@pytest.mark.parametrize("module", ["src.utils", "utils"])
def test_a_helper_of_an_unread_local_looking_module_handed_the_model_is_named(tmp_path, module):
    """SwAV's ``main_swav.py`` published alone (survey 23a): ``from src.utils import
    restart_from_checkpoint`` with no ``src/`` beside it was taken for a library, so
    ``restart_from_checkpoint(..., state_dict=model)`` got neither the unwrap nor a note, and a
    resume loads nothing (``strict=False`` over the prepared model's keys). ``src`` and ``utils``
    are the project's own by their names: the note names the call."""
    script = _restarted(module)
    path = tmp_path / "train.py"
    path.write_text(script)
    result = convert_source(script, str(path))
    assert result.refused is None, result.refused
    notes = [n for n in result.notes if n.startswith("restart_from_checkpoint() at line ")]
    assert len(notes) == 1, result.notes
    assert f"of {module} (not found beside the script" in notes[0] and "unwrap_model(model" in notes[0], notes


def test_a_helper_of_an_unread_module_of_another_name_is_left_unnamed(tmp_path):
    """Any other name may be an installed library (``torchvision.utils``): nothing is guessed."""
    script = _restarted("ssl_toolkit.checkpoints")
    path = tmp_path / "train.py"
    path.write_text(script)
    result = convert_source(script, str(path))
    assert result.refused is None, result.refused
    assert not any(n.startswith("restart_from_checkpoint() at line ") for n in result.notes), result.notes


EMA_STEPPED = """\
import torch
from model.modules.ema import EMA


def train(loader):
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    ema = EMA(beta=0.995)
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        ema.step_ema(model=model)
"""


def test_a_method_of_an_unread_class_handed_the_model_by_keyword_is_named(tmp_path):
    """iddm_sr published without ``model/`` (convert23): ``ema.step_ema(model=model)`` of ``EMA``
    from ``model.modules.ema``, built inside the training function."""
    path = tmp_path / "train.py"
    path.write_text(EMA_STEPPED)
    result = convert_source(EMA_STEPPED, str(path))
    assert result.refused is None, result.refused
    assert any(
        n.startswith("EMA.step_ema() at line 14, of model.modules.ema (not found beside the script")
        for n in result.notes
    ), result.notes


SAVER_HANDED_DOWN = """\
import torch
from src.io_utils import SaveBestModel


def epoch_loop(model, optimizer, loader, save_best_model):
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        save_best_model(loss.item(), model, optimizer)


if __name__ == "__main__":
    model = torch.nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    data = torch.utils.data.TensorDataset(torch.randn(32, 4), torch.randn(32, 1))
    loader = torch.utils.data.DataLoader(data, batch_size=4)
    epoch_loop(model, optimizer, loader, SaveBestModel("best.pth"))
    saver = SaveBestModel("best.pth")
    epoch_loop(model, optimizer, loader, saver)
"""


def test_a_callable_object_of_an_unread_class_handed_the_model_is_named(tmp_path):
    """LinFlo-Net's U-Net trainer published without ``src/`` (survey25f): ``save_best_model(loss,
    epoch, net, optimizer, ...)``, a ``SaveBestModel`` of ``src.io_utils`` handed down from
    ``__main__``. Its class saves: the note says every process runs it."""
    path = tmp_path / "train.py"
    path.write_text(SAVER_HANDED_DOWN)
    result = convert_source(SAVER_HANDED_DOWN, str(path))
    assert result.refused is None, result.refused
    notes = [n for n in result.notes if n.startswith("SaveBestModel.__call__() at line 11, of src.io_utils (not found")]
    assert len(notes) == 1, result.notes
    assert "unwrap_model(model, keep_torch_compile=False)" in notes[0] and "every process" in notes[0], notes
