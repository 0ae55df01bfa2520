"""A script whose training loop runs in a trainer it imports from its own project is refused with
the trainer's method and file named (minGPT's chargpt.py, improved-diffusion's image_train.py),
never answered like a file with nothing to convert."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from regcomp_lint.cli.commands import fix_main
from regcomp_lint.codemod import convert_source
from regcomp_lint.codemod.options import NO_TRAINING_STEP

SCRIPT = """\
import torch
from mingpt.model import GPT
from mingpt.trainer import Trainer

model = GPT(GPT.get_default_config())
trainer = Trainer(Trainer.get_default_config(), model, torch.utils.data.TensorDataset(torch.zeros(4, 8)))
trainer.register_callback("on_batch_end", print)
trainer.run()
torch.save(model.state_dict(), "model.pt")
"""

TRAINER = """\
import torch


class Trainer:
    def __init__(self, config, model, train_dataset):
        self.model = model
        self.train_dataset = train_dataset

    def register_callback(self, onevent, callback):
        self.callback = callback

    def run(self):
        model = self.model
        optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
        loader = torch.utils.data.DataLoader(self.train_dataset, batch_size=2)
        for (x,) in loader:
            loss = model(x).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
"""

#: The step in a method ``run()`` calls; the optimizer is built from ``self.model`` there.
STEP_TRAINER = """\
import torch


class Trainer:
    def __init__(self, config, model, train_dataset):
        self.model = model
        self.train_dataset = train_dataset

    def run(self):
        optimizer = torch.optim.AdamW(self.model.parameters(), lr=3e-4)
        for (x,) in torch.utils.data.DataLoader(self.train_dataset, batch_size=2):
            self._step(x, optimizer)

    def _step(self, x, optimizer):
        loss = self.model(x).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
