"""codemod/trainer_models.py: a trainer class that binds ``self.model`` in ``__init__`` and builds
its optimizer later (in the training method, or in a ``set_optimizer()``-style method the
training method calls) converts: the Accelerator is made in ``__init__``, ``prepare()`` runs in
the training method right after the optimizer exists. What cannot be mapped is refused, naming
the construct and its line."""

from __future__ import annotations

from regcomp_lint.codemod import ConvertOptions, convert_source

SET_OPTIMIZER = """import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(16, 4)

    def forward(self, x):
        return self.body(x)

    def scores(self, x):
        return self.forward(x).softmax(-1)


class Trainer:
    def __init__(self, args):
        self.args = args
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.model = Net().to(self.device)
        x = torch.randn(256, 16)
        self.train_loader = DataLoader(TensorDataset(x, x.argmax(1) % 4), batch_size=16, shuffle=True)

    def set_optimizer(self):
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=self.args.lr)

    def train(self):
        self.set_optimizer()
        for epoch in range(self.args.epochs):
            for x, y in self.train_loader:
                x, y = x.to(self.device), y.to(self.device)
                loss = F.cross_entropy(self.model(x), y)
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()
        torch.save(self.model.state_dict(), "final.pt")

    def predict(self, x):
        return self.model.scores(x)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--lr", type=float, default=1e-2)
    parser.add_argument("--epochs", type=int, default=3)
    Trainer(parser.parse_args()).train()
"""

IN_TRAIN = SET_OPTIMIZER.replace(
    "        self.set_optimizer()\n",
    "        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=self.args.lr)\n",
)


def convert(text: str):
    return convert_source(text, "train.py", ConvertOptions())


def _converted(text: str) -> str:
    result = convert(text)
    assert result.refused is None, result.refused
    return result.text


def test_the_accelerator_is_made_in_init_and_the_device_follows_it():
    out = _converted(SET_OPTIMIZER)
    init = out.split("    def __init__(self, args):\n", 1)[1].split("    def set_optimizer")[0]
    assert "        self.accelerator = Accelerator(dynamo_plugin=dynamo_plugin)\n" in init
    assert "        self.device = self.accelerator.device\n" in init
    assert init.index("self.accelerator = Accelerator(") < init.index("self.device = self.accelerator.device")
    assert "prepare(" not in init


def test_prepare_runs_right_after_set_optimizer():
    out = _converted(SET_OPTIMIZER)
    assert (
        "        self.set_optimizer()\n"
        "        self.model, self.optimizer, self.train_loader = self.accelerator.prepare(\n"
        "            self.model, self.optimizer, self.train_loader\n"
        "        )\n"
        "        for epoch in range(self.args.epochs):\n"
    ) in out
    # set_optimizer itself is left as it is
    assert "    def set_optimizer(self):\n        self.optimizer = torch.optim.Adam(self.model.parameters()" in out


def test_prepare_runs_right_after_the_optimizer_built_in_the_training_method():
    out = _converted(IN_TRAIN)
    assert (
        "        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=self.args.lr)\n"
        "        self.model, self.optimizer, self.train_loader = self.accelerator.prepare(\n"
    ) in out
    assert "        self.accelerator = Accelerator(dynamo_plugin=dynamo_plugin)\n" in out.split("def set_optimizer")[0]


def test_backward_save_and_custom_methods_go_through_the_accelerator():
    out = _converted(SET_OPTIMIZER)
    assert "                self.accelerator.backward(loss)\n" in out
    assert (
        "        self.accelerator.save(self.accelerator.unwrap_model(self.model, keep_torch_compile=False).state_dict(), "
        '"final.pt")\n'
    ) in out
    assert "        return self.accelerator.unwrap_model(self.model, keep_torch_compile=False).scores(x)\n" in out


def test_notes_say_where_the_accelerator_is_made_and_what_is_prepared():
    result = convert(SET_OPTIMIZER)
    assert result.notes[0].endswith("created in Trainer.__init__()")
    assert "prepared: self.model, self.optimizer, self.train_loader" in result.notes
    assert any("self.set_optimizer() (line 33)" in n and "prepared in train()" in n for n in result.notes)


def test_conversion_is_idempotent():
    once = _converted(SET_OPTIMIZER)
    again = convert(once)
    assert again.text == once


def test_a_compile_in_init_folds_into_the_plugin():
    text = SET_OPTIMIZER.replace(
        "        self.model = Net().to(self.device)\n",
        "        self.model = Net().to(self.device)\n        if args.compile:\n            self.model = torch.compile(self.model)\n",
    ).replace(
        '    parser.add_argument("--epochs", type=int, default=3)\n',
        '    parser.add_argument("--epochs", type=int, default=3)\n    parser.add_argument("--compile", action="store_true")\n',
    )
    out = _converted(text)
    assert "torch.compile" not in out
    assert 'TorchDynamoPlugin(backend="inductor" if args.compile else "no")' in out


