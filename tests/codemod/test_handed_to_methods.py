"""The prepared model handed to a method of an object the script builds (an EMA's
``ema.update(model)``) that takes the model's state dict (codemod/handed_to_modules.py).

A hand EMA class (YOLO's ``ModelEMA``, survey 21f) reads ``model.state_dict()`` and indexes the
average's entries by those names. Handed the prepared model, the names start with ``_orig_mod.``
(and ``module.`` under DDP): the conversion raised ``KeyError: '0.weight'`` at the first update,
on one process and on two. Handed ``accelerator.unwrap_model(model, keep_torch_compile=False)``,
the plain module with the very same tensors, it averages what the original averaged.
"""

from __future__ import annotations

from regcomp_lint.codemod import convert_source

EMA_CLASS = """\
import copy
import torch
import torch.nn as nn


class ModelEMA:
    def __init__(self, model, decay=0.9):
        self.ema = copy.deepcopy(model).eval()
        self.decay = decay

    @torch.no_grad()
    def update(self, model):
        msd = model.state_dict()
        for k, v in self.ema.state_dict().items():
            if v.dtype.is_floating_point:
                v.mul_(self.decay).add_(msd[k].detach(), alpha=1 - self.decay)
"""

MAIN = """

def main():
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    ema = ModelEMA(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    data = torch.utils.data.TensorDataset(torch.randn(32, 4), torch.randn(32, 1))
    loader = torch.utils.data.DataLoader(data, batch_size=4)
    for x, y in loader:
        loss = ((model(x) - y) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        ema.update(model)
    torch.save({"model": model.state_dict(), "ema": ema.ema.state_dict()}, "ck.pt")


if __name__ == "__main__":
    main()
"""

UNWRAPPED = "ema.update(accelerator.unwrap_model(model, keep_torch_compile=False))"


def _convert(tmp_path, script: str):
    path = tmp_path / "train.py"
    path.write_text(script)
    result = convert_source(script, str(path))
    assert result.refused is None, result.refused
    return result


def test_a_method_of_the_scripts_own_class_taking_the_state_dict_gets_the_unwrapped_model(tmp_path):
    result = _convert(tmp_path, EMA_CLASS + MAIN)
    assert UNWRAPPED in result.text
    assert any("ModelEMA.update() of train.py takes model.state_dict() (line 13)" in n for n in result.notes)


def test_a_method_of_a_class_imported_from_a_local_module_gets_the_unwrapped_model(tmp_path):
    (tmp_path / "utils.py").write_text(EMA_CLASS)
    script = "import torch\nimport torch.nn as nn\n\nfrom utils import ModelEMA\n" + MAIN
    result = _convert(tmp_path, script)
    assert UNWRAPPED in result.text
    assert any("ModelEMA.update() of utils.py takes model.state_dict()" in n for n in result.notes)


def test_a_method_that_reads_only_the_parameters_keeps_the_prepared_model(tmp_path):
    """``zip(ema.parameters(), model.parameters())``: the same order through the wrappers."""
    script = (
        EMA_CLASS.replace(
            "        msd = model.state_dict()\n        for k, v in self.ema.state_dict().items():\n"
            "            if v.dtype.is_floating_point:\n"
            "                v.mul_(self.decay).add_(msd[k].detach(), alpha=1 - self.decay)\n",
            "        for e, p in zip(self.ema.parameters(), model.parameters()):\n"
            "            e.mul_(self.decay).add_(p.detach(), alpha=1 - self.decay)\n",
        )
        + MAIN
    )
    result = _convert(tmp_path, script)
    assert "        ema.update(model)\n" in result.text


def test_a_method_handing_the_model_to_a_static_method_of_its_class_gets_the_unwrapped_model(tmp_path):
    """IDDM's ``EMA.step_ema(ema_model, model)`` copies the weights in its own static
    ``reset_parameters(ema_model, model)``: ``ema_model.load_state_dict(model.state_dict())``,
    which failed on the prepared model's keys (survey 22c)."""
    script = (
        EMA_CLASS.replace(
            "    @torch.no_grad()\n    def update(self, model):\n        msd = model.state_dict()\n",
            "    def update(self, model):\n        self.reset(self.ema, model)\n\n"
            "    @staticmethod\n    def reset(ema_model, model):\n        ema_model.load_state_dict(model.state_dict())\n\n"
            "    def unused(self, model):\n        msd = {}\n",
        )
        + MAIN
    )
    result = _convert(tmp_path, script)
    assert UNWRAPPED in result.text
    assert any("ModelEMA.update() of train.py takes model.state_dict() (line 16)" in n for n in result.notes), (
        result.notes
    )


