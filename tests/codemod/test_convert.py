"""Behaviour of ``convert_source`` beyond the golden scripts: precedence of settings, refusals,
what is left alone, and that the conversion is static (no torch, no running the script)."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import textwrap

import pytest

from regcomp_lint.codemod import ConversionResult, ConvertOptions, convert_bytes, convert_source
from regcomp_lint.plan import Plan

LOOP = """
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(10):
        loss = model(torch.randn(4, 2)).sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
"""


def script(setup: str, loop: str = LOOP, imports: str = "import torch\n") -> str:
    return (
        imports
        + "\n\ndef main():\n"
        + textwrap.indent(textwrap.dedent(setup), "    ")
        + textwrap.dedent(loop).replace("\n", "\n    ").rstrip(" ")
        + "\n"
    )


def convert(text: str, **options) -> ConversionResult:
    return convert_source(text, "train.py", ConvertOptions(**options))


def plugin_line(result: ConversionResult) -> str:
    """The ``dynamo_plugin = TorchDynamoPlugin(...)`` statement, joined onto one line."""
    assert result.refused is None, result.refused
    found = [
        ast.get_source_segment(result.text, node)
        for node in ast.walk(ast.parse(result.text))
        if isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "dynamo_plugin"
    ]
    assert len(found) == 1, result.text
    joined = re.sub(r"\(\s+", "(", found[0])
    joined = re.sub(r",?\s*\n\s*\)", ")", joined)
    return re.sub(r"\s*\n\s*", " ", joined)


HAND_COMPILED = script(
    'model = torch.nn.Linear(2, 1)\nmodel = torch.compile(model, mode="max-autotune", fullgraph=True)\n'
)


# -- settings precedence: options > plan > script > defaults ----------------------------------


def test_defaults_compile_with_inductor():
    result = convert(script("model = torch.nn.Linear(2, 1)\n"))
    assert plugin_line(result) == 'dynamo_plugin = TorchDynamoPlugin(backend="inductor")'


def test_script_settings_move_into_the_plugin():
    result = convert(
        script('model = torch.nn.Linear(2, 1)\nmodel = torch.compile(model, mode="max-autotune", dynamic=False)\n')
    )
    assert (
        plugin_line(result)
        == 'dynamo_plugin = TorchDynamoPlugin(backend="inductor", mode="max-autotune", dynamic=False)'
    )
    assert "torch.compile" not in result.text


def test_hand_compile_fullgraph_is_dropped_for_a_whole_model_compile():
    """prepare() compiles DDP(model); DDP's forward breaks the graph, so fullgraph=True would raise
    under accelerate launch with several processes (seen with torch 2.13, gloo)."""
    result = convert(HAND_COMPILED)
    assert plugin_line(result) == 'dynamo_plugin = TorchDynamoPlugin(backend="inductor", mode="max-autotune")'
    assert any("fullgraph=True was not carried over" in note for note in result.notes)
    assert "fullgraph=True" in plugin_line(convert(HAND_COMPILED, fullgraph=True))


def test_hand_compile_fullgraph_is_kept_with_regional_compilation():
    result = convert(HAND_COMPILED, regional=True)
    assert (
        plugin_line(result)
        == 'dynamo_plugin = TorchDynamoPlugin(backend="inductor", mode="max-autotune", fullgraph=True, use_regional_compilation=True)'
    )


def test_plan_beats_script():
    plan = Plan(strategy="full", plugin={"backend": "aot_eager", "fullgraph": False})
    result = convert(HAND_COMPILED, plan=plan)
    assert (
        plugin_line(result)
        == 'dynamo_plugin = TorchDynamoPlugin(backend="aot_eager", mode="max-autotune", fullgraph=False, use_regional_compilation=False)'
    )


def test_options_beat_plan_and_script():
    plan = Plan(strategy="regional", plugin={"backend": "aot_eager", "mode": "default"})
    result = convert(HAND_COMPILED, plan=plan, backend="eager", fullgraph=False, dynamic=True, regional=False)
    assert (
        plugin_line(result)
        == 'dynamo_plugin = TorchDynamoPlugin(backend="eager", mode="default", fullgraph=False, dynamic=True, use_regional_compilation=False)'
    )


def test_plan_strategy_none_turns_compilation_off_even_under_a_condition():
    text = script(
        "model = torch.nn.Linear(2, 1)\nif args.compile:\n    model = torch.compile(model)\n",
        imports="import torch\nargs = None\n",
    )
    result = convert(text, plan=Plan(strategy="none"))
    assert plugin_line(result) == 'dynamo_plugin = TorchDynamoPlugin(backend="no")'


def test_condition_of_the_hand_compile_is_kept():
    text = script(
        "model = torch.nn.Linear(2, 1)\nif args.compile:\n    model = torch.compile(model)\n",
        imports="import torch\nargs = None\n",
    )
    result = convert(text, backend="eager")
    assert plugin_line(result) == 'dynamo_plugin = TorchDynamoPlugin(backend="eager" if args.compile else "no")'


def test_a_hand_compile_under_the_main_guard_is_unconditional():
    text = (
        "import torch\n\n"
        'if __name__ == "__main__":\n'
        "    model = torch.nn.Linear(2, 1)\n    model = torch.compile(model)\n"
        "    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "    for step in range(3):\n"
        "        optimizer.zero_grad()\n        model(torch.randn(4, 2)).sum().backward()\n        optimizer.step()\n"
    )
    assert plugin_line(convert(text)).strip() == 'dynamo_plugin = TorchDynamoPlugin(backend="inductor")'
    assert "if args.compile" in plugin_line(
        convert(
            text.replace(
                "    model = torch.compile(model)\n", "    if args.compile:\n        model = torch.compile(model)\n"
            )
        )
    )


def test_regional_is_decided_from_the_model_and_can_be_turned_off():
    model = textwrap.dedent("""
        import torch
        from torch import nn

        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.mlp = nn.Linear(2, 2)

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.blocks = nn.ModuleList([Block() for _ in range(8)])
    """)
    text = model + script("model = Net()\n", imports="")
    assert "use_regional_compilation=True" in plugin_line(convert(text))
    assert "use_regional_compilation=False" in plugin_line(convert(text, regional=False))


def test_few_blocks_are_not_repeated_blocks():
    model = "import torch\nfrom torch import nn\n\nclass Block(nn.Module):\n    pass\n\nclass Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.blocks = nn.ModuleList([Block() for _ in range(2)])\n"
    assert "use_regional_compilation" not in plugin_line(convert(model + script("model = Net()\n", imports="")))


def test_transformers_model_is_regional():
    text = script(
        "model = AutoModelForCausalLM.from_config(config)\n",
        imports="import torch\nfrom transformers import AutoModelForCausalLM\nconfig = None\n",
    )
    assert "use_regional_compilation=True" in plugin_line(convert(text))


def test_disagreeing_compiles_are_refused_unless_an_option_decides():
    text = script(
        'model = torch.nn.Linear(2, 1)\nmodel.compile(mode="default")\nmodel = torch.compile(model, mode="max-autotune")\n'
    )
    result = convert(text)
    assert result.refused and "set mode differently" in result.refused and "--mode" in result.refused
    assert result.text == text


# -- what is left alone -----------------------------------------------------------------------


def test_compiled_functions_are_left_alone():
    text = "import torch\n\n@torch.compile\ndef gelu(x):\n    return x\n\nfast = torch.compile(gelu)\n" + script(
        "model = torch.nn.Linear(2, 1)\n", imports=""
    )
    result = convert(text)
    assert "@torch.compile\ndef gelu(x):" in result.text
    assert "fast = torch.compile(gelu)" in result.text


def test_eval_loader_is_not_prepared():
    setup = "model = torch.nn.Linear(2, 1)\ntrain_dl = DataLoader(ds)\nval_dl = DataLoader(ds)\n"
    loop = """
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for x in train_dl:
            model(x).sum().backward()
        for x in val_dl:
            model(x)
    """
    result = convert(script(setup, loop, imports="import torch\nfrom torch.utils.data import DataLoader\nds = []\n"))
    assert "model, optimizer, train_dl = accelerator.prepare(model, optimizer, train_dl)" in result.text
    assert any("val_dl is not iterated" in note for note in result.notes)


def test_loaders_handed_once_to_a_fit_function_that_runs_the_epochs():
    """fastai style: ``fit(epochs, model, opt, train_dl, valid_dl)`` called once, outside any loop;
    the training loader (from a local helper) is prepared, the validation one stays whole."""
    imports = "import torch\nfrom data import build_loader\n"
    helpers = (
        "def get_data():\n    return build_loader('train'), build_loader('valid')\n\n\n"
        "def fit(epochs, model, opt, train_dl, valid_dl):\n"
        "    for epoch in range(epochs):\n"
        "        for x in train_dl:\n"
        "            model(x).sum().backward()\n"
        "            opt.step()\n"
        "        for x in valid_dl:\n"
        "            model(x)\n"
    )
    text = (
        imports
        + "\n\n"
        + helpers
        + "\n\ndef main():\n"
        + "    train_dl, valid_dl = get_data()\n"
        + "    model = torch.nn.Linear(2, 1)\n"
        + "    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        + "    fit(3, model, opt, train_dl, valid_dl)\n"
    )
    result = convert(text)
    assert result.refused is None, result.refused
    assert "model, opt, train_dl = accelerator.prepare(model, opt, train_dl)" in result.text
    assert not any("no DataLoader feeds the training loop" in n for n in result.notes)


def test_result_of_conversion_is_stable_and_already_accelerate_scripts_are_untouched():
    first = convert(HAND_COMPILED)
    second = convert(first.text)
    assert not second.changed and second.refused is None and second.text == first.text


# -- refusals ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text,reason",
    [
        ("import torch\nmodel = torch.nn.Linear(2, 1)\nprint(model(torch.randn(1, 2)))\n", "no training step found"),
        ("import torch\nx = torch.randn(2, requires_grad=True)\nx.sum().backward()\n", "no optimizer found"),
        ("import deepspeed\n" + HAND_COMPILED, "it uses DeepSpeed"),
        ("import lightning as L\n" + HAND_COMPILED, "it uses Lightning"),
        (
            "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
            + script("model = FSDP(torch.nn.Linear(2, 1))\n"),
            "shards the model with FSDP",
        ),
        (
            "import torch.multiprocessing as mp\n" + HAND_COMPILED + "mp.spawn(main, nprocs=2)\n",
            "main(), started by mp.spawn(...) at line 16, never calls init_process_group()",
        ),
        (
            "import torch.distributed.rpc as rpc\n" + HAND_COMPILED + "rpc.init_rpc('w', rank=0, world_size=1)\n",
            "torch.distributed.rpc",
        ),
        (
            "from torch.nn.parallel import DistributedDataParallel as DDP\n"
            + script("model = torch.nn.Linear(2, 1)\nmodel = DDP(model, [0], 0, 0)\n"),
            "DDP(...) at line 7 passes options other than the devices by position",
        ),
        ("def broken(:\n    pass\n", "cannot parse line 1"),
    ],
)
def test_refusals_leave_the_text_unchanged_with_one_clear_line(text, reason):
    result = convert(text)
    assert result.refused is not None and reason in result.refused, result.refused
    assert result.text == text and not result.changed and result.notes == []
    assert "\n" not in result.refused and result.refused.startswith("train.py: ")


def test_ddp_that_does_not_wrap_the_trained_model_is_refused():
    text = "from torch.nn.parallel import DistributedDataParallel as DDP\n" + script(
        "model = torch.nn.Linear(2, 1)\nddp_model = DDP(model)\n"
    )
    result = convert(text)
    assert result.refused and "DDP(...) at line 7 does not wrap the trained model in place" in result.refused


@pytest.mark.parametrize("wrap", ["DDP(model) if ddp else model", "model if not ddp else DDP(model)"])
def test_ddp_wrap_on_one_branch_of_a_conditional_becomes_the_model_it_wraps(wrap):
    """The DDP tutorial's ``ddp_model``, trained and saved under that name; the model's own name
    keeps the plain module (same parameters), so a whole-model save of it pickles that module, from
    the main process. (A flag that can be true: under ``ddp = False`` the wrap is dead code,
    test_dead_distribution.py.)"""
    text = "from torch.nn.parallel import DistributedDataParallel as DDP\n" + script(
        f"ddp = torch.cuda.device_count() > 1\nmodel = torch.nn.Linear(2, 1)\nddp_model = {wrap}\n",
        loop=LOOP.replace("model.parameters()", "ddp_model.parameters()").replace("model(", "ddp_model(")
        + '    torch.save(model, "model.pt")\n',
    )
    result = convert(text)
    assert result.refused is None, result.refused
    assert "    ddp_model = model\n" in result.text and "DDP" not in result.text
    assert "ddp_model, optimizer = accelerator.prepare(ddp_model, optimizer)" in result.text
    assert '    accelerator.save(model, "model.pt")\n' in result.text
    assert convert(result.text).changed is False


def test_ddp_wrap_of_another_model_on_a_conditional_is_still_refused():
    text = "from torch.nn.parallel import DistributedDataParallel as DDP\n" + script(
        "model = torch.nn.Linear(2, 1)\nother = torch.nn.Linear(2, 1)\nddp_model = DDP(model) if ddp else other\n",
        loop=LOOP.replace("model.parameters()", "ddp_model.parameters()"),
    )
    result = convert(text)
    assert result.refused and "does not wrap the trained model in place" in result.refused


def test_ddp_wrap_of_a_fresh_model_keeps_the_model_and_moves_options_to_the_kwargs_handler():
    text = "from torch.nn.parallel import DistributedDataParallel as DDP\n" + script(
        "model = DDP(torch.nn.Linear(2, 1), device_ids=[0], find_unused_parameters=True)\n"
    )
    result = convert(text)
    assert result.refused is None, result.refused
    assert "    model = torch.nn.Linear(2, 1)\n" in result.text
    assert "DDP" not in result.text
    assert "kwargs_handlers=[DistributedDataParallelKwargs(find_unused_parameters=True)]" in result.text
    assert "from accelerate.utils import DistributedDataParallelKwargs" in result.text or (
        "DistributedDataParallelKwargs, TorchDynamoPlugin" in result.text
    )


def test_own_process_group_is_kept_and_guarded_and_no_sync_goes_through_the_accelerator():
    text = (
        "import torch\nimport torch.distributed as dist\n"
        "from torch.nn.parallel import DistributedDataParallel as DDP\n\n\n"
        "def main():\n"
        "    dist.init_process_group('gloo')\n"
        "    model = DDP(torch.nn.Linear(2, 1))\n"
        "    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "    for step in range(4):\n"
        "        with model.no_sync():\n"
        "            model(torch.randn(4, 2)).sum().backward()\n"
        "        optimizer.step()\n"
        "    dist.destroy_process_group()\n"
    )
    result = convert(text)
    assert result.refused is None, result.refused
    assert "    if not dist.is_initialized():\n        dist.init_process_group('gloo')\n" in result.text
    assert "with accelerator.no_sync(model):" in result.text
    assert "Accelerator(dynamo_plugin=dynamo_plugin, cpu=not torch.cuda.is_available())" in result.text
    assert "dist.destroy_process_group()" in result.text
    assert convert(result.text).refused is None and not convert(result.text).changed


def test_name_clash_is_refused():
    result = convert(script("accelerator = 'gpu'\nmodel = torch.nn.Linear(2, 1)\n"))
    assert result.refused and "already uses the name 'accelerator'" in result.refused


def test_settings_that_are_assigned_too_late_are_refused():
    setup = (
        "model = torch.nn.Linear(2, 1).cuda()\nuse_compile = True\nif use_compile:\n    model = torch.compile(model)\n"
    )
    result = convert(script(setup))
    assert result.refused and "'use_compile'" in result.refused and "move that assignment up" in result.refused


def test_device_chosen_above_the_settings_is_set_again_after_the_accelerator():
    """nanoGPT-style config: ``device = "cuda"`` comes before the ``compile`` flag the plugin reads."""
    text = textwrap.dedent("""
        import torch
        device = "cuda"
        use_compile = True
        model = torch.nn.Linear(2, 1).to(device)
        if use_compile:
            model = torch.compile(model)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(3):
            model(torch.randn(2, 2).to(device)).sum().backward()
    """)
    result = convert(text)
    assert 'device = "cuda"\nuse_compile = True\n' in result.text
    assert (
        'dynamo_plugin = TorchDynamoPlugin(backend="inductor" if use_compile else "no")\n'
        "accelerator = Accelerator(dynamo_plugin=dynamo_plugin)\n"
        "device = accelerator.device.type\n"
        "model = torch.nn.Linear(2, 1).to(device)\n"
    ) in result.text


# -- static: no torch, nothing run ------------------------------------------------------------


def test_conversion_never_imports_torch_nor_runs_the_script(tmp_path):
    marker = tmp_path / "ran.txt"
    text = f"open({str(marker)!r}, 'w').close()\n" + HAND_COMPILED + "main()\n"
    program = textwrap.dedent(f"""
        import sys
        for name in ("torch", "accelerate", "transformers"):
            sys.modules[name] = None  # any import of them now fails
        from regcomp_lint.codemod import convert_source
        result = convert_source({text!r}, "train.py")
        assert result.changed and result.refused is None, result.refused
        print("ok")
    """)
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
    assert not marker.exists()


def test_convert_bytes_reports_undecodable_files():
    result = convert_bytes(b"# -*- coding: utf-8 -*-\nx = '\xff'\n", "bad.py")
    assert result.refused and result.refused.startswith("bad.py: cannot read")
    assert result.data == b"# -*- coding: utf-8 -*-\nx = '\xff'\n"


def test_convert_source_keeps_a_bom_in_text():
    result = convert("\ufeff" + HAND_COMPILED)
    assert result.changed and result.text.startswith("\ufeffimport torch") and result.text.count("\ufeff") == 1


def test_plan_for_another_model_is_reported():
    result = convert(HAND_COMPILED, plan=Plan(strategy="full", model="GPT"))
    assert any("the plan was made for model 'GPT'" in note for note in result.notes)
    assert not any(
        "the plan was made" in note for note in convert(HAND_COMPILED, plan=Plan(strategy="full", model="model")).notes
    )


def test_unknown_option_in_from_dict_is_an_error():
    with pytest.raises(ValueError, match="unknown conversion option 'backnd'"):
        ConvertOptions.from_dict({"backnd": "eager"})


# -- optimizers found by dataflow (issue 12) --------------------------------------------------


def test_parameter_count_is_not_an_optimizer():
    result = convert(script("model = torch.nn.Linear(2, 1)\nn_params = sum(p.numel() for p in model.parameters())\n"))
    assert result.refused is None, result.refused
    assert "model, optimizer = accelerator.prepare(model, optimizer)" in result.text
    assert "prepared: model, optimizer" in result.notes


def test_param_groups_filled_by_a_loop_over_the_model_train_that_model():
    """Barlow Twins' LARS: the groups come from `for p in model.parameters()`, the optimizer is the
    script's own Optimizer subclass; it refused "parameters whose model cannot be traced"."""
    setup = (
        "class LARS(torch.optim.Optimizer):\n    def __init__(self, params, lr):\n"
        "        super().__init__(params, dict(lr=lr))\n\n"
        "    def step(self):\n        pass\n\n"
        "model = torch.nn.Linear(2, 1)\nparam_weights, param_biases = [], []\n"
        "for param in model.parameters():\n    (param_biases if param.ndim == 1 else param_weights).append(param)\n"
        "parameters = [{'params': param_weights}, {'params': param_biases}]\n"
    )
    loop = LOOP.replace(
        "optimizer = torch.optim.SGD(model.parameters(), lr=0.1)", "optimizer = LARS(parameters, lr=0.1)"
    )
    result = convert(script(setup, loop))
    assert result.refused is None, result.refused
    assert "model, optimizer = accelerator.prepare(model, optimizer)" in result.text
    assert "prepared: model, optimizer" in result.notes
    # accelerate's AcceleratedOptimizer.step calls optimizer.step(closure): TypeError without it
    assert "    def step(self, closure=None):\n" in result.text


