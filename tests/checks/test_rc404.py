"""RC404 behaviour beyond the examples: which accelerators compile, which saves are judged,
which fix is safe."""

from __future__ import annotations

import pytest

from regcomp_lint.api import fix_source, lint_source
from regcomp_lint.diagnostics import Applicability
from regcomp_lint.lint.config import Settings

ONLY = Settings(select=("RC404",))
HEAD = "from accelerate import Accelerator\nfrom accelerate.utils import TorchDynamoPlugin, DynamoBackend\n"
SAVE = "model = acc.prepare(model)\nsd = acc.unwrap_model(model).state_dict()\n"


def rc404(src: str):
    return [d for d in lint_source(src, "train.py", ONLY) if d.code == "RC404"]


@pytest.mark.parametrize(
    "setup",
    [
        "acc = Accelerator(dynamo_backend='inductor')\n",
        "acc = Accelerator(dynamo_backend=DynamoBackend.INDUCTOR)\n",
        "acc = Accelerator(dynamo_plugin=TorchDynamoPlugin(backend=args.backend))\n",
        "acc = Accelerator(dynamo_plugin=TorchDynamoPlugin('eager'))\n",
        "acc = Accelerator(dynamo_plugin=make_plugin())\n",
        "plugin = TorchDynamoPlugin(backend='inductor', use_regional_compilation=True)\nacc = Accelerator(dynamo_plugin=plugin)\n",
    ],
)
def test_accelerators_that_compile(setup):
    assert len(rc404(HEAD + setup + SAVE)) == 1


@pytest.mark.parametrize(
    "setup",
    [
        "acc = Accelerator()\n",
        "acc = Accelerator(dynamo_backend='no')\n",
        "acc = Accelerator(dynamo_backend=DynamoBackend.NO)\n",
        "acc = Accelerator(dynamo_plugin=TorchDynamoPlugin())\n",
        "acc = Accelerator(dynamo_plugin=TorchDynamoPlugin(backend='inductor', disable=True))\n",
        "acc = Accelerator(dynamo_plugin=None)\n",
    ],
)
def test_accelerators_that_do_not_compile(setup):
    assert rc404(HEAD + setup + SAVE) == []


def test_unwrap_fix_is_safe_and_applied_by_default():
    src = HEAD + "acc = Accelerator(dynamo_backend='inductor')\n" + SAVE
    [diag] = rc404(src)
    assert diag.fix.applicability is Applicability.SAFE
    fixed, remaining = fix_source(src, config=ONLY)
    assert fixed.endswith("sd = acc.unwrap_model(model, keep_torch_compile=False).state_dict()\n")
    assert remaining == []


def test_save_model_fix_is_unsafe_and_reuses_the_receiver():
    src = (
        HEAD
        + "class T:\n    def __init__(self):\n        self.acc = Accelerator(dynamo_backend='inductor')\n"
        + ("    def save(self, model):\n        self.acc.save_model(model=model, save_directory='out')\n")
    )
    [diag] = rc404(src)
    assert diag.fix.applicability is Applicability.UNSAFE
    assert fix_source(src, config=ONLY)[0] == src
    assert (
        "self.acc.save_model(model=self.acc.unwrap_model(model, keep_torch_compile=False), save_directory='out')"
        in (fix_source(src, config=ONLY, unsafe=True)[0])
    )


def test_unwrap_without_a_save_is_not_reported():
    src = (
        HEAD
        + "acc = Accelerator(dynamo_backend='inductor')\nmodel = acc.prepare(model)\n"
        + ("net = acc.unwrap_model(model)\nprint(net.config)\nout = net.generate(ids)\n")
    )
    assert rc404(src) == []


def test_save_pretrained_only_when_regional_may_be_on():
    save = "model = acc.prepare(model)\nacc.unwrap_model(model).save_pretrained('out')\n"
    assert rc404(HEAD + "acc = Accelerator(dynamo_plugin=TorchDynamoPlugin(backend='inductor'))\n" + save) == []
    assert (
        len(
            rc404(
                HEAD
                + "acc = Accelerator(dynamo_plugin=TorchDynamoPlugin(backend='inductor', use_regional_compilation=flag))\n"
                + save
            )
        )
        == 1
    )
    assert (
        len(
            rc404(
                HEAD
                + "acc = Accelerator(dynamo_plugin=TorchDynamoPlugin(backend='inductor', use_regional_compilation=True))\n"
                + save
            )
        )
        == 1
    )