"""


def _project(tmp_path: Path, trainer: str = TRAINER) -> Path:
    (tmp_path / "mingpt").mkdir()
    (tmp_path / "mingpt" / "__init__.py").write_text("")
    (tmp_path / "mingpt" / "trainer.py").write_text(trainer)
    script = tmp_path / "projects" / "chargpt" / "chargpt.py"
    script.parent.mkdir(parents=True)
    script.write_text(SCRIPT)
    return script


def test_a_readable_trainer_is_named_with_its_backward_and_its_own_conversion(tmp_path):
    script = _project(tmp_path)
    result = convert_source(SCRIPT, str(script))
    assert not result.changed
    trainer = str(tmp_path / "mingpt" / "trainer.py")
    assert result.refused == (
        f"{script}: not converted: no X.backward() in this script: the training loop runs in "
        "mingpt.trainer.Trainer.run(), which it imports and runs at line 8 "
        f"({trainer}, line 12; X.backward() at line 19); "
        f"regcomp-fix converts that file on its own: run regcomp-fix {trainer}"
    )


def test_a_backward_in_a_method_the_trainer_calls_and_the_trainer_converted_on_its_own(tmp_path):
    """The trainer keeps the handed-in model as self.model in __init__ and builds its optimizer
    in run(): until the trainer_models conversion this trainer was refused too ("the model
    self.model (built in __init__() at line 6) is not created in run()"); now regcomp-fix converts
    it on its own (Accelerator in __init__, prepare() in run()), and the script points there."""
    script = _project(tmp_path, STEP_TRAINER)
    result = convert_source(SCRIPT, str(script))
    assert result.refused is not None
    trainer = tmp_path / "mingpt" / "trainer.py"
    assert f"Trainer.run(), which it imports and runs at line 8 ({trainer}, line 9; X.backward() at line 17)" in (
        result.refused
    )
    assert result.refused.endswith(f"regcomp-fix converts that file on its own: run regcomp-fix {trainer}")
    converted = convert_source(STEP_TRAINER, str(trainer))
    assert converted.refused is None, converted.refused
    assert "        self.model, optimizer = self.accelerator.prepare(self.model, optimizer)\n" in converted.text


def test_a_readable_class_that_trains_nothing_is_not_a_training_script(tmp_path):
    script = _project(tmp_path, "class Trainer:\n    def run(self):\n        return None\n")
    result = convert_source(SCRIPT, str(script))
    assert result.refused == f"{script}: not converted: {NO_TRAINING_STEP}"


def test_an_unreadable_trainer_handed_the_model_is_named_by_the_method_run_last(tmp_path):
    result = convert_source(SCRIPT, str(tmp_path / "chargpt.py"))
    assert result.refused == (
        f"{tmp_path / 'chargpt.py'}: not converted: no X.backward() in this script: the training loop runs in "
        "mingpt.trainer.Trainer.run(), which it imports and runs at line 8 (handing it model); "
        "mingpt/trainer.py is not found next to the script or in a folder above it: convert that module where "
        "it is (regcomp-fix <path to it>), or convert by hand"
    )


def test_a_chained_trainer_call_in_main_with_keyword_arguments(tmp_path):
    text = textwrap.dedent(
        """\
        from improved_diffusion.script_util import create_model_and_diffusion
        from improved_diffusion.train_util import TrainLoop


        def main():
            model, diffusion = create_model_and_diffusion()
            model.to("cpu")
            TrainLoop(model=model, diffusion=diffusion, lr=1e-4).run_loop()
        """
    )
    result = convert_source(text, str(tmp_path / "image_train.py"))
    assert result.refused is not None
    assert "improved_diffusion.train_util.TrainLoop.run_loop(), which it imports and runs at line 8" in result.refused
    assert "(handing it model)" in result.refused


@pytest.mark.parametrize(
    "text",
    [
        # a library's trainer: not the project's file to convert
        "from transformers import Trainer\nmodel.to('cpu')\nTrainer(model=model).train()\n",
        # nothing used as a model is handed over
        "from myapp.server import App\nApp(port=8000).run()\n",
        # the standard library
        "import threading\nmodel.to('cpu')\nthreading.Thread(target=model).start()\n",
    ],
)
def test_other_files_without_a_training_step_stay_quiet(tmp_path, text):
    result = convert_source(text, str(tmp_path / "run.py"))
    assert result.refused == f"{tmp_path / 'run.py'}: not converted: {NO_TRAINING_STEP}"


def test_the_command_exits_3_for_a_delegated_loop(tmp_path):
    script = _project(tmp_path)
    result = CliRunner().invoke(fix_main, [str(script)], catch_exceptions=False, prog_name="regcomp-fix")
    assert result.exit_code == 3
    assert "the training loop runs in mingpt.trainer.Trainer.run()" in result.output
    assert script.read_text() == SCRIPT


def test_a_training_function_of_another_module_is_named_and_the_advice_is_not_circular(tmp_path):
    """Chinese-Text-Classification-Pytorch: run.py builds the model and calls train_eval.train(),
    which builds the optimizer; train_eval.py alone is refused as a function another module drives."""
    (tmp_path / "train_eval.py").write_text(
        "import torch\n\n\ndef train(config, model, train_iter):\n"
        "    optimizer = torch.optim.Adam(model.parameters(), lr=config.lr)\n"
        "    for x, y in train_iter:\n        loss = _loss(model, x, y)\n        loss.backward()\n"
        "        optimizer.step()\n\n\ndef _loss(model, x, y):\n    return (model(x) - y).pow(2).mean()\n"
    )
    run = "import torch\nfrom train_eval import train\n\nmodel = torch.nn.Linear(4, 1)\ntrain(config, model, data)\n"
    result = convert_source(run, str(tmp_path / "run.py"))
    assert result.refused is not None
    assert "the training loop runs in train_eval.train(), which it imports and runs at line 5" in result.refused
    assert "X.backward() at line 8" in result.refused
    assert "neither file converts on its own; convert by hand" in result.refused


def test_a_training_function_and_a_trainer_brought_by_a_star_import_are_named(tmp_path):
    """``from train_eval import *`` (and ``from mingpt.trainer import *``) bring the function or
    the trainer whose loop trains: refused naming it, not answered as a file with nothing to convert."""
    (tmp_path / "train_eval.py").write_text(
        "import torch\n\n\ndef train(config, model, train_iter):\n"
        "    optimizer = torch.optim.Adam(model.parameters(), lr=config.lr)\n"
        "    for x, y in train_iter:\n        loss = (model(x) - y).pow(2).mean()\n        loss.backward()\n"
        "        optimizer.step()\n"
    )
    run = "import torch\nfrom train_eval import *\n\nmodel = torch.nn.Linear(4, 1)\ntrain(config, model, data)\n"
    result = convert_source(run, str(tmp_path / "run.py"))
    assert result.refused is not None
    assert "the training loop runs in train_eval.train(), which it imports and runs at line 5" in result.refused
    # a name the script defines itself is its own, not the star import's
    own = run.replace("model = ", "def train(config, model, data):\n    pass\n\n\nmodel = ")
    assert (
        convert_source(own, str(tmp_path / "run.py")).refused
        == f"{tmp_path / 'run.py'}: not converted: {NO_TRAINING_STEP}"
    )
    script = _project(tmp_path)
    star = SCRIPT.replace("from mingpt.trainer import Trainer", "from mingpt.trainer import *")
    result = convert_source(star, str(script))
    assert result.refused is not None
    assert (
        "the training loop runs in mingpt.trainer.Trainer.run(), which it imports and runs at line 8" in result.refused
    )


def test_a_ddp_script_whose_loop_runs_in_an_engine_module_names_that_loop(tmp_path):
    """torchvision's detection train.py wraps the model in DDP and calls engine.train_one_epoch():
    the refusal named neither until it looked for the loop."""
    (tmp_path / "engine.py").write_text(
        "def train_one_epoch(model, optimizer, data_loader):\n    for images, targets in data_loader:\n"
        "        losses = sum(model(images, targets).values())\n        optimizer.zero_grad()\n"
        "        losses.backward()\n        optimizer.step()\n"
    )
    train = (
        "import torch\nfrom engine import train_one_epoch\n\n"
        "model = torch.nn.Linear(4, 1)\nmodel = torch.nn.parallel.DistributedDataParallel(model)\n"
        "optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\nfor epoch in range(3):\n"
        "    train_one_epoch(model, optimizer, loader)\n"
    )
    result = convert_source(train, str(tmp_path / "train.py"))
    assert result.refused is not None
    assert "the training loop runs in engine.train_one_epoch(), which it imports and runs at line 8" in result.refused


ENGINE = """\
from functools import partial

from utils import EMA, step_loss_backward


def train(accelerator, model, optimizer, train_dl, epochs):
    model, optimizer, train_dl = accelerator.prepare(model, optimizer, train_dl)
    ema_net = EMA(model, beta=0.999)
    for ep in range(epochs):
        model.train()
        for x, y in train_dl:
            loss = (model(x) - y).pow(2).mean()
            step = partial(step_loss_backward, optim=optimizer, network=model, loss=loss, accelerator=accelerator)
            step()
            ema_net.update()
        ema_net.eval()
"""


def test_an_unreadable_backward_step_is_named_not_the_ema_helper_handed_the_model(tmp_path):
    """survey 15 (a pansharpening Accelerate engine): the refusal named `utils.EMA.eval()` as the
    training loop; the backward runs in `step_loss_backward`, wrapped in `partial` at line 13."""
    result = convert_source(ENGINE, str(tmp_path / "engine.py"))
    assert result.refused is not None
    assert (
        "the training loop runs in utils.step_loss_backward(), which it imports and runs at line 13" in result.refused
    )
    assert "EMA" not in result.refused


LAUNCHER = """\
import torch
from model import GPT, GPTConfig
from model_utils.train_loop import train_loop
from model_utils.training_utils import get_cosine_schedule_with_warmup


def main():
    model = GPT(GPTConfig()).to("cuda")
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    scheduler = get_cosine_schedule_with_warmup(optimizer=optimizer, num_warmup_steps=10, num_training_steps=100)
    scaler = torch.amp.GradScaler(device="cuda")
    model = torch.compile(model=model, backend="aot_eager")
    train_loop(num_epochs=3, model=model, optimizer=optimizer, scheduler=scheduler, scaler=scaler, use_amp=True)


if __name__ == "__main__":
    main()
"""


def test_an_unreadable_training_function_handed_the_model_and_its_optimizer_is_named(tmp_path):
    """The survey's FineWeb GPT launcher: it builds the model, an optimizer of it, a scheduler and
    a scaler and hands them to `train_loop()` of its own `model_utils` (not next to it): it was
    answered "no training step found ... converts training scripts only", as a file with nothing
    to do."""
    result = convert_source(LAUNCHER, str(tmp_path / "train.py"))
    assert result.refused == (
        f"{tmp_path / 'train.py'}: not converted: no X.backward() in this script: the training loop runs in "
        "model_utils.train_loop.train_loop(), which it imports and runs at line 13 (handing it model); "
        "model_utils/train_loop.py is not found next to the script or in a folder above it: convert that module "
        "where it is (regcomp-fix <path to it>), or convert by hand"
    )


def test_an_unreadable_function_handed_the_model_alone_stays_quiet(tmp_path):
    """Handed a model but no optimizer built here (an export, a plot): not taken for the loop."""
    text = LAUNCHER.replace(
        "    train_loop(num_epochs=3, model=model, optimizer=optimizer, scheduler=scheduler, scaler=scaler, use_amp=True)",
        "    train_loop(model=model, path='model.onnx')",
    )
    result = convert_source(text, str(tmp_path / "train.py"))
    assert result.refused == f"{tmp_path / 'train.py'}: not converted: {NO_TRAINING_STEP}"


MAE_MAIN = """\
import torch

import util.misc as misc
from util.misc import NativeScalerWithGradNormCount as NativeScaler
from engine_pretrain import train_one_epoch


def main(args):
    model = torch.nn.Linear(4, 4)
    model.to(args.device)
    model_without_ddp = model
    model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[args.gpu])
    model_without_ddp = model.module
    optimizer = torch.optim.AdamW(model_without_ddp.parameters(), lr=args.lr)
    loss_scaler = NativeScaler()
    misc.load_model(args=args, model_without_ddp=model_without_ddp, optimizer=optimizer, loss_scaler=loss_scaler)
    for epoch in range(args.epochs):
        train_one_epoch(model, loader, optimizer, args.device, epoch, loss_scaler, args=args)
        misc.save_model(args=args, model=model, model_without_ddp=model_without_ddp, optimizer=optimizer,
                        loss_scaler=loss_scaler, epoch=epoch)
"""

MAE_ENGINE = """\
import torch


def train_one_epoch(model, data_loader, optimizer, device, epoch, loss_scaler, args=None):
    for samples, _ in data_loader:
        loss, _, _ = model(samples.to(device), mask_ratio=args.mask_ratio)
        loss_scaler(loss, optimizer, parameters=model.parameters())
        optimizer.zero_grad()
"""


def test_a_checkpoint_helper_handed_the_model_and_optimizer_is_not_named_the_training_loop(tmp_path):
    """MAE's main_pretrain.py beside engine_pretrain.py but not util/misc.py (survey23a): the refusal
    said "the training loop runs in util.misc.save_model()"; the backward runs in the loss scaler
    engine_pretrain.train_one_epoch() calls. A save or load helper is never taken for the loop."""
    (tmp_path / "engine_pretrain.py").write_text(MAE_ENGINE)
    result = convert_source(MAE_MAIN, str(tmp_path / "main_pretrain.py"))
    assert result.refused is not None
    assert "save_model" not in result.refused and "load_model" not in result.refused, result.refused
    assert "DistributedDataParallel at line 12" in result.refused, result.refused