def test_a_ddp_wrap_in_init_is_removed():
    text = (
        SET_OPTIMIZER.replace(
            "import torch.nn.functional as F\n",
            "import torch.nn.functional as F\nfrom torch.nn.parallel import DistributedDataParallel as DDP\nimport torch.distributed as dist\nimport os\n",
        )
        .replace(
            "        self.model = Net().to(self.device)\n",
            "        self.model = Net().to(self.device)\n"
            "        if dist.is_initialized():\n"
            "            self.model = DDP(self.model)\n",
        )
        .replace(
            "    Trainer(parser.parse_args()).train()\n",
            '    if "RANK" in os.environ:\n        dist.init_process_group("gloo")\n    Trainer(parser.parse_args()).train()\n',
        )
    )
    out = _converted(text)
    assert "DDP(" not in out
    assert "        self.model, self.optimizer, self.train_loader = self.accelerator.prepare(\n" in out


# -- refusals ---------------------------------------------------------------------------------------------


def _refusal(text: str) -> str:
    result = convert(text)
    assert result.refused is not None, result.text
    assert result.text == text
    return result.refused


def test_a_model_rebound_in_another_method_is_refused():
    text = SET_OPTIMIZER.replace(
        "    def predict(self, x):\n",
        "    def reset(self):\n        self.model = Net()\n\n    def predict(self, x):\n",
    )
    refusal = _refusal(text)
    assert "self.model" in refusal and "reset() at line 44" in refusal, refusal


def test_a_training_method_called_twice_is_refused():
    text = SET_OPTIMIZER.replace(
        "    Trainer(parser.parse_args()).train()\n",
        "    trainer = Trainer(parser.parse_args())\n    trainer.train()\n    trainer.train()\n",
    )
    refusal = _refusal(text)
    assert "train()" in refusal and "lines 52 and 53" in refusal, refusal


def test_a_training_method_called_per_fold_is_refused():
    text = SET_OPTIMIZER.replace(
        "    Trainer(parser.parse_args()).train()\n",
        "    for fold in range(5):\n        Trainer(parser.parse_args()).train()\n",
    )
    refusal = _refusal(text)
    assert "in the loop at line 51" in refusal and "line 52" in refusal, refusal


def test_a_set_optimizer_that_builds_other_things_is_refused():
    text = SET_OPTIMIZER.replace(
        "        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=self.args.lr)\n",
        "        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=self.args.lr)\n"
        "        self.criterion = nn.CrossEntropyLoss()\n",
    )
    refusal = _refusal(text)
    assert "set_optimizer()" in refusal and "self.criterion" in refusal and "line 31" in refusal, refusal


def test_a_model_from_a_base_class_is_refused():
    text = SET_OPTIMIZER.replace("class Trainer:\n", "class Base:\n    pass\n\n\nclass Trainer(Base):\n").replace(
        "        self.model = Net().to(self.device)\n", ""
    )
    refusal = _refusal(text)
    assert "self.model" in refusal and "no method of Trainer" in refusal and "line 25" in refusal, refusal


# -- the training method's own changes to the model --------------------------------------------------------


def test_a_compile_in_the_training_method_folds_into_the_plugin_made_in_init():
    text = IN_TRAIN.replace(
        "        self.optimizer = torch.optim.SGD",
        "        if self.args.compile:\n            self.model = torch.compile(self.model)\n        self.optimizer = torch.optim.SGD",
    )
    out = _converted(text)
    init = out.split("    def __init__(self, args):\n", 1)[1].split("    def set_optimizer")[0]
    assert '        dynamo_plugin = TorchDynamoPlugin(backend="inductor" if self.args.compile else "no")\n' in init
    assert "torch.compile" not in out
    assert "        self.model, self.optimizer, self.train_loader = self.accelerator.prepare(\n" in out


def test_a_move_or_a_ddp_wrap_in_the_training_method_keeps_the_model_of_init():
    moved = IN_TRAIN.replace(
        "        self.optimizer = torch.optim.SGD",
        "        self.model = self.model.to(self.device)\n        self.optimizer = torch.optim.SGD",
    )
    out = _converted(moved)
    assert "        self.device = self.accelerator.device\n" in out
    assert "        self.model = self.model.to(self.device)\n" in out
    assert "        self.model, self.optimizer, self.train_loader = self.accelerator.prepare(\n" in out
    wrapped = IN_TRAIN.replace(
        "        self.optimizer = torch.optim.SGD",
        "        self.model = torch.nn.parallel.DistributedDataParallel(self.model)\n        self.optimizer = torch.optim.SGD",
    )
    out = _converted(wrapped)
    assert "DistributedDataParallel" not in out
    assert "        self.model, self.optimizer, self.train_loader = self.accelerator.prepare(\n" in out