def test_accelerator_passed_in_uses_the_files_accelerators():
    body = "def save(accelerator, model):\n    accelerator.save_model(model, 'out')\n"
    assert len(rc404(HEAD + "ACC = Accelerator(dynamo_backend='inductor')\n" + body)) == 1
    assert rc404(HEAD + "ACC = Accelerator()\n" + body) == []


def test_hand_compiled_model_given_to_save_model_without_a_plugin():
    src = "import torch\nfrom accelerate import Accelerator\nacc = Accelerator()\nmodel = torch.compile(model)\nacc.save_model(model, 'out')\n"
    assert len(rc404(src)) == 1


def test_unconditional_compile_gets_the_plain_fix_conditional_the_getattr_one():
    plain = "import torch\nm = torch.compile(net)\nsd = m.state_dict()\n"
    assert fix_source(plain, config=ONLY, unsafe=True)[0].endswith("sd = m._orig_mod.state_dict()\n")
    cond = "import torch\nm = net\nif flag:\n    m = torch.compile(net)\nsd = m.state_dict()\n"
    assert fix_source(cond, config=ONLY, unsafe=True)[0].endswith('sd = getattr(m, "_orig_mod", m).state_dict()\n')


def test_compile_inside_a_function_and_the_state_dict_elsewhere():
    src = "import torch\ndef build():\n    return torch.compile(Net())\nmodel = build()\nsd = model.state_dict()\n"
    # a compile behind a local function is not followed (only names and wrappers are)
    assert rc404(src) == []


def test_prepared_optimizers_schedulers_and_loaders_are_not_models():
    head = "import torch\n" + HEAD + "acc = Accelerator(dynamo_backend='inductor')\nopt = torch.optim.AdamW(p)\n"
    src = (
        head
        + "model, opt, sched, train_dl = acc.prepare(model, opt, sched, train_dl)\n"
        + (
            "torch.save({'o': opt.state_dict(), 's': sched.state_dict(), 'd': train_dl.state_dict()}, 'c.pt')\n"
            "torch.save(model.state_dict(), 'm.pt')\n"
        )
    )
    assert [d.location.row for d in rc404(src)] == [8]


NANOGPT_RESUME = (
    "import torch\nmodel = GPT(cfg)\n"
    "if init_from == 'resume':\n"
    "    checkpoint = torch.load(path)\n    state_dict = checkpoint['model']\n"
    "{strip}"
    "    model.load_state_dict(state_dict)\n"
    "if compile:\n    model = torch.compile(model)\n"
    "raw_model = model\ntorch.save({{'model': raw_model.state_dict()}}, path)\n"
)


@pytest.mark.parametrize(
    "strip",
    [
        # nanoGPT's own resume (enwik8_gpt, survey25d)
        "    unwanted_prefix = '_orig_mod.'\n    for k, v in list(state_dict.items()):\n"
        "        if k.startswith(unwanted_prefix):\n"
        "            state_dict[k[len(unwanted_prefix):]] = state_dict.pop(k)\n",
        "    state_dict = {k.replace('_orig_mod.', ''): v for k, v in state_dict.items()}\n",
        "    state_dict = {k.removeprefix('_orig_mod.'): v for k, v in state_dict.items()}\n",
        "    state_dict = {re.sub(r'^_orig_mod\\.', '', k): v for k, v in state_dict.items()}\n",
    ],
)
def test_a_save_whose_prefix_the_files_own_load_strips_is_not_reported(strip):
    assert rc404(NANOGPT_RESUME.format(strip=strip)) == []


@pytest.mark.parametrize(
    "strip",
    [
        "",  # nothing strips: the checkpoint does not load into the plain model
        # the name is used, but to reach the module, not to strip keys
        "    inner = getattr(model, '_orig_mod', model)\n",
        # stripping `module.` (DDP) does not remove the compile's prefix
        "    state_dict = {k.replace('module.', ''): v for k, v in state_dict.items()}\n",
    ],
)
def test_a_save_without_a_prefix_strip_is_still_reported(strip):
    assert len(rc404(NANOGPT_RESUME.format(strip=strip))) == 1


