"""Claims the RC1xx, RC4xx and RC5xx rule pages make (issue 13's re-read), checked against
torch 2.13 / accelerate 1.15 in this interpreter.

Skipped where torch or accelerate cannot be imported. Nothing here compiles a real kernel:
``backend="eager"`` on CPU, or reading the installed source, so each test takes well under a
second or two.
"""

from __future__ import annotations

import importlib.metadata
import inspect
import logging
import os
import subprocess
import sys
import textwrap

import pytest

torch = pytest.importorskip("torch")
accelerate = pytest.importorskip("accelerate")

from accelerate import Accelerator  # noqa: E402
from accelerate.state import AcceleratorState  # noqa: E402
from accelerate.utils import DynamoBackend, TorchDynamoPlugin, compile_regions  # noqa: E402
from torch import nn  # noqa: E402

from regcomp_lint.checks import ALL_RULES  # noqa: E402


def _major(package: str) -> int:
    """The installed major version of ``package`` (0 when it is not installed)."""
    try:
        return int(importlib.metadata.version(package).split(".")[0])
    except importlib.metadata.PackageNotFoundError:
        return 0


def docs(code: str) -> str:
    return " ".join(ALL_RULES[code].docs().split())


@pytest.fixture(autouse=True)
def _restore_process_state():
    """Accelerate keeps process-wide state, and TrainingArguments(torch_compile=True) exports
    ACCELERATE_DYNAMO_* into os.environ: neither may leak into later tests (trace's capture tests
    read both)."""
    saved = dict(os.environ)
    yield
    os.environ.clear()
    os.environ.update(saved)
    AcceleratorState._reset_state(True)


@pytest.fixture
def fresh_accelerator_state(monkeypatch):
    for name in list(os.environ):
        if name.startswith("ACCELERATE_"):
            monkeypatch.delenv(name)
    AcceleratorState._reset_state(True)
    yield
    AcceleratorState._reset_state(True)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return self.fc(x)


# --- RC101 ---------------------------------------------------------------------------------


def test_rc101_torch_compile_raises_invalid_backend_at_the_call():
    with pytest.raises(torch._dynamo.exc.InvalidBackend):
        torch.compile(nn.Linear(2, 2), backend="inductr")
    assert "`torch.compile` raises `InvalidBackend` on the spot" in docs("RC101")


def test_rc101_backend_names_are_exact_and_case_sensitive():
    with pytest.raises(torch._dynamo.exc.InvalidBackend):
        torch.compile(nn.Linear(2, 2), backend="Eager")


def test_rc101_plugin_raises_value_error_for_a_name_accelerate_does_not_know(
    fresh_accelerator_state,
):
    with pytest.raises(ValueError):
        TorchDynamoPlugin(backend="aot_nvfuser")
    with pytest.raises(ValueError):
        TorchDynamoPlugin(backend="openxla")
    assert TorchDynamoPlugin(backend="INDUCTOR").backend is DynamoBackend.INDUCTOR
    assert TorchDynamoPlugin(backend="Inductor").backend is DynamoBackend.INDUCTOR


@pytest.mark.parametrize(
    "dead",
    [
        "aot_ts_nvfuser",
        "nvprims_nvfuser",
        "ofi",
        "fx2trt",
        "onnxrt",
        "aot_torchxla_trace_once",
        "torchxla_trace_once",
    ],
)
def test_rc101_accelerate_names_torch_no_longer_registers(dead, fresh_accelerator_state):
    """Accepted by the plugin, unknown to torch: the failure comes later, in prepare()."""
    assert DynamoBackend(dead.upper())
    assert dead not in torch._dynamo.list_backends(exclude_tags=())
    assert f"`{dead}`" in docs("RC101")


def test_rc101_a_dead_accelerate_backend_fails_inside_prepare(fresh_accelerator_state):
    accelerator = Accelerator(cpu=True, dynamo_plugin=TorchDynamoPlugin(backend="onnxrt"))
    with pytest.raises(torch._dynamo.exc.InvalidBackend):
        accelerator.prepare(Block())


def test_rc101_aot_nvfuser_is_gone_from_torch_and_accelerate():
    assert "aot_nvfuser" not in torch._dynamo.list_backends(exclude_tags=())
    assert "AOT_NVFUSER" not in DynamoBackend.__members__
    assert "aot_nvfuser" not in (DynamoBackend.__doc__ or "").lower()
    assert "in neither now" in docs("RC101")