def test_a_model_built_again_in_the_training_method_is_refused():
    """Before: the Accelerator went into train() and prepared the second model, while __init__'s
    device (GPU 0 on every process) and loader stayed as they were."""
    text = IN_TRAIN.replace(
        "        self.optimizer = torch.optim.SGD",
        "        self.model = Net()\n        self.optimizer = torch.optim.SGD",
    )
    refusal = _refusal(text)
    assert "built in Trainer.__init__() (line 25) and again in train() at line 33 (self.model = Net())" in refusal


def test_a_compile_setting_only_the_training_method_knows_is_refused():
    text = IN_TRAIN.replace(
        "        self.optimizer = torch.optim.SGD",
        "        use_compile = self.args.compile\n        if use_compile:\n            self.model = torch.compile(self.model)\n"
        "        self.optimizer = torch.optim.SGD",
    )
    refusal = _refusal(text)
    assert "the compile setting use_compile (line 34) reads use_compile" in refusal, refusal


def test_set_optimizer_called_from_init_prepares_there_and_later_methods_unwrap():
    """The same trainer calling ``self.set_optimizer()`` at the end of ``__init__``: prepared in
    ``__init__`` right after that call (before: refused, "not created in set_optimizer()"), and
    every other method, which runs after ``__init__``, reads the model's own methods unwrapped."""
    text = SET_OPTIMIZER.replace("        self.set_optimizer()\n", "").replace(
        "        self.train_loader = DataLoader(TensorDataset(x, x.argmax(1) % 4), batch_size=16, shuffle=True)\n",
        "        self.train_loader = DataLoader(TensorDataset(x, x.argmax(1) % 4), batch_size=16, shuffle=True)\n"
        "        self.set_optimizer()\n",
    )
    out = _converted(text)
    assert (
        "        self.set_optimizer()\n"
        "        self.model, self.optimizer, self.train_loader = self.accelerator.prepare(\n"
        "            self.model, self.optimizer, self.train_loader\n"
        "        )\n\n    def set_optimizer(self):\n"
    ) in out
    assert "        return self.accelerator.unwrap_model(self.model, keep_torch_compile=False).scores(x)\n" in out


# -- a set_optimizer()-style method that also builds the optimizer's scheduler ----------------------------


def _with_scheduler(built: str) -> str:
    """SET_OPTIMIZER whose set_optimizer() also builds ``built`` (a scheduler on self.optimizer),
    stepped right after the optimizer."""
    return SET_OPTIMIZER.replace(
        "        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=self.args.lr)\n",
        "        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=self.args.lr)\n" + built,
    ).replace(
        "                self.optimizer.step()\n",
        "                self.optimizer.step()\n                self.scheduler.step()\n",
    )


PER_STEP = _with_scheduler(
    "        self.scheduler = torch.optim.lr_scheduler.OneCycleLR(\n"
    "            self.optimizer, max_lr=self.args.lr, total_steps=self.args.epochs * len(self.train_loader)\n"
    "        )\n"
)


def test_a_per_step_scheduler_built_beside_the_optimizer_is_prepared_after_the_call():
    """Before: refused, "builds self.optimizer and also self.scheduler"."""
    result = convert(PER_STEP)
    assert result.refused is None, result.refused
    assert (
        "        self.set_optimizer()\n"
        "        self.model, self.optimizer, self.train_loader, self.scheduler = self.accelerator.prepare(\n"
        "            self.model, self.optimizer, self.train_loader, self.scheduler\n"
        "        )\n"
        "        for epoch in range(self.args.epochs):\n"
    ) in result.text
    # set_optimizer() itself is left as it is
    assert (
        "            self.optimizer, max_lr=self.args.lr, total_steps=self.args.epochs * len(self.train_loader)\n"
        in result.text
    )
    assert "prepared: self.model, self.optimizer, self.train_loader, self.scheduler" in result.notes
    assert any(
        n.startswith(
            "self.optimizer, self.scheduler are built by self.set_optimizer() (line 36): the prepare() of train() runs"
        )
        for n in result.notes
    ), result.notes
    assert convert(result.text).text == result.text


def test_a_transformers_warmup_schedule_built_beside_the_optimizer_is_prepared():
    text = _with_scheduler(
        "        self.scheduler = get_linear_schedule_with_warmup(self.optimizer, 10, 100)\n"
    ).replace("import torch\n", "import torch\nfrom transformers import get_linear_schedule_with_warmup\n", 1)
    out = _converted(text)
    assert "        self.model, self.optimizer, self.train_loader, self.scheduler = self.accelerator.prepare(\n" in out


def test_a_per_epoch_scheduler_built_beside_the_optimizer_stays_unprepared_with_the_note():
    text = SET_OPTIMIZER.replace(
        "        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=self.args.lr)\n",
        "        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=self.args.lr)\n"
        "        self.scheduler = torch.optim.lr_scheduler.StepLR(self.optimizer, step_size=2)\n",
    ).replace(
        "                self.optimizer.step()\n",
        "                self.optimizer.step()\n            self.scheduler.step()\n",
    )
    result = convert(text)
    assert result.refused is None, result.refused
    assert (
        "        self.set_optimizer()\n"
        "        self.model, self.optimizer, self.train_loader = self.accelerator.prepare(\n"
        "            self.model, self.optimizer, self.train_loader\n"
        "        )\n"
    ) in result.text
    assert any(n.startswith("self.scheduler steps once per epoch (line 42)") for n in result.notes), result.notes