def test_optimizer_from_a_local_factory_function():
    text = textwrap.dedent("""
        import torch


        def make_optimizer(model, cfg):
            groups = []
            for name, param in model.named_parameters():
                groups.append({"params": [param], "weight_decay": 0.0 if name.endswith("bias") else cfg})
            opt = torch.optim.AdamW(groups, lr=1e-3)
            return opt


        def main():
            net = torch.nn.Linear(2, 1)
            opt = make_optimizer(net, 0.1)
            for step in range(10):
                loss = net(torch.randn(4, 2)).sum()
                opt.zero_grad()
                loss.backward()
                opt.step()
    """)
    result = convert(text)
    assert result.refused is None, result.refused
    assert "net, opt = accelerator.prepare(net, opt)" in result.text
    assert "prepared: net, opt" in result.notes


def test_optimizer_subclass_defined_in_the_script():
    subclass = """
        class Lion(torch.optim.Optimizer):
            def step(self, closure=None):
                return None
    """
    text = script(
        "model = torch.nn.Linear(2, 1)\nparams = list(model.parameters())\n",
        loop=LOOP.replace("torch.optim.SGD(model.parameters(), lr=0.1)", "Lion(params, defaults={})"),
    )
    text = text.replace("\n\ndef main", textwrap.dedent(subclass) + "\n\ndef main")
    result = convert(text)
    assert result.refused is None, result.refused
    assert "model, optimizer = accelerator.prepare(model, optimizer)" in result.text