def test_rc101_torch_registry_holds_the_names_the_page_lists():
    names = set(torch._dynamo.list_backends(exclude_tags=()))
    for name in ("inductor", "eager", "aot_eager", "aot_eager_decomp_partition", "cudagraphs"):
        assert name in names
    for name in ("openxla", "openxla_eval", "tvm", "ts", "aot_ts"):
        assert name in names


def test_rc101_accelerate_launch_takes_only_lower_case_backends():
    from accelerate.commands.launch import launch_command_parser

    parser = launch_command_parser()
    action = next(a for a in parser._actions if "--dynamo_backend" in a.option_strings)
    assert "inductor" in action.choices and "INDUCTOR" not in action.choices
    assert "hpu_backend" not in action.choices and "neuron" not in action.choices
    assert "torchxla_trace_once" not in action.choices
    assert "torhchxla_trace_once" in action.choices  # accelerate's own misspelling
    assert "hpu_backend" in [b.value.lower() for b in DynamoBackend]


# --- RC102 ---------------------------------------------------------------------------------


def test_rc102_modes_are_the_ones_the_page_lists():
    from torch._inductor import list_mode_options

    assert set(list_mode_options()) == {
        "default",
        "reduce-overhead",
        "max-autotune",
        "max-autotune-no-cudagraphs",
        "lite",
    }
    for mode in list_mode_options():
        assert f"`{mode}`" in docs("RC102")


@pytest.mark.parametrize("mode", ["max_autotune", "Max-Autotune"])
def test_rc102_an_unknown_mode_raises_runtime_error_at_the_call(mode):
    with pytest.raises(RuntimeError, match="Unrecognized mode"):
        torch.compile(nn.Linear(2, 2), mode=mode)


def test_rc102_the_plugin_does_not_check_the_mode_prepare_does(fresh_accelerator_state):
    plugin = TorchDynamoPlugin(backend="inductor", mode="reduce_overhead")
    accelerator = Accelerator(cpu=True, dynamo_plugin=plugin)
    with pytest.raises(RuntimeError, match="Unrecognized mode"):
        accelerator.prepare(Block())


def test_rc102_only_inductor_checks_the_mode():
    compiled = torch.compile(Block(), backend="eager", mode="max_autotune")
    assert compiled(torch.randn(2, 4)).shape == (2, 4)


def test_rc102_accelerate_launch_knows_three_modes():
    from accelerate.commands.launch import launch_command_parser

    parser = launch_command_parser()
    action = next(a for a in parser._actions if "--dynamo_mode" in a.option_strings)
    assert set(action.choices) == {"default", "reduce-overhead", "max-autotune"}


# --- RC103 ---------------------------------------------------------------------------------


@pytest.mark.parametrize("options", [{"epilogue_fusion": True}, {}])
def test_rc103_mode_and_options_raise_at_the_call(options):
    with pytest.raises(RuntimeError, match="Either mode or options can be specified"):
        torch.compile(nn.Linear(2, 2), mode="max-autotune", options=options)


def test_rc103_the_decorator_raises_when_applied():
    with pytest.raises(RuntimeError, match="Either mode or options"):

        @torch.compile(mode="max-autotune", options={"epilogue_fusion": True})
        def f(x):
            return x


def test_rc103_accelerate_drops_mode_default_so_it_meets_options_safely(
    fresh_accelerator_state,
):
    kwargs = TorchDynamoPlugin(backend="inductor", mode="default", options={"a": 1}).to_kwargs()
    assert "mode" not in kwargs and kwargs["options"] == {"a": 1}
    kwargs = TorchDynamoPlugin(backend="inductor", mode="max-autotune", options={}).to_kwargs()
    assert kwargs["mode"] == "max-autotune"


def test_rc103_the_plugin_combination_raises_in_prepare(fresh_accelerator_state):
    plugin = TorchDynamoPlugin(backend="inductor", mode="max-autotune", options={"a": 1})
    accelerator = Accelerator(cpu=True, dynamo_plugin=plugin)
    with pytest.raises(RuntimeError, match="Either mode or options"):
        accelerator.prepare(Block())


# --- RC105 / RC106 -------------------------------------------------------------------------