def test_a_per_step_scheduler_of_a_loop_without_a_prepared_loader_stays_unprepared():
    """A counted-steps loop (batches made by hand, no DataLoader to prepare): every process takes
    as many steps as the original, so the scheduler is not prepared (the existing rule)."""
    text = (
        PER_STEP.replace(
            "        x = torch.randn(256, 16)\n"
            "        self.train_loader = DataLoader(TensorDataset(x, x.argmax(1) % 4), batch_size=16, shuffle=True)\n",
            "        self.data = torch.randn(256, 16)\n",
        )
        .replace(
            "            for x, y in self.train_loader:\n                x, y = x.to(self.device), y.to(self.device)\n",
            "            for i in range(16):\n                x = self.data[i * 16 : (i + 1) * 16].to(self.device)\n"
            "                y = x.argmax(1) % 4\n",
        )
        .replace("len(self.train_loader)", "16")
    )
    result = convert(text)
    assert result.refused is None, result.refused
    assert "        self.model, self.optimizer = self.accelerator.prepare(self.model, self.optimizer)\n" in result.text
    assert any(n.startswith("self.scheduler steps once per optimizer step, and no DataLoader") for n in result.notes)


def test_a_set_optimizer_that_builds_a_scheduler_and_other_things_is_still_refused():
    text = _with_scheduler(
        "        self.scheduler = torch.optim.lr_scheduler.StepLR(self.optimizer, step_size=2)\n"
        "        self.criterion = nn.CrossEntropyLoss()\n"
    )
    refusal = _refusal(text)
    assert "also self.criterion (line 32)" in refusal and "self.scheduler" not in refusal.split("also")[1], refusal


def test_a_scheduler_of_another_optimizer_is_refused():
    """``set_optimizer()`` builds a scheduler on an optimizer it does not build: not a training
    object of the optimizer prepared after the call."""
    text = _with_scheduler(
        "        self.other = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1)\n"
        "        self.scheduler = torch.optim.lr_scheduler.StepLR(self.other, step_size=2)\n"
    )
    refusal = _refusal(text)
    assert "set_optimizer()" in refusal and "also self.other" in refusal, refusal


# -- a model built by a helper method __init__ calls --------------------------------------------------------

BUILD_HELPER = SET_OPTIMIZER.replace(
    "        self.model = Net().to(self.device)\n", "        self._build_model()\n"
).replace(
    "    def set_optimizer(self):\n",
    "    def _build_model(self):\n        self.model = Net().to(self.device)\n\n    def set_optimizer(self):\n",
)


def test_a_model_built_by_a_helper_init_calls_converts_as_if_init_built_it():
    """Before: refused, "bound in _build_model() at line 30, not in Trainer.__init__()"."""
    result = convert(BUILD_HELPER)
    assert result.refused is None, result.refused
    init = result.text.split("    def __init__(self, args):\n", 1)[1].split("    def _build_model")[0]
    assert init.index("self.accelerator = Accelerator(") < init.index("self._build_model()")
    assert "        self.device = self.accelerator.device\n" in init
    assert "    def _build_model(self):\n        self.model = Net().to(self.device)\n" in result.text
    assert (
        "        self.set_optimizer()\n"
        "        self.model, self.optimizer, self.train_loader = self.accelerator.prepare(\n"
    ) in result.text
    assert (
        "        return self.accelerator.unwrap_model(self.model, keep_torch_compile=False).scores(x)\n" in result.text
    )
    assert convert(result.text).text == result.text


def test_a_compile_in_the_helper_folds_into_the_plugin():
    text = BUILD_HELPER.replace(
        "        self.model = Net().to(self.device)\n\n",
        "        self.model = Net().to(self.device)\n        if self.args.compile:\n"
        "            self.model = torch.compile(self.model)\n\n",
    )
    out = _converted(text)
    assert "torch.compile" not in out
    assert 'TorchDynamoPlugin(backend="inductor" if self.args.compile else "no")' in out
    assert "    def _build_model(self):\n        self.model = Net().to(self.device)\n\n" in out


def test_a_device_chosen_in_the_helper_follows_the_accelerator_made_before_its_call():
    text = BUILD_HELPER.replace(
        '        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n', ""
    ).replace(
        "        self.model = Net().to(self.device)\n\n",
        '        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
        "        self.model = Net().to(self.device)\n\n",
    )
    out = _converted(text)
    init = out.split("    def __init__(self, args):\n", 1)[1].split("    def _build_model")[0]
    assert init.index("self.accelerator = Accelerator(") < init.index("self._build_model()")
    assert "        self.device = self.accelerator.device\n        self.model = Net().to(self.device)\n" in out