def test_timm_optimizer_factory():
    text = script(
        "model = torch.nn.Linear(2, 1)\n",
        loop=LOOP.replace("torch.optim.SGD(model.parameters(), lr=0.1)", 'create_optimizer_v2(model, "adamw", lr=0.1)'),
        imports="import torch\nfrom timm.optim import create_optimizer_v2\n",
    )
    result = convert(text)
    assert result.refused is None, result.refused
    assert "model, optimizer = accelerator.prepare(model, optimizer)" in result.text


def test_refusal_names_what_was_fed_parameters_but_never_stepped():
    text = script(
        "model = torch.nn.Linear(2, 1)\nema = Averager(model.parameters())\n",
        loop="""
            for step in range(10):
                loss = model(torch.randn(4, 2)).sum()
                loss.backward()
                ema.update()
        """,
    )
    result = convert(text)
    assert result.refused is not None and "no optimizer found" in result.refused
    assert "'ema = Averager(model.parameters())' at line 6 is fed model parameters but is not used as an optimizer" in (
        result.refused
    )


# -- schedulers by where .step() runs (issue 12) ----------------------------------------------

TRAIN_ONE_EPOCH = """
def train_one_epoch(model, loader, optimizer):
    for x in loader:
        loss = model(x).sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
"""
EPOCHS = """
    import torch


    def main():
        model = torch.nn.Linear(2, 1)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1)
        loader = torch.utils.data.DataLoader(torch.randn(8, 2), batch_size=2)
        for epoch in range(3):
            {body}
"""