def test_rc105_dynamo_backend_becomes_a_plugin_with_only_the_backend(fresh_accelerator_state):
    accelerator = Accelerator(cpu=True, dynamo_backend="eager")
    plugin = accelerator.state.dynamo_plugin
    assert isinstance(plugin, TorchDynamoPlugin)
    assert plugin.to_kwargs() == TorchDynamoPlugin(backend="eager").to_kwargs()
    assert "Accelerator.__init__" in docs("RC105")


def test_rc105_other_plugin_fields_come_from_the_environment(fresh_accelerator_state, monkeypatch):
    monkeypatch.setenv("ACCELERATE_DYNAMO_MODE", "max-autotune")
    accelerator = Accelerator(cpu=True, dynamo_backend="eager")
    assert accelerator.state.dynamo_plugin.mode == "max-autotune"


def test_rc106_backend_and_plugin_together_raise_value_error(fresh_accelerator_state):
    with pytest.raises(ValueError, match="You cannot pass in both `dynamo_plugin` and"):
        Accelerator(cpu=True, dynamo_backend="eager", dynamo_plugin=TorchDynamoPlugin())


def test_rc106_a_literal_none_backend_is_absent(fresh_accelerator_state):
    Accelerator(cpu=True, dynamo_backend=None, dynamo_plugin=TorchDynamoPlugin(backend="eager"))


# --- RC107 ---------------------------------------------------------------------------------


@pytest.mark.slow  # a fresh interpreter imports torch (~5 s)
def test_rc107_any_non_empty_value_turns_suppress_errors_on():
    probe = "import torch._dynamo.config as c; print(c.suppress_errors)"
    env = {**os.environ, "TORCHDYNAMO_SUPPRESS_ERRORS": "0"}
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"
    assert "`TORCHDYNAMO_SUPPRESS_ERRORS=0` too" in docs("RC107")


def test_rc107_suppress_errors_falls_back_to_eager_with_only_a_warning(monkeypatch):
    def failing_backend(gm, example_inputs):
        raise RuntimeError("compiler failed")

    monkeypatch.setattr(torch._dynamo.config, "suppress_errors", True)
    torch._dynamo.reset()
    warned: list[logging.LogRecord] = []
    handler = logging.Handler(logging.WARNING)
    handler.emit = warned.append  # type: ignore[method-assign]
    dynamo_log = logging.getLogger("torch._dynamo")  # torch's loggers do not propagate to root
    dynamo_log.addHandler(handler)
    try:
        out = torch.compile(Block(), backend=failing_backend)(torch.randn(2, 4))
    finally:
        dynamo_log.removeHandler(handler)
    assert out.shape == (2, 4)
    assert any("compiler failed" in record.getMessage() for record in warned)
    assert "only sign is a warning" in docs("RC107")
    monkeypatch.setattr(torch._dynamo.config, "suppress_errors", False)
    torch._dynamo.reset()
    with pytest.raises(Exception, match="compiler failed"):
        torch.compile(Block(), backend=failing_backend)(torch.randn(2, 4))


# --- RC401 ---------------------------------------------------------------------------------


def test_rc401_accelerator_backward_divides_by_accumulation_steps(fresh_accelerator_state):
    accelerator = Accelerator(cpu=True, gradient_accumulation_steps=4)
    weight = torch.ones(1, requires_grad=True)
    accelerator.backward((weight * 8).sum())
    assert weight.grad.item() == pytest.approx(2.0)


def test_rc401_backward_hands_deepspeed_its_engine_and_skips_megatron():
    source = inspect.getsource(Accelerator.backward)
    assert "deepspeed_engine_wrapped.backward" in source
    assert "MEGATRON_LM:\n            return" in source
    assert "self.scaler.scale(loss).backward" in source


def test_rc401_defaults_run_exactly_loss_backward(fresh_accelerator_state):
    accelerator = Accelerator(cpu=True)
    weight = torch.ones(1, requires_grad=True)
    accelerator.backward((weight * 8).sum())
    assert weight.grad.item() == pytest.approx(8.0)


# --- RC402 / RC405 / RC406 -----------------------------------------------------------------


def test_rc405_a_plugin_no_accelerator_receives_leaves_compilation_to_the_environment(
    fresh_accelerator_state,
):
    TorchDynamoPlugin(backend="inductor", use_regional_compilation=True)
    accelerator = Accelerator(cpu=True)
    assert accelerator.state.dynamo_plugin.backend is DynamoBackend.NO