def test_a_model_helper_called_twice_is_refused():
    text = BUILD_HELPER.replace(
        "        self._build_model()\n", "        self._build_model()\n        self._build_model()\n"
    )
    refusal = _refusal(text)
    assert (
        "the model self.model, whose optimizer Trainer.train() (line 36) builds, is bound in _build_model() at line 31"
        in refusal
    ), refusal
    assert "called at lines 25 and 26" in refusal, refusal


def test_a_model_helper_called_by_another_method_is_refused():
    text = BUILD_HELPER.replace("        self._build_model()\n", "").replace(
        "        self.set_optimizer()\n", "        self._build_model()\n        self.set_optimizer()\n"
    )
    refusal = _refusal(text)
    assert "is bound in _build_model() at line 29" in refusal and "called in train() (line 35)" in refusal, refusal


def test_a_model_helper_called_in_a_loop_of_init_is_refused():
    text = BUILD_HELPER.replace(
        "        self._build_model()\n", "        for _ in range(2):\n            self._build_model()\n"
    )
    refusal = _refusal(text)
    assert "in the loop at line 25" in refusal, refusal


def test_a_model_helper_two_levels_down_is_refused():
    text = BUILD_HELPER.replace("        self._build_model()\n", "        self._setup()\n").replace(
        "    def _build_model(self):\n",
        "    def _setup(self):\n        self._build_model()\n\n    def _build_model(self):\n",
    )
    refusal = _refusal(text)
    assert "is bound in _build_model() at line 33" in refusal and "called in _setup() (line 30)" in refusal, refusal


def test_a_compile_setting_only_the_helper_knows_is_refused():
    """``def _build_model(self, compile=False)``: the plugin, made in __init__, cannot read the
    helper's parameter (before: the plugin read the builtin ``compile``, always true)."""
    text = (
        BUILD_HELPER.replace("    def _build_model(self):\n", "    def _build_model(self, compile=False):\n")
        .replace(
            "        self.model = Net().to(self.device)\n\n",
            "        self.model = Net().to(self.device)\n        if compile:\n            self.model = torch.compile(self.model)\n\n",
        )
        .replace("        self._build_model()\n", "        self._build_model(args.compile)\n")
    )
    refusal = _refusal(text)
    assert (
        "the compile setting compile (line 31) reads compile" in refusal and "before _build_model() runs" in refusal
    ), refusal


def test_a_loader_built_in_the_model_helper_is_prepared_with_the_model():
    text = BUILD_HELPER.replace(
        "        x = torch.randn(256, 16)\n"
        "        self.train_loader = DataLoader(TensorDataset(x, x.argmax(1) % 4), batch_size=16, shuffle=True)\n",
        "",
    ).replace(
        "        self.model = Net().to(self.device)\n\n",
        "        self.model = Net().to(self.device)\n        x = torch.randn(256, 16)\n"
        "        self.train_loader = DataLoader(TensorDataset(x, x.argmax(1) % 4), batch_size=16, shuffle=True)\n\n",
    )
    out = _converted(text)
    assert "        self.train_loader = DataLoader(TensorDataset(" in out
    assert "        self.model, self.optimizer, self.train_loader = self.accelerator.prepare(\n" in out


# -- a DDP wrap the caller makes before it hands the model to the trainer ----------------------------------

HANDED_DDP = (
    SET_OPTIMIZER.replace(
        "import torch.nn.functional as F\n",
        "import torch.nn.functional as F\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"
        "import torch.distributed as dist\n",
    )
    .replace("    def __init__(self, args):\n", "    def __init__(self, model, args):\n")
    .replace("        self.model = Net().to(self.device)\n", "        self.model = model\n")
    .replace(
        "    Trainer(parser.parse_args()).train()\n",
        '    dist.init_process_group("gloo")\n    net = DDP(Net())\n    Trainer(net, parser.parse_args()).train()\n',
    )
)


def test_a_ddp_wrap_made_by_the_caller_is_refused_naming_the_wrap_and_the_hand_over():
    """Before: "DDP(...) at line 54 does not wrap the trained model in place (model = DDP(model, ...))"."""
    refusal = _refusal(HANDED_DDP)
    assert "DDP(...) at line 54 wraps net, which the caller hands to Trainer(...) at line 55 as model" in refusal, (
        refusal
    )
    assert "Trainer.__init__() keeps it as self.model and train() trains it" in refusal, refusal


def test_a_ddp_wrap_made_inline_in_the_trainer_construction_is_refused_naming_it():
    text = HANDED_DDP.replace(
        "    net = DDP(Net())\n    Trainer(net, parser.parse_args()).train()\n",
        "    Trainer(model=DDP(Net()), args=parser.parse_args()).train()\n",
    )
    refusal = _refusal(text)
    assert "DDP(...) at line 54 wraps the model the caller hands to Trainer(...) at line 54 as model" in refusal, (
        refusal
    )


