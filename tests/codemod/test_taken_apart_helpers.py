"""A helper's result held by a name and taken apart beside it (issue 12, session 19):
``parts = setup(cfg)`` then ``model = parts["model"]``, ``optimizer = parts["optimizer"]``
(a helper returning a dict), ``model, optimizer, scheduler = parts`` or ``parts[1]`` (a tuple),
and the Lightning-style ``config = configure_optimizers(model)`` with ``config["optimizer"]`` and
``config["lr_scheduler"]``. Each piece is what the helper built: the model and optimizer are
prepared right after the statements that take them apart, and a scheduler among them is prepared
only when it steps once per optimizer step, exactly as a ``scheduler = LambdaLR(...)`` would be.
A holder read in any other way (handed whole to a function, indexed later in the loop) would keep
the unprepared objects: refused, naming the holder and the line that reads it."""

from __future__ import annotations

import textwrap

import pytest

from regcomp_lint.api import lint_source
from regcomp_lint.codemod import ConversionResult, ConvertOptions, convert_source

HEAD = "import torch\nfrom torch.utils.data import DataLoader\n"
SETUP_DICT = """
def setup(cfg):
    model = torch.nn.Linear(2, 1)
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg["lr"])
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / 10))
    return {"model": model, "optimizer": optimizer, "scheduler": scheduler}
"""
SETUP_TUPLE = """
def setup(cfg):
    model = torch.nn.Linear(2, 1)
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg["lr"])
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / 10))
    return model, optimizer, scheduler
"""
CONFIGURE = """
def configure_optimizers(model, cfg):
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg["lr"])
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / 10))
    return {"optimizer": optimizer, "lr_scheduler": scheduler}
"""
#: how the caller takes the helper's result apart -> (helper, statements)
TAKEN = {
    "dict-subscripts": (
        SETUP_DICT,
        'parts = setup(cfg)\nmodel = parts["model"]\noptimizer = parts["optimizer"]\nscheduler = parts["scheduler"]\n',
    ),
    "dict-tuple-display": (
        SETUP_DICT,
        'parts = setup(cfg)\nmodel, optimizer, scheduler = parts["model"], parts["optimizer"], parts["scheduler"]\n',
    ),
    "tuple-unpacked-later": (SETUP_TUPLE, "parts = setup(cfg)\nmodel, optimizer, scheduler = parts\n"),
    "tuple-indexed": (
        SETUP_TUPLE,
        "parts = setup(cfg)\nmodel = parts[0]\noptimizer = parts[1]\nscheduler = parts[2]\n",
    ),
    "lightning-dict": (
        CONFIGURE,
        "model = torch.nn.Linear(2, 1)\nconfig = configure_optimizers(model, cfg)\n"
        'optimizer, scheduler = config["optimizer"], config["lr_scheduler"]\n',
    ),
}
PER_STEP = """
loader = DataLoader(torch.randn(8, 2), batch_size=2)
for epoch in range(3):
    for x in loader:
        loss = model(x).sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
"""
PER_EPOCH = """
loader = DataLoader(torch.randn(8, 2), batch_size=2)
for epoch in range(3):
    for x in loader:
        loss = model(x).sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    scheduler.step()
"""


def _script(helper: str, taken: str, loop: str) -> str:
    body = textwrap.indent(taken + textwrap.dedent(loop).lstrip("\n"), "    ")
    return (
        HEAD + textwrap.dedent(helper) + "\n\ndef main(cfg):\n" + body + "\n\nif __name__ == '__main__':\n"
        "    main({'lr': 0.1})\n"
    )


def _convert(text: str) -> ConversionResult:
    result = convert_source(text, "train.py", ConvertOptions())
    assert result.refused is None, result.refused
    return result


def _prepare_line(result: ConversionResult) -> str:
    (line,) = [line.strip() for line in result.text.splitlines() if ".prepare(" in line]
    return line


def _lint_clean(result: ConversionResult) -> None:
    findings = [d for d in lint_source(result.text, "train.py") if d.code == "RC402"]
    assert not findings, "\n".join(f"{d.location} {d.message}" for d in findings)


@pytest.mark.parametrize("shape", sorted(TAKEN))
def test_a_per_step_scheduler_taken_apart_from_a_helper_is_prepared_after_the_taking_apart(shape):
    helper, taken = TAKEN[shape]
    text = _script(helper, taken, PER_STEP)
    result = _convert(text)
    assert _prepare_line(result) == (
        "model, optimizer, loader, scheduler = accelerator.prepare(model, optimizer, loader, scheduler)"
    )
    lines = result.text.splitlines()
    last_taken = max(lines.index("    " + line) for line in taken.splitlines())
    assert last_taken < lines.index("    " + _prepare_line(result)) < lines.index("    for epoch in range(3):")
    assert not any("left unprepared" in note for note in result.notes), result.notes
    _lint_clean(result)