def test_per_epoch_scheduler_is_not_prepared():
    body = "for x in loader:\n    loss = model(x).sum()\n    loss.backward()\n    optimizer.step()\nscheduler.step()"
    result = convert(textwrap.dedent(EPOCHS).replace("{body}", body.replace("\n", "\n        ")))
    assert result.refused is None, result.refused
    assert "model, optimizer, loader = accelerator.prepare(model, optimizer, loader)" in result.text
    assert any(n.startswith("scheduler steps once per epoch (line 15): left unprepared") for n in result.notes)


def test_per_epoch_scheduler_through_a_training_function():
    body = "train_one_epoch(model, loader, optimizer)\nscheduler.step()"
    text = textwrap.dedent(EPOCHS).replace("{body}", body.replace("\n", "\n        "))
    result = convert(text.replace("\n\ndef main", TRAIN_ONE_EPOCH + "\n\ndef main"))
    assert result.refused is None, result.refused
    assert "model, optimizer, loader = accelerator.prepare(model, optimizer, loader)" in result.text
    assert any(n.startswith("scheduler steps once per epoch (line 19)") for n in result.notes)


def test_per_step_scheduler_is_prepared_also_with_accumulation_loops():
    body = (
        "for x in loader:\n    for micro in range(2):\n        loss = model(x).sum()\n        loss.backward()\n"
        "    scaler.step(optimizer)\n    scheduler.step()"
    )
    text = textwrap.dedent(EPOCHS).replace("{body}", body.replace("\n", "\n        "))
    text = text.replace("    for epoch in range(3):", "    scaler = torch.amp.GradScaler()\n    for epoch in range(3):")
    result = convert(text)
    assert result.refused is None, result.refused
    assert (
        "model, optimizer, loader, scheduler = accelerator.prepare(model, optimizer, loader, scheduler)" in result.text
    )
    assert not any("once per epoch" in n for n in result.notes)


def test_per_step_scheduler_stays_unprepared_when_no_loader_is_prepared():
    """Every process takes the original's steps (full-batch training, batches the script makes):
    a prepared scheduler, stepped once per process at each step, would run N times too fast."""
    body = "loss = model(torch.randn(8, 2)).sum()\nloss.backward()\noptimizer.step()\nscheduler.step()"
    result = convert(textwrap.dedent(EPOCHS).replace("{body}", body.replace("\n", "\n        ")))
    assert result.refused is None, result.refused
    assert "model, optimizer = accelerator.prepare(model, optimizer)" in result.text
    assert any(n.startswith("scheduler steps once per optimizer step, and no DataLoader") for n in result.notes)


# -- checkpoint load side (issue 12) ----------------------------------------------------------


def test_model_load_state_dict_loads_into_the_unwrapped_model():
    text = script(
        "model = torch.nn.Linear(2, 1)\noptimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        'checkpoint = torch.load("ckpt.pt")\nmodel.load_state_dict(checkpoint["model"])\n'
        'optimizer.load_state_dict(checkpoint["optimizer"])\n',
        loop=LOOP.replace("    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n", "")
        + '    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()}, "ckpt.pt")\n',
    )
    result = convert(text)
    assert result.refused is None, result.refused
    assert (
        'accelerator.unwrap_model(model, keep_torch_compile=False).load_state_dict(checkpoint["model"])' in result.text
    )
    assert '"model": accelerator.unwrap_model(model, keep_torch_compile=False).state_dict()' in result.text
    assert 'optimizer.load_state_dict(checkpoint["optimizer"])' in result.text  # the prepared optimizer loads its own
    assert any("load_state_dict() into the prepared model" in n for n in result.notes)
    assert convert(result.text).changed is False


def test_whole_model_save_pickles_the_unwrapped_model_once():
    text = script(
        "model = torch.nn.Linear(2, 1)\n",
        loop=LOOP + '    torch.save(model, "model.pt")\n    torch.save(optimizer.state_dict(), "opt.pt")\n',
    )
    result = convert(text)
    assert result.refused is None, result.refused
    assert 'accelerator.save(accelerator.unwrap_model(model, keep_torch_compile=False), "model.pt")' in result.text
    # not a model: saved as it is, by the main process
    assert 'accelerator.save(optimizer.state_dict(), "opt.pt")' in result.text
    assert any("torch.save of the whole model (line 13)" in n for n in result.notes)
    assert convert(result.text).changed is False