# -- a model returned by a factory method __init__ calls once ----------------------------------------------

FACTORY = SET_OPTIMIZER.replace(
    "        self.model = Net().to(self.device)\n", "        self.model = self.build_model()\n"
).replace(
    "    def set_optimizer(self):\n",
    "    def build_model(self):\n        model = Net().to(self.device)\n        if self.args.compile:\n"
    "            model = torch.compile(model)\n        return model\n\n    def set_optimizer(self):\n",
)


def test_a_compile_in_the_model_factory_init_calls_folds_into_the_plugin():
    """Before: left as is ("torch.compile at line 32 is outside train()"), under a plugin that
    compiled the model again in prepare()."""
    result = convert(FACTORY)
    assert result.refused is None, result.refused
    assert "torch.compile" not in result.text
    assert 'TorchDynamoPlugin(backend="inductor" if self.args.compile else "no")' in result.text
    assert "    def build_model(self):\n        model = Net().to(self.device)\n        return model\n" in result.text
    assert not any("outside train()" in n for n in result.notes), result.notes


def test_a_factory_called_twice_keeps_its_compile_with_the_note():
    """``self.reference = self.build_model()`` too: the factory's compile is not only the trained
    model's, so it stays as before."""
    text = FACTORY.replace(
        "        self.model = self.build_model()\n",
        "        self.model = self.build_model()\n        self.reference = self.build_model()\n",
    )
    result = convert(text)
    assert result.refused is None, result.refused
    assert "            model = torch.compile(model)\n" in result.text
    assert "torch.compile at line 33 is outside train() and was left as is" in result.notes


def test_a_compile_setting_only_the_factory_knows_is_refused():
    text = (
        FACTORY.replace("    def build_model(self):\n", "    def build_model(self, compile=False):\n")
        .replace("        if self.args.compile:\n", "        if compile:\n")
        .replace("self.build_model()", "self.build_model(args.compile)")
    )
    refusal = _refusal(text)
    assert "the compile setting compile (line 31) reads compile" in refusal and "before build_model() runs" in refusal


def test_schedulers_handed_to_a_sequential_lr_beside_the_optimizer_stay_unprepared():
    text = _with_scheduler(
        "        self.warmup = torch.optim.lr_scheduler.LinearLR(self.optimizer, 0.1, total_iters=5)\n"
        "        self.main = torch.optim.lr_scheduler.CosineAnnealingLR(self.optimizer, 40)\n"
        "        self.scheduler = torch.optim.lr_scheduler.SequentialLR(\n"
        "            self.optimizer, [self.warmup, self.main], milestones=[5]\n"
        "        )\n"
    )
    result = convert(text)
    assert result.refused is None, result.refused
    assert "        self.model, self.optimizer, self.train_loader, self.scheduler = self.accelerator.prepare(\n" in (
        result.text
    )
    assert (
        "self.warmup is stepped by the scheduler it is handed to: left unprepared, as that scheduler decides when "
        "it steps" in result.notes
    )


def test_set_optimizer_with_a_scheduler_called_from_init_prepares_both_there():
    text = PER_STEP.replace("        self.set_optimizer()\n", "").replace(
        "        self.train_loader = DataLoader(TensorDataset(x, x.argmax(1) % 4), batch_size=16, shuffle=True)\n",
        "        self.train_loader = DataLoader(TensorDataset(x, x.argmax(1) % 4), batch_size=16, shuffle=True)\n"
        "        self.set_optimizer()\n",
    )
    out = _converted(text)
    assert (
        "        self.set_optimizer()\n"
        "        self.model, self.optimizer, self.train_loader, self.scheduler = self.accelerator.prepare(\n"
        "            self.model, self.optimizer, self.train_loader, self.scheduler\n"
        "        )\n\n    def set_optimizer(self):\n"
    ) in out


INIT_BUILDERS = BUILD_HELPER.replace("        self.set_optimizer()\n", "").replace(
    "        self.train_loader = DataLoader(TensorDataset(x, x.argmax(1) % 4), batch_size=16, shuffle=True)\n",
    "        self.train_loader = DataLoader(TensorDataset(x, x.argmax(1) % 4), batch_size=16, shuffle=True)\n"
    "        self.set_optimizer()\n",
)


def test_a_helper_model_with_an_optimizer_built_from_init_prepares_after_the_last_builder():
    """swara_jepa (survey21b): `self._build_model()` then `self._build_optimiser()` in __init__.
    Before: refused, "the model self.model is bound in _build_model() at line 31, which __init__()
    calls once (line 25), and its optimizer is built in __init__() too (by self.set_optimizer() at
    line 28) ... convert by hand"."""
    out = _converted(INIT_BUILDERS)
    init = out.split("    def __init__(self, args):\n", 1)[1].split("    def _build_model")[0]
    assert init.index("self.accelerator = Accelerator(") < init.index("self._build_model()"), init
    assert init.index("self.set_optimizer()") < init.index("self.accelerator.prepare("), init
    assert "self.model, self.optimizer, self.train_loader = self.accelerator.prepare(" in init, init
    assert "    def _build_model(self):\n        self.model = Net().to(self.device)\n" in out