@pytest.mark.parametrize("shape", sorted(TAKEN))
def test_a_per_epoch_scheduler_taken_apart_from_a_helper_stays_unprepared(shape):
    helper, taken = TAKEN[shape]
    text = _script(helper, taken, PER_EPOCH)
    result = _convert(text)
    assert _prepare_line(result) == "model, optimizer, loader = accelerator.prepare(model, optimizer, loader)"
    line = text.splitlines().index("        scheduler.step()") + 1
    assert any(n.startswith(f"scheduler steps once per epoch (line {line}): left unprepared") for n in result.notes), (
        result.notes
    )
    _lint_clean(result)


def test_a_holder_read_again_in_the_loop_is_refused_naming_the_line():
    taken = (
        'parts = setup(cfg)\nmodel = parts["model"]\noptimizer = parts["optimizer"]\nscheduler = parts["scheduler"]\n'
    )
    loop = PER_STEP.replace("        scheduler.step()\n", '        parts["scheduler"].step()\n')
    text = _script(SETUP_DICT, taken, loop)
    result = convert_source(text, "train.py", ConvertOptions())
    line = text.splitlines().index('            parts["scheduler"].step()') + 1
    assert result.refused is not None
    assert f"parts (bound at line {text.splitlines().index('    parts = setup(cfg)') + 1})" in result.refused
    assert f"line {line}" in result.refused
    assert 'parts["scheduler"].step()' in result.refused


def test_a_holder_handed_whole_to_a_function_is_refused_naming_the_call():
    helper = SETUP_DICT + '\n\ndef log_lr(parts):\n    print(parts["optimizer"].param_groups[0]["lr"])\n'
    taken = (
        'parts = setup(cfg)\nmodel = parts["model"]\noptimizer = parts["optimizer"]\nscheduler = parts["scheduler"]\n'
    )
    text = _script(helper, taken + "log_lr(parts)\n", PER_STEP)
    result = convert_source(text, "train.py", ConvertOptions())
    assert result.refused is not None
    assert "log_lr(parts)" in result.refused


def test_a_helper_returning_an_object_is_refused_naming_the_call_and_what_it_returns():
    helper = SETUP_DICT.replace(
        'return {"model": model, "optimizer": optimizer, "scheduler": scheduler}',
        "return SimpleNamespace(model=model, optimizer=optimizer, scheduler=scheduler)",
    )
    taken = "state = setup(cfg)\nmodel, optimizer, scheduler = state.model, state.optimizer, state.scheduler\n"
    text = "from types import SimpleNamespace\n" + _script(helper, taken, PER_STEP)
    lines = text.splitlines()
    result = convert_source(text, "train.py", ConvertOptions())
    assert result.refused is not None
    call_line = lines.index("    state = setup(cfg)") + 1
    return_line = next(i for i, line in enumerate(lines) if "return SimpleNamespace(" in line) + 1
    assert f"line {call_line} ('state = setup(cfg)')" in result.refused
    assert f"SimpleNamespace(model=model, optimizer=optimizer, scheduler=scheduler) (line {return_line})" in (
        result.refused
    )


ELSEWHERE = {  # the helper in the project's own builders.py, imported by the script
    "dict-subscripts": (
        "from builders import setup\n",
        SETUP_DICT,
        'parts = setup(cfg)\nmodel = parts["model"]\noptimizer = parts["optimizer"]\nscheduler = parts["scheduler"]\n',
    ),
    "lightning-dict": (
        "from builders import configure_optimizers\n",
        CONFIGURE,
        "model = torch.nn.Linear(2, 1)\nconfig = configure_optimizers(model, cfg)\n"
        'optimizer, scheduler = config["optimizer"], config["lr_scheduler"]\n',
    ),
    "tuple-unpacked-later": (
        "from builders import setup\n",
        SETUP_TUPLE,
        "parts = setup(cfg)\nmodel, optimizer, scheduler = parts\n",
    ),
}


@pytest.mark.parametrize(
    ("shape", "loop", "prepared"),
    [
        (shape, loop, prepared)
        for shape in sorted(ELSEWHERE)
        for loop, prepared in ((PER_STEP, True), (PER_EPOCH, False))
    ],
)
def test_pieces_of_a_helper_of_another_module_are_prepared_by_their_cadence(tmp_path, shape, loop, prepared):
    imported, helper, taken = ELSEWHERE[shape]
    (tmp_path / "builders.py").write_text("import torch\n" + textwrap.dedent(helper))
    body = textwrap.indent(taken + textwrap.dedent(loop).lstrip("\n"), "    ")
    text = HEAD + imported + "\n\ndef main(cfg):\n" + body + "\n\nif __name__ == '__main__':\n    main({'lr': 0.1})\n"
    result = convert_source(text, str(tmp_path / "train.py"), ConvertOptions())
    assert result.refused is None, result.refused
    scheduler = ", scheduler" if prepared else ""
    assert _prepare_line(result) == (
        f"model, optimizer, loader{scheduler} = accelerator.prepare(model, optimizer, loader{scheduler})"
    )
    assert any("scheduler steps once per epoch" in n for n in result.notes) is not prepared, result.notes