METHODS_AFTER_PREPARE = """import torch
import torch.nn as nn


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = nn.Linear(4, 4)

    def forward(self, x):
        return self.head(x)

    def configure_optimizers(self, lr):
        return torch.optim.AdamW(self.parameters(), lr=lr)

    @torch.no_grad()
    def generate(self, x):
        return self(x).argmax(-1)


def evaluate(model, data):
    model.eval()
    out = model.generate(data)
    model.train()
    return out


def main():
    model = GPT()
    optimizer = model.configure_optimizers(1e-3)
    for step in range(10):
        loss = model(torch.randn(2, 4)).sum()
        loss.backward()
        optimizer.step()
        model.head.weight.grad = None
        if step % 5 == 0:
            print(evaluate(model, torch.randn(2, 4)))
"""


def test_model_own_attributes_after_prepare_are_read_from_the_unwrapped_model():
    """DDP does not pass ``generate``/``head`` through; nn.Module's API (eval/train) and anything
    before prepare (configure_optimizers builds the optimizer) stay as they are."""
    result = convert(METHODS_AFTER_PREPARE)
    assert result.refused is None, result.refused
    assert "    optimizer = model.configure_optimizers(1e-3)\n" in result.text
    assert "    out = accelerator.unwrap_model(model, keep_torch_compile=False).generate(data)\n" in result.text
    assert "    model.eval()\n" in result.text and "    model.train()\n" in result.text
    assert "        accelerator.unwrap_model(model, keep_torch_compile=False).head.weight.grad = None\n" in result.text
    assert "def evaluate(model, data, accelerator):" in result.text
    assert not convert(result.text).changed


def test_a_closure_handed_to_the_optimizer_trains_where_it_is_defined():
    """LBFGS: backward() inside ``closure`` passed to ``optimizer.step(closure)``."""
    text = (
        "import torch\nmodel = torch.nn.Linear(4, 1)\nx, y = torch.randn(8, 4), torch.randn(8, 1)\n"
        "optimizer = torch.optim.LBFGS(model.parameters())\nfor i in range(10):\n"
        "    def closure():\n        optimizer.zero_grad()\n        loss = ((model(x) - y) ** 2).mean()\n"
        "        loss.backward()\n        return loss\n    optimizer.step(closure)\n"
    )
    result = convert(text)
    assert result.refused is None, result.refused
    assert "        accelerator.backward(loss)\n" in result.text
    # nothing in it ever goes to a device: it keeps training on the CPU
    assert "Accelerator(dynamo_plugin=dynamo_plugin, cpu=True)" in result.text


def test_a_ddp_script_whose_backward_is_in_another_module_is_refused_not_skipped():
    text = (
        "import torch\nfrom torch.nn.parallel import DistributedDataParallel as DDP\nfrom engine import train_one_epoch\n\n"
        "model = DDP(torch.nn.Linear(4, 1))\noptimizer = torch.optim.AdamW(model.parameters())\n"
        "for epoch in range(3):\n    train_one_epoch(model, optimizer)\n"
    )
    result = convert(text)
    # the function handed the model and its optimizer is named (survey 18b), as a readable one is
    assert (
        result.refused
        and (
            "the training loop runs in engine.train_one_epoch(), which it imports and runs at line 8 (handing it model); "
            "engine.py is not found next to the script"
        )
        in result.refused
    )


def test_device_flags_of_the_script_become_the_accelerators_cpu_choice():
    text = (
        "import argparse\nimport torch\n\n\ndef main():\n    parser = argparse.ArgumentParser()\n"
        "    parser.add_argument('--no-cuda', action='store_true')\n    args = parser.parse_args()\n"
        "    use_cuda = not args.no_cuda and torch.cuda.is_available()\n"
        "    device = torch.device('cuda' if use_cuda else 'cpu')\n"
        "    model = torch.nn.Linear(4, 1).to(device)\n    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "    for step in range(3):\n        loss = model(torch.randn(2, 4, device=device)).sum()\n"
        "        loss.backward()\n        optimizer.step()\n"
    )
    result = convert(text)
    assert result.refused is None, result.refused
    assert "Accelerator(dynamo_plugin=dynamo_plugin, cpu=not use_cuda)" in result.text
    assert "    device = accelerator.device\n" in result.text


def test_optimizer_built_from_the_unwrapped_alias_prepares_the_wrapped_model():
    """llm.c: ``model = DDP(model)``, ``raw_model = model.module``, optimizer from ``raw_model``."""
    text = (
        "import torch\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n\n\ndef main():\n"
        "    model = torch.nn.Linear(4, 4)\n    model = DDP(model)\n    raw_model = model.module\n"
        "    optimizer = torch.optim.AdamW(raw_model.parameters())\n    for step in range(3):\n"
        "        loss = model(torch.randn(2, 4)).sum()\n        loss.backward()\n        optimizer.step()\n"
    )
    result = convert(text)
    assert result.refused is None, result.refused
    assert "model, optimizer = accelerator.prepare(model, optimizer)" in result.text
    assert "raw_model = accelerator.unwrap_model(model, keep_torch_compile=False)" in result.text


def test_dataparallel_on_a_submodule_and_chained_moves_are_removed_for_prepare():
    """The ImageNet example: ``model.features = DataParallel(model.features)`` (AlexNet/VGG) and
    ``model = DataParallel(model).cuda()``; an if/else over devices is not a CPU switch."""
    text = (
        "import torch\n\n\ndef main(arch, gpu):\n    model = torch.nn.Sequential(torch.nn.Linear(4, 4))\n"
        "    if gpu is not None:\n        model.cuda(gpu)\n    elif arch.startswith('vgg'):\n"
        "        model.features = torch.nn.DataParallel(model.features)\n        model.cuda()\n"
        "    else:\n        model = torch.nn.DataParallel(model).cuda()\n"
        "    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n    for step in range(3):\n"
        "        loss = model(torch.randn(2, 4).cuda()).sum()\n        loss.backward()\n        optimizer.step()\n"
    )
    result = convert(text)
    assert result.refused is None, result.refused
    assert "DataParallel" not in result.text
    assert "        model = model.to(accelerator.device)\n" in result.text
    assert "Accelerator(dynamo_plugin=dynamo_plugin)\n" in result.text  # no cpu= from `if gpu is not None`


def test_evaluation_code_the_scope_calls_follows_the_accelerators_device():
    """RC403 reports ``.cuda()`` in evaluation code that uses the prepared model; the fixer moves it
    too, and a function nested in it reads its definer's ``accelerator`` as a closure."""
    text = (
        "import torch\n\n\ndef validate(loader, model):\n    def run(batches):\n        for x in batches:\n"
        "            model(x.cuda())\n    run(loader)\n\n\ndef main(loader):\n"
        "    model = torch.nn.Linear(4, 1).cuda()\n    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "    for x in loader:\n        model(x.cuda()).sum().backward()\n        optimizer.step()\n"
        "    validate(loader, model)\n"
    )
    result = convert(text)
    assert result.refused is None, result.refused
    assert "def validate(loader, model, accelerator):\n    def run(batches):\n" in result.text
    assert "            model(x.to(accelerator.device))\n" in result.text
    assert "    validate(loader, model, accelerator=accelerator)\n" in result.text