@pytest.mark.parametrize(
    ("field", "variable", "value", "own"),
    [
        ("backend", "BACKEND", "inductor", "eager"),
        ("mode", "MODE", "max-autotune", "reduce-overhead"),
        ("use_regional_compilation", "USE_REGIONAL_COMPILATION", "true", False),
        ("fullgraph", "USE_FULLGRAPH", "true", False),
    ],
)
def test_rc406_a_plugin_reads_a_launch_variable_only_for_a_field_left_none(
    field, variable, value, own, fresh_accelerator_state, monkeypatch
):
    monkeypatch.setenv(f"ACCELERATE_DYNAMO_{variable}", value)
    assert getattr(TorchDynamoPlugin(**{field: own}), field) in (own, DynamoBackend.EAGER)
    assert getattr(TorchDynamoPlugin(), field) not in (None, own, DynamoBackend.EAGER)


def test_rc406_launch_exports_its_flags_as_dynamo_variables():
    from accelerate.utils.launch import prepare_simple_launcher_cmd_env

    source = inspect.getsource(prepare_simple_launcher_cmd_env)
    for variable in ("BACKEND", "MODE", "USE_FULLGRAPH", "USE_DYNAMIC", "USE_REGIONAL_COMPILATION"):
        assert f'current_env["ACCELERATE_DYNAMO_{variable}"]' in source