@pytest.mark.parametrize(
    ("returned", "taken"),
    [
        (
            '{"model": model, "optimizer": optimizer}',
            'parts = setup(cfg)\nmodel = parts["model"]\noptimizer = parts["optimizer"]\n',
        ),
        ("model, optimizer", "model, optimizer = setup(cfg)\n"),
    ],
    ids=["dict", "tuple"],
)
def test_a_model_another_module_builds_with_its_own_function_is_found_by_the_optimizers_parameters(
    tmp_path, returned, taken
):
    # before: "no optimizer found" -- build_model() is no constructor the other module's reading knows
    (tmp_path / "builders.py").write_text(
        "import torch\n\n\ndef build_model():\n    return torch.nn.Linear(2, 1)\n\n\ndef setup(cfg):\n"
        "    model = build_model()\n    optimizer = torch.optim.SGD(model.parameters(), lr=cfg['lr'])\n"
        f"    return {returned}\n"
    )
    loop = PER_STEP.replace("        scheduler.step()\n", "")
    body = textwrap.indent(taken + textwrap.dedent(loop).lstrip("\n"), "    ")
    text = HEAD + "from builders import setup\n\n\ndef main(cfg):\n" + body + "\n\nmain({'lr': 0.1})\n"
    result = convert_source(text, str(tmp_path / "train.py"), ConvertOptions())
    assert result.refused is None, result.refused
    assert _prepare_line(result) == "model, optimizer, loader = accelerator.prepare(model, optimizer, loader)"


@pytest.mark.parametrize("wrap", ["model = DDP(model)", "model = torch.compile(model)"])
def test_a_model_another_module_wraps_itself_stays_refused(tmp_path, wrap):
    # that module cannot be edited, and prepare() would wrap (or compile) the wrapper again
    (tmp_path / "builders.py").write_text(
        "import torch\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n\n\ndef build_model():\n"
        "    return torch.nn.Linear(2, 1)\n\n\ndef setup(cfg):\n    model = build_model()\n"
        f"    {wrap}\n    optimizer = torch.optim.SGD(model.parameters(), lr=cfg['lr'])\n    return model, optimizer\n"
    )
    loop = PER_STEP.replace("        scheduler.step()\n", "")
    body = textwrap.indent("model, optimizer = setup(cfg)\n" + textwrap.dedent(loop).lstrip("\n"), "    ")
    text = HEAD + "from builders import setup\n\n\ndef main(cfg):\n" + body + "\n\nmain({'lr': 0.1})\n"
    result = convert_source(text, str(tmp_path / "train.py"), ConvertOptions())
    assert result.refused is not None
    # the refusal names the wrap, not "no optimizer found"
    expected = "not converted: optimizer = setup(...) at line 7: setup() of builders.py wraps or compiles the model"
    assert f"{expected} itself (line 11: " in result.refused, result.refused


TRAINER = """
class Trainer:
    def __init__(self, cfg):
        TAKEN
        self.loader = DataLoader(torch.randn(8, 2), batch_size=2)

    def fit(self, epochs):
        for epoch in range(epochs):
            for x in self.loader:
                loss = self.model(x).sum()
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()
                self.scheduler.step()


if __name__ == "__main__":
    Trainer({"lr": 0.1}).fit(3)
"""


@pytest.mark.parametrize(
    ("helper", "taken"),
    [
        (SETUP_TUPLE, "self.model, self.optimizer, self.scheduler = setup(cfg)"),
        (
            SETUP_DICT,
            'parts = setup(cfg)\n        self.model = parts["model"]\n        self.optimizer = parts["optimizer"]\n'
            '        self.scheduler = parts["scheduler"]',
        ),
    ],
    ids=["tuple", "dict"],
)
def test_a_trainer_whose_init_takes_the_pieces_from_a_module_helper_is_prepared_in_init(helper, taken):
    # before: "optimizers are built in several places (setup(), __init__())"
    text = HEAD + textwrap.dedent(helper) + "\n" + TRAINER.replace("TAKEN", taken)
    result = _convert(text)
    assert _prepare_line(result).startswith("self.model, self.optimizer, self.loader, self.scheduler = ")
    lines = result.text.splitlines()
    assert lines.index("        " + _prepare_line(result)) < lines.index("    def fit(self, epochs):")