# -- found on real public training scripts -------------------------------------------------------
REAL_WORLD_REFUSALS = {
    # hkproj's transformer: the loss comes from several methods of the model in turn (one method
    # alone converts through a wrapper module: tests/codemod/test_method_loss.py)
    "custom methods": (
        "import torch\nclass T(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.enc = torch.nn.Linear(4, 4)\n        self.proj = torch.nn.Linear(4, 2)\n"
        "    def encode(self, x):\n        return self.enc(x)\n    def project(self, x):\n        return self.proj(x)\n"
        "model = T()\nopt = torch.optim.Adam(model.parameters())\nfor step in range(3):\n"
        "    out = model.project(model.encode(torch.randn(8, 4)))\n    loss = -out.mean()\n    opt.zero_grad()\n"
        "    loss.backward()\n    opt.step()\n",
        "computes the loss with the model's own method: through the prepared model it would bypass DDP's gradient "
        "sync and the compile (only forward() goes through them), and the loss comes from several of its methods",
    ),
    # pytorch/examples mnist_forward_forward: each layer owns its optimizer
    "self-owned optimizer": (
        "import torch\nclass Layer(torch.nn.Linear):\n    def __init__(self):\n        super().__init__(4, 4)\n"
        "        self.opt = torch.optim.Adam(self.parameters())\n    def train_step(self, x):\n"
        "        loss = self(x).sum()\n        self.opt.zero_grad()\n        loss.backward()\n        self.opt.step()\n"
        "layer = Layer()\nfor i in range(3):\n    layer.train_step(torch.randn(2, 4))\n",
        "built from self.parameters()",
    ),
    # WGAN-GP: a gradient penalty
    "double backward": (
        "import torch\nD = torch.nn.Linear(4, 1)\nopt = torch.optim.Adam(D.parameters())\nfor i in range(3):\n"
        "    x = torch.randn(8, 4, requires_grad=True)\n"
        "    g = torch.autograd.grad(D(x).sum(), x, create_graph=True)[0]\n"
        "    loss = D(x).mean() + (g.norm(2, dim=1) - 1).pow(2).mean()\n    opt.zero_grad()\n    loss.backward()\n"
        "    opt.step()\n",
        "create_graph=True) at line 6",
    ),
}


@pytest.mark.parametrize("case", REAL_WORLD_REFUSALS)
def test_real_world_constructs_that_would_train_wrongly_are_refused(case):
    text, words = REAL_WORLD_REFUSALS[case]
    result = convert(text)
    assert result.refused and words in result.refused, result.refused
    assert result.text == text and not result.changed


def test_a_metric_stepped_scheduler_stays_unprepared():
    """ReduceLROnPlateau (milesial/Pytorch-UNet): prepared, its patience would run out N times faster."""
    text = script(
        "model = torch.nn.Linear(2, 2)\nloader = torch.utils.data.DataLoader(list(range(8)))\n"
        "optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "sched = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, patience=2)\n",
        loop="""
        for epoch in range(3):
            for x in loader:
                loss = model(torch.randn(4, 2)).sum()
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
            sched.step(loss.item())
        """,
    )
    result = convert(text)
    assert not result.refused, result.refused
    assert "sched steps with a value" in "\n".join(result.notes)
    assert "accelerator.prepare(model, optimizer, loader)" in result.text


def test_a_loader_from_another_modules_helper_is_prepared():
    """pytorch/examples language_translation: `train_dl, valid_dl = get_data()` from its own module.
    Whatever the training loop iterates is prepared (a DataLoader gets sharded, anything else comes
    back unchanged); the evaluation loader stays whole; range() is never prepared."""
    text = (
        "import torch\nfrom data import get_data\n\ndef fit(model, loader, opt):\n    for x, y in loader:\n"
        "        loss = torch.nn.functional.cross_entropy(model(x), y)\n        opt.zero_grad()\n"
        "        loss.backward()\n        opt.step()\n\ndef main():\n    train_dl, valid_dl = get_data()\n"
        "    steps = range(3)\n    model = torch.nn.Linear(10, 2)\n    opt = torch.optim.Adam(model.parameters())\n"
        "    for epoch in steps:\n        fit(model, train_dl, opt)\n    for x, y in valid_dl:\n        model(x)\n"
    )
    result = convert(text)
    assert not result.refused, result.refused
    assert "model, opt, train_dl = accelerator.prepare(model, opt, train_dl)" in result.text
    assert any(note.startswith("train_dl (from get_data(), line 12) feeds the training loop") for note in result.notes)


def test_a_gpu_index_test_is_not_a_cpu_switch():
    """moco: `if args.gpu is not None: x = x.cuda(args.gpu)` picks a GPU; it must not send runs without --gpu to the CPU."""
    text = script(
        "model = torch.nn.Linear(2, 2)\n",
        loop="""
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            x = torch.randn(4, 2)
            if args.gpu is not None:
                x = x.cuda(args.gpu, non_blocking=True)
            loss = model(x).sum()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        """,
    )
    result = convert(text)
    assert not result.refused, result.refused
    assert "args.gpu" not in result.text.split("Accelerator(")[1].split("\n")[0]


def test_a_script_that_trains_twice_prepares_each_run_before_it():
    """The transfer-learning tutorial: ``train_model(model_ft, ...)``, then a second model and
    optimizer and ``train_model(model_conv, ...)``: each run's objects are prepared just before it."""
    text = (
        "import torch\n\n\n"
        "def train_model(model, optimizer):\n"
        "    for step in range(3):\n"
        "        optimizer.zero_grad()\n        model(torch.randn(2, 4)).sum().backward()\n        optimizer.step()\n"
        "    return model\n\n\n"
        "model_ft = torch.nn.Linear(4, 1)\noptimizer_ft = torch.optim.SGD(model_ft.parameters(), lr=0.1)\n"
        "model_ft = train_model(model_ft, optimizer_ft)\n"
        "model_conv = torch.nn.Linear(4, 1)\noptimizer_conv = torch.optim.SGD(model_conv.parameters(), lr=0.1)\n"
        "model_conv = train_model(model_conv, optimizer_conv)\n"
        "torch.save(model_conv.state_dict(), 'conv.pt')\n"
    )
    result = convert(text)
    assert result.refused is None, result.refused
    assert (
        "model_ft, optimizer_ft = accelerator.prepare(model_ft, optimizer_ft)\n"
        "model_ft = train_model(model_ft, optimizer_ft)\n"
        "model_conv = torch.nn.Linear(4, 1)\noptimizer_conv = torch.optim.SGD(model_conv.parameters(), lr=0.1)\n"
        "model_conv, optimizer_conv = accelerator.prepare(model_conv, optimizer_conv)\n"
        "model_conv = train_model(model_conv, optimizer_conv)\n"
        "accelerator.save(accelerator.unwrap_model(model_conv, keep_torch_compile=False).state_dict(), 'conv.pt')\n"
    ) in result.text, result.text
    assert any("trains 2 times in sequence (lines 14, 17)" in note for note in result.notes), result.notes


