"""The facts in knowledge/launch_settings.py, checked against the installed accelerate,
transformers and torch (skipped where one is not installed)."""

from __future__ import annotations

import dataclasses
import importlib.util
import inspect
import re
from pathlib import Path

import pytest

from regcomp_lint.knowledge import backends as B
from regcomp_lint.knowledge import launch_settings as L


def _version(package: str) -> tuple[int, ...]:
    from importlib.metadata import version

    return tuple(int(p) for p in re.findall(r"\d+", version(package))[:2])


#: The facts were read from accelerate 1.15 and transformers 5.24 (the constraints.txt pins): the
#: lowest-bounds job runs older releases, whose launcher and Trainer are spelled differently.
read_from_pinned = pytest.mark.skipif(
    importlib.util.find_spec("accelerate") is None
    or _version("accelerate") < (1, 15)
    or importlib.util.find_spec("transformers") is None
    or _version("transformers") < (5, 24),
    reason="facts read from accelerate 1.15 / transformers 5.24",
)


def _launch_parser():
    launch = pytest.importorskip("accelerate.commands.launch")
    return launch.launch_command_parser()


def _action(parser, flag):
    return next(a for a in parser._actions if flag in a.option_strings)


def test_launch_flags_exist_with_both_spellings():
    parser = _launch_parser()
    for flag in L.LAUNCH_FLAGS.values():
        action = _action(parser, flag)
        assert "--" + flag[2:].replace("_", "-") in action.option_strings
        assert L.flag_name("--" + flag[2:].replace("_", "-")) == flag


@read_from_pinned
def test_launch_backend_choices():
    choices = _action(_launch_parser(), L.LAUNCH_FLAGS["backend"]).choices
    assert tuple(choices) == L.LAUNCH_BACKEND_CHOICES
    assert all(c == c.lower() for c in choices)
    # the launch list is not DynamoBackend: members missing, and one misspelt name
    assert set(B.ACCELERATE_BACKENDS) - set(choices) == {"hpu_backend", "neuron", "torchxla_trace_once"}
    assert set(choices) - set(B.ACCELERATE_BACKENDS) == {"torhchxla_trace_once"}


def test_launch_mode_choices():
    assert tuple(_action(_launch_parser(), L.LAUNCH_FLAGS["mode"]).choices) == L.LAUNCH_MODE_CHOICES


@read_from_pinned
def test_launch_switches_are_the_flags_without_value():
    parser = _launch_parser()
    switches = {L.flag_name(o) for a in parser._actions if a.nargs == 0 for o in a.option_strings}
    assert switches == set(L.LAUNCH_SWITCHES)
    assert _action(parser, L.CONFIG_FILE_FLAG).nargs is None  # takes a value


def test_plugin_reads_the_environment_names(monkeypatch):
    utils = pytest.importorskip("accelerate.utils")
    monkeypatch.setenv(L.ENVIRONMENT["backend"], "eager")
    monkeypatch.setenv(L.ENVIRONMENT["mode"], "max-autotune")
    monkeypatch.setenv(L.ENVIRONMENT["fullgraph"], "true")
    monkeypatch.setenv(L.ENVIRONMENT["dynamic"], "yes")
    monkeypatch.setenv(L.ENVIRONMENT["use_regional_compilation"], "1")
    plugin = utils.TorchDynamoPlugin()
    assert plugin.backend == utils.DynamoBackend.EAGER and plugin.mode == "max-autotune"
    assert plugin.fullgraph is True and plugin.dynamic is True and plugin.use_regional_compilation is True
    # a field the plugin is given wins over the variable (RC406)
    assert utils.TorchDynamoPlugin(backend="inductor").backend == utils.DynamoBackend.INDUCTOR


def test_str_to_bool_words():
    utils = pytest.importorskip("accelerate.utils")
    for word in ("y", "YES", "t", "True", "on", "1", "n", "false", "0", "off"):
        assert L.is_true_word(word) == (utils.str_to_bool(word) == 1)


@read_from_pinned
def test_config_file_section_and_keys():
    config_args = pytest.importorskip("accelerate.commands.config.config_args")
    assert L.CONFIG_SECTION in {f.name for f in dataclasses.fields(config_args.ClusterConfig)}
    launch_source = inspect.getsource(pytest.importorskip("accelerate.commands.launch"))
    assert 'name == "dynamo_config"' in launch_source  # the section's keys become launch arguments
    parser = _launch_parser()
    for key in L.CONFIG_KEYS.values():
        assert _action(parser, "--" + key).dest == key


@read_from_pinned
def test_trainer_fields_and_plugin():
    training_args = pytest.importorskip("transformers.training_args")
    fields = {f.name for f in dataclasses.fields(training_args.TrainingArguments)}
    assert set(L.TRAINER_COMPILE_FIELDS.values()) <= fields
    source = inspect.getsource(training_args.TrainingArguments.__post_init__)
    assert f'self.torch_compile_backend = "{L.TRAINER_DEFAULT_BACKEND}"' in source
    trainer_source = inspect.getsource(pytest.importorskip("transformers.trainer"))
    assert "backend=self.args.torch_compile_backend" in trainer_source
    assert "mode=self.args.torch_compile_mode" in trainer_source
    assert "use_regional_compilation" not in source  # only the environment turns it on


def test_torch_reads_suppress_errors_as_any_non_empty_value():
    spec = importlib.util.find_spec("torch")
    if spec is None or spec.origin is None:
        pytest.skip("torch is not installed")
    config = Path(spec.origin).parent / "_dynamo" / "config.py"
    text = config.read_text(encoding="utf-8")
    assert f'suppress_errors = bool(os.environ.get("{L.SUPPRESS_ERRORS_VARIABLE}", False))' in text


def test_compile_regions_compiles_a_model_without_blocks_whole():
    """Why turning regional compilation on in a config file is a safe fix (regional_settings)."""
    other = pytest.importorskip("accelerate.utils.other")
    source = inspect.getsource(other.compile_regions)
    assert "new_module = torch.compile(module, **compile_kwargs)" in source