def test_a_method_handing_the_model_to_its_own_method_that_reads_the_parameters_keeps_the_prepared_model(tmp_path):
    script = (
        EMA_CLASS.replace(
            "    @torch.no_grad()\n    def update(self, model):\n        msd = model.state_dict()\n",
            "    def update(self, model):\n        self.average(model)\n\n"
            "    def average(self, current):\n        for e, p in zip(self.ema.parameters(), current.parameters()):\n"
            "            e.data.mul_(self.decay)\n\n"
            "    def unused(self, model):\n        msd = {}\n",
        )
        + MAIN
    )
    result = _convert(tmp_path, script)
    assert "        ema.update(model)\n" in result.text


SAVER_CLASS = """\
import torch
import torch.nn as nn


class SaveBestModel:
    def __init__(self, path, best=float("inf")):
        self.path = path
        self.best = best

    def __call__(self, loss, epoch, model, optimizer):
        if loss < self.best:
            self.best = loss
            torch.save({"epoch": epoch, "model_state_dict": model.state_dict()}, self.path)
"""

SAVER_LOOP = """

def run(model, optimizer, loader, epochs, saver):
    for epoch in range(epochs):
        for x, y in loader:
            loss = ((model(x) - y) ** 2).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            saver(loss.item(), epoch, model, optimizer)


def train(model, optimizer, loader, epochs, save_best_model):
    run(model, optimizer, loader, epochs, save_best_model)


if __name__ == "__main__":
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    data = torch.utils.data.TensorDataset(torch.randn(32, 4), torch.randn(32, 1))
    loader = torch.utils.data.DataLoader(data, batch_size=4)
    save_best_model = SaveBestModel("best.pth")
    train(model, opt, loader, 2, save_best_model)
"""


def test_a_callable_object_taking_the_state_dict_gets_the_unwrapped_model(tmp_path):
    """debuggercafe's ``save_best_model(valid_loss, epoch, model, optimizer, criterion)``: an
    instance whose ``__call__`` saves ``model.state_dict()`` (survey25f: LinFlo-Net's U-Net
    trainer hands it down two functions). Handed the prepared model it saved ``_orig_mod.`` keys."""
    result = _convert(tmp_path, SAVER_CLASS + SAVER_LOOP)
    assert (
        "saver(loss.item(), epoch, accelerator.unwrap_model(model, keep_torch_compile=False), optimizer)" in result.text
    )
    assert any("SaveBestModel.__call__() of train.py" in n for n in result.notes)


def _top_level_loop(built: str, after_epoch: str) -> str:
    """A module-level loop that builds ``built`` and runs ``after_epoch`` after each epoch."""
    return f"""
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
data = torch.utils.data.TensorDataset(torch.randn(32, 4), torch.randn(32, 1))
loader = torch.utils.data.DataLoader(data, batch_size=4)
{built}
for epoch in range(2):
    for x, y in loader:
        loss = ((model(x) - y) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
{after_epoch}"""


def test_a_callable_object_at_the_top_level_loop_gets_the_unwrapped_model(tmp_path):
    loop = _top_level_loop(
        'save_best_model = SaveBestModel("best.pth")', "    save_best_model(loss.item(), epoch, model, opt)\n"
    )
    result = _convert(tmp_path, SAVER_CLASS + loop)
    assert (
        "save_best_model(loss.item(), epoch, accelerator.unwrap_model(model, keep_torch_compile=False), opt)"
        in result.text
    )


EARLY_STOPPING = """\
import numpy as np
import torch
import torch.nn as nn


class EarlyStopping:
    def __init__(self, patience=7, path="checkpoint.pt"):
        self.patience = patience
        self.counter = 0
        self.best_score = None
        self.early_stop = False
        self.val_loss_min = np.inf
        self.path = path

    def __call__(self, val_loss, model):
        score = -val_loss
        if self.best_score is None or score > self.best_score:
            self.best_score = score
            self.save_checkpoint(val_loss, model)
            self.counter = 0
        else:
            self.counter += 1
            if self.counter >= self.patience:
                self.early_stop = True

    def save_checkpoint(self, val_loss, model):
        torch.save(model.state_dict(), self.path)
        self.val_loss_min = val_loss
"""


def test_an_early_stopping_object_saving_through_its_own_method_gets_the_unwrapped_model(tmp_path):
    """Bjarten's early-stopping-pytorch ``early_stopping(valid_loss, model)``: ``__call__`` hands
    the model to its own ``save_checkpoint``, which saves ``model.state_dict()``."""
    script = EARLY_STOPPING + _top_level_loop(
        "early_stopping = EarlyStopping(patience=2)",
        "    early_stopping(loss.item(), model)\n    if early_stopping.early_stop:\n        break\n",
    )
    result = _convert(tmp_path, script)
    assert "early_stopping(loss.item(), accelerator.unwrap_model(model, keep_torch_compile=False))" in result.text
    assert "if early_stopping.early_stop:" in result.text