def test_a_loader_built_by_another_builder_of_init_is_prepared_after_it():
    """``self._build_data()`` after the optimizer's builder: prepare() follows the last builder."""
    text = INIT_BUILDERS.replace(
        "        x = torch.randn(256, 16)\n"
        "        self.train_loader = DataLoader(TensorDataset(x, x.argmax(1) % 4), batch_size=16, shuffle=True)\n"
        "        self.set_optimizer()\n",
        "        self.set_optimizer()\n        self._build_data()\n",
    ).replace(
        "    def set_optimizer(self):\n",
        "    def _build_data(self):\n        x = torch.randn(256, 16)\n"
        "        self.train_loader = DataLoader(TensorDataset(x, x.argmax(1) % 4), batch_size=16, shuffle=True)\n\n"
        "    def set_optimizer(self):\n",
    )
    out = _converted(text)
    init = out.split("    def __init__(self, args):\n", 1)[1].split("    def _build_model")[0]
    assert init.index("self._build_data()") < init.index("self.accelerator.prepare("), init
    assert "self.model, self.optimizer, self.train_loader = self.accelerator.prepare(" in init, init


def test_a_model_builder_of_init_called_again_on_resume_is_refused_naming_the_calls():
    text = INIT_BUILDERS.replace(
        "    def predict(self, x):\n",
        "    def resume(self, path):\n        self._build_model()\n"
        "        self.model.load_state_dict(torch.load(path))\n\n    def predict(self, x):\n",
    )
    refusal = _refusal(text)
    assert "is bound in _build_model() at line 31, which is called more than once (called at lines 25 and" in refusal
    assert "in __init__() and resume())" in refusal, refusal


def test_a_model_builder_called_in_a_loop_of_init_is_refused_naming_the_loop():
    text = INIT_BUILDERS.replace(
        "        self._build_model()\n", "        for _ in range(2):\n            self._build_model()\n"
    )
    refusal = _refusal(text)
    assert "which __init__() calls in the loop at line 25" in refusal, refusal


def test_a_model_only_set_to_none_in_init_is_refused_naming_the_methods_that_bind_it():
    """nanogpt_cls (survey21b): `self.model = None` in __init__, the model built by loadModel() /
    resumeModel(). Before: "built in Trainer.__init__() and bound again in resumeModel()"."""
    text = SET_OPTIMIZER.replace(
        "        self.model = Net().to(self.device)\n", "        self.model = None\n        self.load_model()\n"
    ).replace(
        "    def set_optimizer(self):\n",
        "    def load_model(self):\n        self.model = Net()\n\n    def set_optimizer(self):\n",
    )
    result = convert(text)
    assert result.refused is not None
    assert (
        "the model self.model is only set to None in Trainer.__init__() (line 25) and bound in load_model() (line 31, "
        "called by __init__() at line 26)"
    ) in result.refused, result.refused


# -- a helper __init__ calls that builds the model and its optimizer (survey22a ddpinfo_trainer) ----------

BUILD_BOTH = (
    SET_OPTIMIZER.replace("        self.model = Net().to(self.device)\n", "        self._init_model()\n")
    .replace(
        "    def set_optimizer(self):\n",
        "    def _init_model(self):\n        self.model = Net().to(self.device)\n",
    )
    .replace("        self.set_optimizer()\n", "")
)


def test_a_helper_that_builds_the_model_and_its_optimizer_is_not_a_second_build():
    """build-nanogpt's ``ModelTrainer.init_model()``: before, refused with "the model self.model is
    built in Trainer.__init__() (line 30) and again in _init_model() at line 30", the same line."""
    out = _converted(BUILD_BOTH)
    helper = out.split("    def _init_model(self):\n", 1)[1].split("    def train(self):")[0]
    assert "self.model = Net().to(self.device)" in helper
    assert "self.accelerator.prepare(" in helper
    assert "self.accelerator.backward(loss)" in out
    assert convert(out).text == out


def test_a_model_built_in_init_and_again_in_the_helper_is_still_refused():
    text = BUILD_BOTH.replace(
        "        self._init_model()\n", "        self.model = Net().to(self.device)\n        self._init_model()\n"
    )
    refusal = convert(text).refused
    assert refusal is not None


def test_a_compile_in_a_model_builder_of_init_folds_into_the_plugin():
    """With the optimizer built from __init__ too: before, the builder's ``torch.compile`` stayed
    in place under a plugin that compiled the prepared model again (its mode lost)."""
    text = INIT_BUILDERS.replace(
        "        self.model = Net().to(self.device)\n\n",
        '        self.model = Net().to(self.device)\n        self.model = torch.compile(self.model, mode="max-autotune")\n\n',
    )
    out = _converted(text)
    assert "torch.compile" not in out
    assert 'TorchDynamoPlugin(backend="inductor", mode="max-autotune")' in out
    assert "    def _build_model(self):\n        self.model = Net().to(self.device)\n\n" in out