@pytest.mark.slow
def test_rc402_prepare_shards_a_loader_across_processes(tmp_path):
    """Two gloo processes on CPU: each prepared loader yields half the batches."""
    script = tmp_path / "shard.py"
    script.write_text(
        textwrap.dedent(
            """
            import pathlib, sys
            from accelerate import Accelerator
            from torch.utils.data import DataLoader
            acc = Accelerator(cpu=True)
            whole = DataLoader(list(range(8)), batch_size=2)
            counts = f"{len(whole)} {len(acc.prepare(whole))}"
            pathlib.Path(sys.argv[1], f"rank{acc.process_index}").write_text(counts)
            """
        )
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACCELERATE_")}
    env["ACCELERATE_USE_CPU"] = "1"
    launch = [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu"]
    out = subprocess.run(
        [*launch, "--num_processes", "2", "--main_process_port", "29613", str(script), str(tmp_path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    counts = {path.name: path.read_text() for path in tmp_path.glob("rank*")}
    assert counts == {"rank0": "4 2", "rank1": "4 2"}, out.stderr[-2000:]
    assert "it shards the data" in docs("RC402")


def test_rc401_fp16_step_without_scaled_loss_raises():
    """The prepared optimizer steps through the GradScaler; unscaled, that step raises."""
    from accelerate.optimizer import AcceleratedOptimizer

    assert "self.scaler.step(self.optimizer, closure)" in inspect.getsource(AcceleratedOptimizer.step)
    layer = nn.Linear(2, 1)
    optimizer = torch.optim.SGD(layer.parameters(), lr=0.1)
    layer(torch.randn(3, 2)).sum().backward()
    scaler = torch.amp.GradScaler("cpu")
    with pytest.raises(AssertionError, match="_scale is None"):
        scaler.step(optimizer)
    assert "Attempted step but _scale is None" in docs("RC401")


# --- RC501 / RC502 -------------------------------------------------------------------------

OptimizedModule = torch._dynamo.eval_frame.OptimizedModule


class Other(Block):
    pass


class Stack(nn.Module):
    def __init__(self, blocks):
        super().__init__()
        self.blocks = blocks

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return x


class Heads(nn.Module):
    def __init__(self):
        super().__init__()
        self.heads = nn.ModuleList([Block() for _ in range(2)])

    def forward(self, x):
        for head in self.heads:
            x = head(x)
        return x


class WithHeads(Stack):
    def __init__(self):
        super().__init__(nn.ModuleList([Block() for _ in range(4)]))
        self.heads = nn.ModuleDict({"sentiment": nn.Linear(4, 2)})
        self.stem = nn.Sequential(nn.Linear(4, 4), nn.ReLU())


def test_rc501_compile_regions_returns_a_new_module_with_per_block_keys():
    model = Stack(nn.ModuleList([Block() for _ in range(4)]))
    compiled = compile_regions(model, backend="eager", dynamic=False)
    assert compiled is not model
    assert isinstance(compiled.blocks[0], OptimizedModule)
    assert "blocks.0._orig_mod.fc.weight" in compiled.state_dict()
    assert "(`h.0._orig_mod.` instead of `_orig_mod.h.0.`)" in docs("RC501")


def test_rc501_a_regional_plugin_makes_prepare_compile_each_block(fresh_accelerator_state):
    plugin = TorchDynamoPlugin(backend="eager", use_regional_compilation=True)
    model = Accelerator(cpu=True, dynamo_plugin=plugin).prepare(Stack(nn.ModuleList([Block() for _ in range(4)])))
    assert not isinstance(model, OptimizedModule)
    assert isinstance(model.blocks[0], OptimizedModule)


@pytest.mark.parametrize(
    "blocks",
    [
        lambda: nn.Sequential(*[Block() for _ in range(4)]),
        lambda: nn.ModuleList([Block() if i % 2 else Other() for i in range(4)]),
    ],
    ids=["sequential", "alternating"],
)
def test_rc502_without_a_one_class_module_list_the_whole_model_is_compiled(blocks):
    assert isinstance(compile_regions(Stack(blocks()), backend="eager"), OptimizedModule)


def test_rc502_blocks_in_sequential_holding_lists_run_their_own_forward_eagerly():
    model = compile_regions(Stack(nn.Sequential(*[Heads() for _ in range(3)])), backend="eager")
    assert not isinstance(model, OptimizedModule)
    assert type(model.blocks[0]) is Heads
    assert isinstance(model.blocks[0].heads[0], OptimizedModule)


def test_rc502_containers_beside_the_blocks_are_wrapped_whole():
    model = compile_regions(WithHeads(), backend="eager")
    with pytest.raises(TypeError, match="not subscriptable"):
        model.heads["sentiment"]
    with pytest.raises(TypeError, match="not iterable"):
        list(model.stem)
    assert not any(isinstance(head, OptimizedModule) for head in model.heads.values())
    assert not isinstance(model.heads.sentiment, OptimizedModule)
    assert len(model.stem) == 2
    assert model.stem(torch.randn(2, 4)).shape == (2, 4)


def test_rc103_the_page_expands_max_autotune_as_torch_does():
    from torch._inductor import list_mode_options

    expansion = list_mode_options("max-autotune")
    assert expansion == {"max_autotune": True, "triton.cudagraphs": True, "coordinate_descent_tuning": True}
    assert '"max_autotune": True, "triton.cudagraphs": True, "coordinate_descent_tuning": True' in docs("RC103")


def test_rc302_both_modes_it_names_record_cuda_graphs():
    from torch._inductor import list_mode_options

    assert list_mode_options("reduce-overhead")["triton.cudagraphs"] is True
    assert list_mode_options("max-autotune")["triton.cudagraphs"] is True


def test_rc402_a_prepared_scheduler_waits_for_accumulation_and_steps_per_process(
    fresh_accelerator_state,
):
    from accelerate.scheduler import AcceleratedScheduler

    accelerator = Accelerator(cpu=True, gradient_accumulation_steps=2)
    layer = nn.Linear(2, 1)
    optimizer = torch.optim.SGD(layer.parameters(), lr=1.0)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)
    layer, optimizer, scheduler = accelerator.prepare(layer, optimizer, scheduler)
    accelerator.gradient_state._set_sync_gradients(False)
    scheduler.step()
    assert optimizer.param_groups[0]["lr"] == 1.0
    source = inspect.getsource(AcceleratedScheduler.step)
    assert "for _ in range(num_processes):" in source and "if self.split_batches:" in source


@pytest.mark.skipif(
    _major("transformers") < 5,
    reason="the Trainer source read here is transformers 5's (the lowest-bounds job runs 4.x)",
)
def test_rc406_the_trainer_passes_its_backend_and_mode_to_the_plugin(tmp_path):
    transformers = pytest.importorskip("transformers")

    args = transformers.TrainingArguments(output_dir=str(tmp_path), torch_compile=True, use_cpu=True)
    assert args.torch_compile_backend == "inductor"
    mode_only = transformers.TrainingArguments(
        output_dir=str(tmp_path), torch_compile_mode="max-autotune", use_cpu=True
    )
    assert mode_only.torch_compile and mode_only.torch_compile_backend == "inductor"
    source = inspect.getsource(transformers.Trainer)
    assert "backend=self.args.torch_compile_backend" in source
    assert "mode=self.args.torch_compile_mode" in source