def test_a_training_function_handed_its_model_and_never_called_here_is_refused():
    """The Hogwild example's train.py: ``train(rank, args, model, ...)`` is started by main.py's
    ``mp.Process``; an Accelerator made inside would be made on every call."""
    text = (
        "import torch\n\n\n"
        "def train(rank, model):\n"
        "    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "    for step in range(3):\n"
        "        optimizer.zero_grad()\n        model(torch.randn(2, 4)).sum().backward()\n        optimizer.step()\n"
    )
    refused = convert(text).refused
    assert refused is not None and "train() is handed its model and is not called in this file" in refused


def test_a_loader_a_training_function_builds_each_epoch_is_prepared_where_it_is_built():
    """The translation tutorial's ``train_epoch`` builds ``DataLoader(train_iter, ...)`` itself."""
    text = (
        "import torch\nfrom torch.utils.data import DataLoader\n\n"
        "data = [torch.randn(4) for _ in range(8)]\n"
        "model = torch.nn.Linear(4, 1)\noptimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n\n\n"
        "def train_epoch(model, optimizer):\n"
        "    loader = DataLoader(data, batch_size=2)\n"
        "    for x in loader:\n"
        "        optimizer.zero_grad()\n        model(x).sum().backward()\n        optimizer.step()\n\n\n"
        "for epoch in range(2):\n    train_epoch(model, optimizer)\n"
    )
    result = convert(text)
    assert result.refused is None, result.refused
    assert "    loader = accelerator.prepare(DataLoader(data, batch_size=2))\n" in result.text


def test_a_model_built_anew_in_each_fold_is_prepared_in_each_fold():
    """Kaggle's k-fold loop: each fold's objects are prepared in that fold, the Accelerator made
    once before the loop, and free_memory() drops the previous fold's objects first."""
    text = (
        "import torch\n\n\n"
        "def run_training(model, optimizer):\n"
        "    for step in range(3):\n"
        "        optimizer.zero_grad()\n        model(torch.randn(2, 4)).sum().backward()\n        optimizer.step()\n"
        "    return model\n\n\n"
        "for fold in range(5):\n"
        "    model = torch.nn.Linear(4, 1)\n    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "    model = run_training(model, optimizer)\n"
    )
    result = convert(text)
    assert result.refused is None, result.refused
    assert (
        "accelerator = Accelerator(dynamo_plugin=dynamo_plugin, cpu=True)\nfor fold in range(5):\n"
        "    model = torch.nn.Linear(4, 1)\n    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "    accelerator.free_memory()\n    model, optimizer = accelerator.prepare(model, optimizer)\n"
        "    model = run_training(model, optimizer)\n"
    ) in result.text, result.text
    assert any("built anew in each pass of the loop at line 12" in note for note in result.notes), result.notes


def test_a_model_built_anew_in_each_fold_on_a_loader_built_once_is_refused_naming_the_loop():
    """Preparing the loader again in every pass would shard the already sharded loader."""
    text = (
        "import torch\nfrom torch.utils.data import DataLoader\n\n"
        "loader = DataLoader([torch.randn(4) for _ in range(8)], batch_size=2)\n"
        "for fold in range(5):\n"
        "    model = torch.nn.Linear(4, 1)\n    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "    for x in loader:\n"
        "        optimizer.zero_grad()\n        model(x).sum().backward()\n        optimizer.step()\n"
    )
    refused = convert(text).refused
    assert refused is not None and "built anew in each pass of the loop at line 5" in refused
    assert "not converted: model and optimizer are built anew" in refused, refused


def test_an_optimizer_rebuilt_inside_the_epoch_loop_is_prepared_where_it_is_built():
    """yunjey's tutorials decay the LR by building a new optimizer of the same model each epoch."""
    text = (
        "import torch\n\n"
        "model = torch.nn.Linear(4, 1)\nlr = 0.1\n"
        "optimizer = torch.optim.SGD(model.parameters(), lr=lr)\n"
        "for epoch in range(4):\n"
        "    for step in range(3):\n"
        "        optimizer.zero_grad()\n        model(torch.randn(2, 4)).sum().backward()\n        optimizer.step()\n"
        "    if (epoch + 1) % 2 == 0:\n"
        "        lr /= 3\n"
        "        optimizer = torch.optim.SGD(model.parameters(), lr=lr)\n"
    )
    result = convert(text)
    assert result.refused is None, result.refused
    assert "        optimizer = accelerator.prepare(torch.optim.SGD(model.parameters(), lr=lr))\n" in result.text
    assert "model, optimizer = accelerator.prepare(model, optimizer)\n" in result.text
    assert any("built again at line 13" in note for note in result.notes), result.notes


def test_an_optimizer_rebuilt_in_the_loop_while_a_scheduler_holds_the_old_one_is_refused():
    text = (
        "import torch\n\n"
        "model = torch.nn.Linear(4, 1)\n"
        "optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 1)\n"
        "for epoch in range(4):\n"
        "    for step in range(3):\n"
        "        optimizer.zero_grad()\n        model(torch.randn(2, 4)).sum().backward()\n        optimizer.step()\n"
        "    scheduler.step()\n"
        "    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)\n"
    )
    refused = convert(text).refused
    assert refused is not None and "not converted: optimizer is built anew" in refused, refused


def test_a_hand_wrapped_model_with_untraceable_optimizers_is_refused_naming_the_wrap():
    """modded-nanogpt: its own DDP, optimizers over pieces of ``raw_model``."""
    text = (
        "import torch\nimport torch.distributed as dist\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n\n"
        "dist.init_process_group('gloo')\n"
        "model = DDP(torch.nn.Linear(4, 1))\nraw_model = model.module\n"
        "params = get_matrix_params(raw_model.weight)\n"
        "optimizer = torch.optim.SGD(params, lr=0.1)\n"
        "for step in range(3):\n"
        "    optimizer.zero_grad()\n    model(torch.randn(2, 4)).sum().backward()\n    optimizer.step()\n"
    )
    refused = convert(text).refused
    assert refused is not None and "it wraps the model for data parallelism by hand" in refused, refused


def test_prepare_follows_a_copy_of_the_model_made_after_its_optimizer():
    """timm's ModelEma written out in a script (its ``__init__`` deep-copies the model) and
    torch's AveragedModel: made of the prepared model, the copy would be a DDP or compile wrapper."""
    text = (
        "import copy\nimport torch\nfrom torch.optim.swa_utils import AveragedModel\n\n\n"
        "class ModelEma:\n"
        "    def __init__(self, model, decay=0.99):\n"
        "        self.module = copy.deepcopy(model)\n\n\n"
        "model = torch.nn.Linear(4, 1)\noptimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "ema = ModelEma(model)\nswa = AveragedModel(model)\n"
        "for step in range(3):\n"
        "    optimizer.zero_grad()\n    model(torch.randn(2, 4)).sum().backward()\n    optimizer.step()\n"
    )
    result = convert(text)
    assert result.refused is None, result.refused
    assert (
        'ema = ModelEma(model)\nswa = AveragedModel(model)\ndynamo_plugin = TorchDynamoPlugin(backend="inductor")\n'
    ) in result.text, result.text
    assert result.text.index("model, optimizer = accelerator.prepare(model, optimizer)") > result.text.index(
        "swa = AveragedModel(model)"
    )
    assert any("a copy of the model (an average)" in note for note in result.notes), result.notes