def test_a_compile_setting_only_a_model_builder_of_init_knows_is_refused():
    text = INIT_BUILDERS.replace(
        "    def _build_model(self):\n        self.model = Net().to(self.device)\n\n",
        "    def _build_model(self, compile=False):\n        self.model = Net().to(self.device)\n"
        "        if compile:\n            self.model = torch.compile(self.model)\n\n",
    ).replace("        self._build_model()\n", "        self._build_model(args.compile)\n")
    refusal = _refusal(text)
    assert "the compile setting compile (line 32) reads compile" in refusal, refusal
    assert "before _build_model() runs" in refusal, refusal


def test_a_method_init_calls_after_its_prepare_reads_the_model_through_unwrap():
    """``self._describe()`` after the builders: it runs on the prepared model (a DDP wrapper on
    several processes). Before: ``self.model.body`` was read as it was (AttributeError under DDP),
    as for every method only __init__ calls."""
    text = INIT_BUILDERS.replace(
        "        self.set_optimizer()\n", "        self.set_optimizer()\n        self._describe()\n"
    )
    text = text.replace(
        "    def set_optimizer(self):\n",
        "    def _describe(self):\n        self.width = self.model.body.out_features\n\n    def set_optimizer(self):\n",
    )
    out = _converted(text)
    assert "        self.width = self.accelerator.unwrap_model(self.model, keep_torch_compile=False).body" in out
    assert "    def _build_model(self):\n        self.model = Net().to(self.device)\n" in out


CONFIG_BUILDERS = """import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class Trainer:
    def __init__(self, config):
        self.config = config
        self._build_model()
        self._build_optimiser()

    def _build_model(self):
        cfg = self.config
        self.model = nn.Linear(4, 1).to(cfg.device)

    def _build_optimiser(self):
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)

    def train(self):
        loader = DataLoader(TensorDataset(torch.randn(16, 4), torch.randn(16, 1)), batch_size=4)
        for x, y in loader:
            self.optimizer.zero_grad()
            nn.functional.mse_loss(self.model(x.to(self.config.device)), y.to(self.config.device)).backward()
            self.optimizer.step()
"""


def test_a_device_a_builder_reads_from_the_kept_config_stays_the_users_choice():
    """swara_jepa's ``cfg = self.cfg; ... .to(cfg.device)`` in ``_build_model()``. Before: no
    ``cpu=`` for it, so ``--device cpu`` on a GPU machine prepared the model on the GPU while the
    training step moved its batches to the CPU."""
    out = _converted(CONFIG_BUILDERS)
    assert 'self.accelerator = Accelerator(dynamo_plugin=dynamo_plugin, cpu=str(self.config.device) == "cpu")' in out
    init = out.split("    def __init__(self, config):\n", 1)[1].split("    def _build_model")[0]
    assert init.index("self.config = config") < init.index("self.accelerator = Accelerator(")
    assert init.index("self.accelerator = Accelerator(") < init.index("self._build_model()")
    assert "        self.model = nn.Linear(4, 1).to(self.accelerator.device)\n" in out


def test_a_placeholder_model_built_through_a_helpers_helper_and_compiled_again_is_refused_naming_each():
    """nanogpt_cls (survey21b, convert23b): ``self.model = None`` in __init__, loadModel() (called
    once by __init__) builds it, on a resume through resumeModel() (called by loadModel(): a
    helper's helper), compileModel() binds ``torch.compile(self.model)`` again (kept there, named
    with its statement), and warpModel()'s DDP wrap, which the conversion removes, is no binder.
    Before, the refusal listed the four methods alike, the removed DDP wrap among them, and said
    nothing of who calls them. Here the compile is taken over (removed), so it is not named."""
    text = SET_OPTIMIZER.replace(
        "        self.model = Net().to(self.device)\n",
        "        self.model = None\n        self.load_model()\n        self.compile_model()\n",
    ).replace(
        "    def set_optimizer(self):\n",
        "    def resume_model(self):\n        self.model = Net()\n\n"
        "    def load_model(self):\n        if self.device is None:\n            self.resume_model()\n"
        "        else:\n            self.model = Net()\n\n"
        "    def compile_model(self):\n        if self.device is not None:\n"
        "            self.unoptimized_model = self.model\n            self.model = torch.compile(self.model)\n\n"
        "    def set_optimizer(self):\n",
    )
    result = convert(text)
    assert result.refused is not None
    refusal = result.refused
    assert "resume_model() (line 32, called by load_model() at line 36, not by __init__())" in refusal, refusal
    assert "load_model() (line 38, called by __init__() at line 26)" in refusal, refusal
    assert "compile_model()" not in refusal, refusal