def test_a_strip_does_not_cover_a_regional_compile_or_ddp_prefix():
    regional = (
        "from accelerate.utils import compile_regions\nimport torch\nmodel = compile_regions(model)\n"
        "sd = {k[len('_orig_mod.'):]: v for k, v in torch.load(p).items()}\nmodel.load_state_dict(sd)\n"
        "torch.save(model.state_dict(), p)\n"
    )
    ddp = (
        "import torch\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"
        "model = DDP(torch.compile(Net()))\n"
        "sd = {k.removeprefix('_orig_mod.'): v for k, v in torch.load(p).items()}\nnet.load_state_dict(sd)\n"
        "torch.save(model.state_dict(), p)\n"
    )
    assert len(rc404(regional)) == 1
    assert len(rc404(ddp)) == 1


# Session 26: the strip must guard a load of the saved model's state (its keys go, stripped, into
# `load_state_dict` of the model that was compiled and saved), not sit anywhere in the file beside
# any load: before, any `_orig_mod.` strip plus any `load_state_dict` silenced every save.


def test_a_strip_for_an_export_beside_an_unrelated_load_does_not_silence_the_save():
    src = (
        "import torch\nmodel = torch.compile(GPT(cfg))\n"
        "opt.load_state_dict(torch.load(opt_path))\n"
        "export = {k.replace('_orig_mod.', ''): v for k, v in torch.load(old).items()}\n"
        "torch.save(export, 'export.pt')\n"
        "torch.save({'model': model.state_dict()}, path)\n"
    )
    assert [d.location.row for d in rc404(src)] == [6]


def test_a_strip_into_another_model_s_load_does_not_silence_the_save():
    src = (
        "import torch\nteacher = Teacher()\n"
        "sd = {k.removeprefix('_orig_mod.'): v for k, v in torch.load(teacher_path).items()}\n"
        "teacher.load_state_dict(sd)\n"
        "model = torch.compile(GPT(cfg))\ntorch.save(model.state_dict(), path)\n"
    )
    assert len(rc404(src)) == 1


def test_a_strip_of_another_dict_than_the_one_loaded_does_not_silence_the_save():
    src = NANOGPT_RESUME.format(
        strip="    other = {k.replace('_orig_mod.', ''): v for k, v in state_dict.items()}\n"
        "    torch.save(other, 'clean.pt')\n"
    )
    assert len(rc404(src)) == 1


def test_a_strip_inside_the_load_call_silences_the_save():
    src = NANOGPT_RESUME.format(strip="").replace(
        "model.load_state_dict(state_dict)",
        "model.load_state_dict({k.removeprefix('_orig_mod.'): v for k, v in state_dict.items()})",
    )
    assert rc404(src) == []


def test_a_strip_in_a_resume_helper_loading_the_model_it_is_handed_silences_the_save():
    src = (
        "import torch\n"
        "def resume(model, path):\n"
        "    sd = torch.load(path)['model']\n"
        "    sd = {k.replace('_orig_mod.', ''): v for k, v in sd.items()}\n"
        "    model.load_state_dict(sd)\n"
        "model = GPT(cfg)\nresume(model, path)\n"
        "model = torch.compile(model)\ntorch.save({'model': model.state_dict()}, path)\n"
    )
    assert rc404(src) == []


def test_a_state_dict_stripped_as_it_is_read_is_not_reported():
    # survey kochi: the trained compiled model's weights go, stripped, into a plain copy for jit
    comp = (
        "import torch\nmodel = torch.compile(Net())\nm = Net()\n"
        "m.load_state_dict({k.removeprefix('_orig_mod.'): v for k, v in model.state_dict().items()})\n"
    )
    loop = (
        "import torch\nmodel = torch.compile(Net())\nclean = {}\n"
        "for k, v in model.state_dict().items():\n    clean[k.replace('_orig_mod.', '')] = v\n"
        "torch.save(clean, p)\n"
    )
    assert rc404(comp) == []
    assert rc404(loop) == []
    # the keys read are not the ones stripped
    other = comp.replace("model.state_dict().items()})\n", "old.items()})\nsd = model.state_dict()\n")
    assert len(rc404(other)) == 1