def test_a_copy_of_the_parameters_only_does_not_move_prepare():
    """torch_ema's ExponentialMovingAverage(model.parameters()) keeps the parameters themselves."""
    text = (
        "import torch\nfrom torch_ema import ExponentialMovingAverage\n\n"
        "model = torch.nn.Linear(4, 1)\noptimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "ema = ExponentialMovingAverage(model.parameters(), decay=0.99)\n"
        "for step in range(3):\n"
        "    optimizer.zero_grad()\n    model(torch.randn(2, 4)).sum().backward()\n    optimizer.step()\n"
        "    ema.update()\n"
    )
    result = convert(text)
    assert result.refused is None, result.refused
    assert not any("a copy of the model" in note for note in result.notes), result.notes


def test_a_backward_that_processes_other_than_the_main_one_return_before_is_refused():
    """``if rank != 0 and args.main_only: return`` ahead of the step's backward: once prepared, the
    main process waits in the all-reduce for processes that returned."""
    text = (
        "import argparse\nimport os\nimport torch\n\n"
        "parser = argparse.ArgumentParser()\nparser.add_argument('--main-only', action='store_true')\n"
        "args = parser.parse_args()\nrank = int(os.environ.get('RANK', 0))\n"
        "model = torch.nn.Linear(4, 1)\noptimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n\n\n"
        "def train_step(x):\n"
        "    if rank != 0 and args.main_only:\n        return\n"
        "    optimizer.zero_grad()\n    model(x).sum().backward()\n    optimizer.step()\n\n\n"
        "for step in range(3):\n    train_step(torch.randn(2, 4))\n"
    )
    refused = convert(text).refused
    assert (
        refused is not None
        and (
            "model(x).sum().backward() at line 17 is skipped by the `return` under `if rank != 0 and args.main_only` "
            "(line 14) on some processes only"
        )
        in refused
    ), refused


def test_a_return_in_a_function_defined_ahead_of_the_step_does_not_skip_it():
    """eeg_lpft (survey25a): ``def log_fn(d): if not is_main(rank): return`` defined in ``main()``
    ahead of the training call; a ``def`` statement runs none of its body, so its ``return`` leaves
    ``log_fn``, not ``main()``: every process still trains."""
    text = (
        "import os\nimport torch\n\n"
        "def main():\n"
        "    rank = int(os.environ.get('RANK', 0))\n"
        "    model = torch.nn.Linear(4, 1)\n    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n\n"
        "    def log_fn(d):\n        if rank != 0: return\n        print(d)\n\n"
        "    for step in range(3):\n"
        "        optimizer.zero_grad()\n        loss = model(torch.randn(2, 4)).sum()\n        loss.backward()\n"
        "        optimizer.step()\n        log_fn(loss.item())\n\n\n"
        "main()\n"
    )
    result = convert(text)
    assert result.refused is None, result.refused


def test_a_backward_only_the_main_process_runs_is_refused_naming_the_test():
    """llm.c dumps one step's gradients on the master process before training: under DDP that
    backward would wait in the all-reduce for processes that never run it."""
    text = (
        "import os\nimport torch\n\n"
        "master_process = int(os.environ.get('RANK', 0)) == 0\n"
        "model = torch.nn.Linear(4, 1)\noptimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "if master_process:\n"
        "    model(torch.randn(2, 4)).sum().backward()\n"
        "    optimizer.zero_grad()\n"
        "for step in range(3):\n"
        "    optimizer.zero_grad()\n    model(torch.randn(2, 4)).sum().backward()\n    optimizer.step()\n"
    )
    refused = convert(text).refused
    assert (
        refused is not None and "at line 8 trains on the main process only (`if master_process` at line 7)" in refused
    )


def test_a_cpu_default_replaced_by_the_autodetect_that_follows_is_not_a_cpu_choice():
    """llm.c: ``else: device = "cpu"; if torch.cuda.is_available(): device = "cuda"`` is a
    default, not the script choosing the CPU (it gave ``cpu=... or not args.device``: the CPU on
    a GPU machine whenever --device was left out)."""
    text = (
        "import argparse\nimport torch\n\n"
        "parser = argparse.ArgumentParser()\nparser.add_argument('--device', default='')\nargs = parser.parse_args()\n"
        "if args.device:\n    device = args.device\nelse:\n    device = 'cpu'\n"
        "    if torch.cuda.is_available():\n        device = 'cuda'\n"
        "model = torch.nn.Linear(4, 1).to(device)\noptimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "for step in range(3):\n"
        "    optimizer.zero_grad()\n    model(torch.randn(2, 4, device=device)).sum().backward()\n    optimizer.step()\n"
    )
    result = convert(text)
    assert result.refused is None, result.refused
    assert "not args.device" not in result.text, result.text


def test_a_step_under_a_rank_test_whose_else_also_trains_is_not_refused():
    """VITS: ``if rank == 0: train_and_evaluate(..., logger) else: train_and_evaluate(..., None)``."""
    text = (
        "import torch\n\n\n"
        "def train(model, optimizer, log):\n"
        "    optimizer.zero_grad()\n    model(torch.randn(2, 4)).sum().backward()\n    optimizer.step()\n\n\n"
        "rank = 0\nmodel = torch.nn.Linear(4, 1)\noptimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "for epoch in range(3):\n"
        "    if rank == 0:\n        train(model, optimizer, print)\n    else:\n        train(model, optimizer, None)\n"
    )
    result = convert(text)
    assert result.refused is None, result.refused


def test_a_skip_on_whether_the_run_is_distributed_still_converts():
    """``if args.local_rank != -1 and step % 2: continue``: no process has rank -1 (it means "not
    launched distributed"), so the test is the same on every process; only a comparison that some
    ranks pass and others fail (``rank != 0``) decides per process."""
    text = (
        "import argparse\nimport torch\n\n"
        "parser = argparse.ArgumentParser()\nparser.add_argument('--local_rank', type=int, default=-1)\n"
        "parser.add_argument('--skip', action='store_true')\nargs = parser.parse_args()\n"
        "model = torch.nn.Linear(4, 1)\noptimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n\n"
        "for step in range(3):\n"
        "    if args.local_rank != -1 and args.skip:\n        continue\n"
        "    optimizer.zero_grad()\n    model(torch.randn(2, 4)).sum().backward()\n    optimizer.step()\n"
    )
    result = convert(text)
    assert result.refused is None, result.refused
    refused = convert(text.replace("!= -1", "> 0")).refused
    assert refused is not None and "on some processes only" in refused, refused
