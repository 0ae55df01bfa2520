"""Only a device the script chose is the user's device: flags, assignments, an if/else over where
to run. The ``.device`` of a tensor is never a flag, a feature switch is no GPU switch, and a
per-rank device the script builds itself comes from the accelerator (survey 3, gaps 1 and 3)."""

from __future__ import annotations

import pytest

from regcomp_lint.codemod import ConversionResult, ConvertOptions, convert_source


def convert(text: str) -> ConversionResult:
    result = convert_source(text, "train.py", ConvertOptions())
    assert result.refused is None, result.refused
    return result


def accelerator_line(text: str) -> str:
    return next(line.strip() for line in text.splitlines() if "= Accelerator(" in line)


def test_a_tensors_device_is_no_flag_and_its_move_stays_as_written():
    """PyG's reddit example: ``y = data.y.to(y_hat.device)`` where ``y_hat`` was moved to the CPU."""
    text = (
        "import torch\n\n"
        "device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"
        "model = torch.nn.Linear(8, 4).to(device)\n"
        "optimizer = torch.optim.Adam(model.parameters(), lr=0.01)\n"
        "x = torch.randn(16, 8, device=device)\n"
        "labels = torch.randint(0, 4, (16,))\n\n\n"
        "def evaluate():\n"
        "    predicted = model(x).argmax(dim=-1).cpu()\n"
        "    expected = labels.to(predicted.device)\n"
        "    return int((predicted == expected).sum())\n\n\n"
        "for epoch in range(2):\n"
        "    optimizer.zero_grad()\n"
        "    torch.nn.functional.cross_entropy(model(x), labels.to(device)).backward()\n"
        "    optimizer.step()\n"
        "    print(evaluate())\n"
    )
    result = convert(text)
    assert "    expected = labels.to(predicted.device)\n" in result.text
    assert accelerator_line(result.text) == "accelerator = Accelerator(dynamo_plugin=dynamo_plugin)"
    assert not any("predicted.device" in note for note in result.notes)


def test_a_command_line_device_read_inline_is_still_the_users_flag():
    text = (
        "import argparse\nimport torch\n\n\ndef main():\n"
        "    parser = argparse.ArgumentParser()\n    parser.add_argument('--device', default='cpu')\n"
        "    args = parser.parse_args()\n"
        "    model = torch.nn.Linear(4, 1).to(args.device)\n"
        "    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "    for step in range(3):\n        loss = model(torch.randn(2, 4).to(args.device)).sum()\n"
        "        loss.backward()\n        optimizer.step()\n"
    )
    result = convert(text)
    assert "torch.randn(2, 4).to(accelerator.device)" in result.text
    assert accelerator_line(result.text) == (
        'accelerator = Accelerator(dynamo_plugin=dynamo_plugin, cpu=str(args.device) == "cpu")'
    )


def test_an_if_else_that_picks_the_cpu_becomes_the_accelerators_cpu_choice():
    """pytorch/examples' torch.accelerator idiom: ``--no-accel`` must still train on the CPU."""
    text = (
        "import argparse\nimport torch\n\n\ndef main():\n"
        "    parser = argparse.ArgumentParser()\n    parser.add_argument('--no-accel', action='store_true')\n"
        "    args = parser.parse_args()\n"
        "    use_accel = not args.no_accel and torch.accelerator.is_available()\n"
        "    if use_accel:\n        device = torch.accelerator.current_accelerator()\n"
        "    else:\n        device = torch.device('cpu')\n"
        "    model = torch.nn.Linear(4, 1).to(device)\n"
        "    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "    for step in range(3):\n        loss = model(torch.randn(2, 4).to(device)).sum()\n"
        "        loss.backward()\n        optimizer.step()\n"
    )
    result = convert(text)
    assert accelerator_line(result.text) == "accelerator = Accelerator(dynamo_plugin=dynamo_plugin, cpu=not use_accel)"
    assert "Accelerator(cpu=not use_accel)" in "\n".join(result.notes)


def test_an_elif_chain_ending_on_the_cpu_takes_every_test_before_it():
    text = (
        "import argparse\nimport torch\n\n\ndef main():\n"
        "    parser = argparse.ArgumentParser()\n    parser.add_argument('--cuda', action='store_true')\n"
        "    parser.add_argument('--mps', action='store_true')\n    args = parser.parse_args()\n"
        "    if args.cuda:\n        device = 'cuda'\n    elif args.mps:\n        device = 'mps'\n"
        "    else:\n        device = 'cpu'\n"
        "    model = torch.nn.Linear(4, 1).to(device)\n"
        "    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "    for step in range(3):\n        loss = model(torch.randn(2, 4).to(device)).sum()\n"
        "        loss.backward()\n        optimizer.step()\n"
    )
    result = convert(text)
    assert accelerator_line(result.text) == (
        "accelerator = Accelerator(dynamo_plugin=dynamo_plugin, cpu=not args.cuda and not args.mps)"
    )


def test_an_if_that_does_more_than_move_to_the_gpu_is_no_gpu_switch():
    """snli: ``if args.word_vectors: <load them>; model.cuda()`` is a feature, not the CPU choice."""
    text = (
        "import argparse\nimport torch\n\n\ndef main():\n"
        "    parser = argparse.ArgumentParser()\n    parser.add_argument('--word_vectors', default='')\n"
        "    args = parser.parse_args()\n"
        "    model = torch.nn.Linear(4, 1)\n"
        "    if args.word_vectors:\n        model.weight.data.normal_()\n        model.cuda()\n"
        "    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "    for step in range(3):\n        loss = model(torch.randn(2, 4).cuda()).sum()\n"
        "        loss.backward()\n        optimizer.step()\n"
    )
    result = convert(text)
    assert accelerator_line(result.text) == "accelerator = Accelerator(dynamo_plugin=dynamo_plugin)"
    assert "        model.to(accelerator.device)\n" in result.text


def test_an_if_that_only_moves_to_the_gpu_is_still_the_cpu_choice():
    text = (
        "import argparse\nimport torch\n\n\ndef main():\n"
        "    parser = argparse.ArgumentParser()\n    parser.add_argument('--cuda', action='store_true')\n"
        "    args = parser.parse_args()\n"
        "    model = torch.nn.Linear(4, 1)\n"
        "    x = torch.randn(2, 4)\n"
        "    if args.cuda:\n        model.cuda()\n        x, y = x.cuda(), x.to('cuda')\n"
        "    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "    for step in range(3):\n        loss = model(x).sum()\n"
        "        loss.backward()\n        optimizer.step()\n"
    )
    result = convert(text)
    assert accelerator_line(result.text) == "accelerator = Accelerator(dynamo_plugin=dynamo_plugin, cpu=not args.cuda)"


PER_RANK_DEVICE = (
    "import argparse\nimport torch\n\n\n"
    "class NoiseTable:\n    def __init__(self, steps, device):\n"
    "        self.scale = torch.linspace(1, 0.01, steps).to(device)\n\n\n"
    "def train_one_epoch(model, table, optimizer, args):\n"
    "    for _ in range(4):\n"
    "        x = torch.randn(8, 4).to(args.device)\n"
    "        loss = (model(x * table.scale[:4, None]) ** 2).mean()\n"
    "        optimizer.zero_grad()\n        loss.backward()\n        optimizer.step()\n\n\n"
    "def main():\n"
    "    parser = argparse.ArgumentParser()\n    parser.add_argument('--local_rank', default=0, type=int)\n"
    "    args = parser.parse_args()\n"
    "    args.device = 'cuda:{}'.format(args.local_rank)\n"
    "    model = torch.nn.Linear(4, 4).to(args.device)\n"
    "    table = NoiseTable(100, args.device)\n"
    "    state = torch.load('init.pt', map_location=args.device)\n"
    "    model.load_state_dict(state)\n"
    "    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)\n"
    "    for epoch in range(2):\n        train_one_epoch(model, table, optimizer, args)\n"
)


def test_a_per_rank_device_the_script_builds_comes_from_the_accelerator_for_every_reader():
    """minimal-diffusion: ``args.device = "cuda:{local_rank}"`` is cuda:0 on every process under
    accelerate launch; its assignment gives accelerator.device, so the noise table and the
    checkpoint's map_location follow it as well as the batches."""
    result = convert(PER_RANK_DEVICE)
    assert "    args.device = accelerator.device\n" in result.text
    assert "cuda:{}" not in result.text
    assert "    table = NoiseTable(100, args.device)\n" in result.text
    assert "map_location=args.device" in result.text
    assert "        x = torch.randn(8, 4).to(args.device)\n" in result.text
    # no CPU switch read from a key that is only assigned after the Accelerator exists
    assert accelerator_line(result.text) == "accelerator = Accelerator(dynamo_plugin=dynamo_plugin)"
    lines = result.text.splitlines()
    assert lines.index("    accelerator = Accelerator(dynamo_plugin=dynamo_plugin)") < lines.index(
        "    args.device = accelerator.device"
    )


def test_a_local_rank_option_reads_local_rank_under_torchrun_and_accelerate_launch():
    """torch.distributed.launch passes --local_rank; torchrun and accelerate launch set LOCAL_RANK
    only: the option's default reads it (argparse applies type=int to a string default)."""
    result = convert(PER_RANK_DEVICE)
    notes = "\n".join(result.notes)
    line = next(i for i, text in enumerate(PER_RANK_DEVICE.splitlines(), 1) if "--local_rank" in text)
    assert "parser.add_argument('--local_rank', default=os.environ.get(\"LOCAL_RANK\", 0), type=int)" in result.text
    assert "import os\n" in result.text
    assert f'the rank option at line {line} (--local_rank) now defaults to os.environ.get("LOCAL_RANK", 0)' in notes


@pytest.mark.parametrize(
    "option,expected",
    [
        ("'--local_rank', type=int", "'--local_rank', type=int, default=os.environ.get(\"LOCAL_RANK\", None)"),
        ("'--local-rank', default=-1", "'--local-rank', default=int(os.environ.get(\"LOCAL_RANK\", -1))"),
    ],
)
def test_a_local_rank_option_without_a_default_or_a_type(option, expected):
    result = convert(PER_RANK_DEVICE.replace("'--local_rank', default=0, type=int", option))
    assert expected in result.text


def test_a_local_rank_option_with_a_computed_default_is_said_to_stay_at_its_default():
    result = convert(PER_RANK_DEVICE.replace("default=0, type=int", "default=get_rank(), type=int"))
    assert "accelerate launch and torchrun leave it at its default on every process" in "\n".join(result.notes)


def test_data_placed_on_the_gpu_the_script_set_follows_each_processs_device():
    """snli: ``torch.cuda.set_device(args.gpu)`` then an iterator with ``device=args.gpu`` would
    put every process's batches on that one GPU; like ``.cuda(args.gpu)``, they follow
    accelerator.device (which is that GPU on one process: Accelerate uses the current one)."""
    text = (
        "import argparse\nimport torch\n\n"
        "parser = argparse.ArgumentParser()\nparser.add_argument('--gpu', type=int, default=0)\n"
        "args = parser.parse_args()\ntorch.cuda.set_device(args.gpu)\n"
        "batches = [(torch.randn(4, 8, device=args.gpu), torch.randint(0, 3, (4,), device=f'cuda:{args.gpu}'))]\n"
        "model = torch.nn.Linear(8, 3).cuda(args.gpu)\n"
        "opt = torch.optim.Adam(model.parameters(), lr=1e-3)\n"
        "for x, y in batches:\n    opt.zero_grad()\n"
        "    torch.nn.functional.cross_entropy(model(x), y).backward()\n    opt.step()\n"
    )
    result = convert(text)
    assert "torch.randn(4, 8, device=accelerator.device)" in result.text
    assert "torch.randint(0, 3, (4,), device=accelerator.device)" in result.text
    assert "model = torch.nn.Linear(8, 3).to(accelerator.device)\n" in result.text
    assert "torch.cuda.set_device(args.gpu)\n" in result.text  # one process: the GPU Accelerate then uses
    lines = result.text.splitlines()
    assert lines.index("torch.cuda.set_device(args.gpu)") < lines.index(accelerator_line(result.text))


def test_an_if_else_whose_every_branch_picks_the_cpu_gives_cpu_true():
    """A torchrun script whose DDP and single-process branches both set ``device = "cpu"``."""
    text = (
        "import os\n\nimport torch\nimport torch.distributed as dist\n"
        "from torch.nn.parallel import DistributedDataParallel as DDP\n\n\n"
        "def main():\n"
        "    ddp = int(os.environ.get('RANK', -1)) != -1\n"
        "    if ddp:\n"
        "        dist.init_process_group(backend='gloo')\n"
        "        device = torch.device('cpu')\n"
        "    else:\n"
        "        device = torch.device('cpu')\n"
        "    model = torch.nn.Linear(4, 2).to(device)\n"
        "    if ddp:\n"
        "        model = DDP(model)\n"
        "    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "    for step in range(3):\n"
        "        loss = model(torch.randn(8, 4, device=device)).sum()\n"
        "        loss.backward()\n"
        "        optimizer.step()\n\n\n"
        "main()\n"
    )
    assert accelerator_line(convert(text).text).endswith("cpu=True)")


def test_a_device_flag_read_in_the_last_branch_only_decides_there():
    """pytorch/examples super_resolution: ``if opt.cuda: "cuda" elif use_mps: "mps" else:
    torch.device(opt.device)`` -- with --cuda the flag's default "cpu" must not win."""
    text = (
        "import argparse\nimport torch\n\n"
        "parser = argparse.ArgumentParser()\nparser.add_argument('--cuda', action='store_true')\n"
        "parser.add_argument('--device', default='cpu')\nopt = parser.parse_args()\n"
        "use_mps = False\n"
        "if opt.cuda:\n    device = torch.device('cuda')\nelif use_mps:\n    device = torch.device('mps')\n"
        "else:\n    device = torch.device(opt.device)\n"
        "model = torch.nn.Linear(4, 1).to(device)\n"
        "optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "for step in range(3):\n"
        "    optimizer.zero_grad()\n    model(torch.randn(2, 4).to(device)).sum().backward()\n    optimizer.step()\n"
    )
    line = accelerator_line(convert(text).text)
    assert line == (
        'accelerator = Accelerator(dynamo_plugin=dynamo_plugin, cpu=(not opt.cuda and not use_mps and str(opt.device) == "cpu"))'
    )


def test_batches_follow_the_gpu_the_model_was_placed_on():
    """The DDP tutorial's single_gpu.py: ``self.model = model.to(gpu_id)``, ``self.gpu_id = gpu_id``,
    then ``source.to(self.gpu_id)``; with ``device = 0`` every process would feed cuda:0."""
    text = (
        "import torch\nfrom torch.utils.data import DataLoader, TensorDataset\n\n\n"
        "class Trainer:\n"
        "    def __init__(self, model, train_data, optimizer, gpu_id):\n"
        "        self.gpu_id = gpu_id\n        self.model = model.to(gpu_id)\n"
        "        self.train_data = train_data\n        self.optimizer = optimizer\n\n"
        "    def train(self):\n"
        "        for source, targets in self.train_data:\n"
        "            source = source.to(self.gpu_id)\n            targets = targets.to(self.gpu_id)\n"
        "            self.optimizer.zero_grad()\n"
        "            loss = torch.nn.functional.mse_loss(self.model(source), targets)\n"
        "            loss.backward()\n            self.optimizer.step()\n\n\n"
        "def main(device):\n"
        "    model = torch.nn.Linear(4, 1)\n    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "    data = DataLoader(TensorDataset(torch.randn(8, 4), torch.randn(8, 1)), batch_size=4)\n"
        "    Trainer(model, data, optimizer, device).train()\n\n\nmain(0)\n"
    )
    out = convert(text).text
    assert "source = source.to(self.accelerator.device)" in out
    assert "targets = targets.to(self.accelerator.device)" in out
    assert "self.gpu_id)" not in out


def test_a_dtype_cast_is_no_gpu_choice():
    text = (
        "import torch\n\nmodel = torch.nn.Linear(4, 1).to(torch.float64)\n"
        "optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "for step in range(3):\n"
        "    optimizer.zero_grad()\n    model(torch.randn(2, 4).to(torch.float64)).sum().backward()\n    optimizer.step()\n"
    )
    assert "torch.randn(2, 4).to(torch.float64)" in convert(text).text


def test_a_device_kept_in_a_config_dict_is_handed_on_as_the_accelerators():
    """Kaggle-style ``CONFIG = {"device": torch.device("cuda:0" ...)}``: the model is placed with
    ``CONFIG["device"]`` and ``train(..., device=CONFIG['device'])`` moves the batches there."""
    text = (
        "import torch\n\n"
        "CONFIG = {'device': torch.device('cuda:0' if torch.cuda.is_available() else 'cpu')}\n"
        'model = torch.nn.Linear(4, 1).to(CONFIG["device"])\n'
        "optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n\n\n"
        "def train(model, device):\n"
        "    for step in range(3):\n"
        "        optimizer.zero_grad()\n        model(torch.randn(2, 4).to(device)).sum().backward()\n"
        "        optimizer.step()\n\n\n"
        "train(model, device=CONFIG['device'])\n"
    )
    out = convert(text).text
    assert "model = torch.nn.Linear(4, 1).to(accelerator.device)" in out
    assert "train(model, device=accelerator.device)" in out


def test_a_module_level_cuda_device_read_in_main_follows_the_accelerator():
    """The captioning tutorial's global ``device = torch.device('cuda' if ... else 'cpu')``, read
    by ``.to(device)`` in ``main()`` where the Accelerator is made: every process would use GPU 0
    (the lint's RC403 said so after the conversion)."""
    text = (
        "import torch\nfrom torch.utils.data import DataLoader, TensorDataset\n\n"
        "device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n\n\n"
        "def main():\n"
        "    loader = DataLoader(TensorDataset(torch.randn(8, 4)), batch_size=2)\n"
        "    model = torch.nn.Linear(4, 1).to(device)\n"
        "    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "    for (x,) in loader:\n"
        "        x = x.to(device)\n"
        "        optimizer.zero_grad()\n        model(x).sum().backward()\n        optimizer.step()\n\n\n"
        "main()\n"
    )
    result = convert_source(text, "train.py")
    assert result.refused is None, result.refused
    assert "model = torch.nn.Linear(4, 1).to(accelerator.device)\n" in result.text
    assert "x = x.to(accelerator.device)\n" in result.text
    assert (
        "device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n" in result.text
    )  # module level: kept


STAR_IMPORTED_TORCH = """\
from helpers import *

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = Net().to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in loader:
    loss = criterion(model(x.to(device)), y.to(device))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
"""


def test_a_called_torch_device_is_no_device_flag_when_a_star_import_hides_torch():
    """A SAM CIFAR script: ``torch`` came from ``from SAM.optimizer import *``, and the callee
    ``torch.device`` was read as the user's device flag: ``cpu=str(torch.device) == "cpu"``."""
    result = convert_source(STAR_IMPORTED_TORCH, "star.py")
    assert result.refused is None, result.refused
    assert "str(torch.device)" not in result.text
    assert "cpu=not torch.cuda.is_available()" in result.text


LOCAL_DEV = """\
import torch
from torch.utils.data import DataLoader, TensorDataset


def train():
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = torch.nn.Linear(4, 1).to(dev)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(TensorDataset(torch.randn(8, 4)), batch_size=2)
    for (x,) in loader:
        x = x.to(dev)
        optimizer.zero_grad()
        model(x).sum().backward()
        optimizer.step()


train()
"""


def test_a_local_cuda_device_under_another_name_follows_the_accelerator():
    """``dev = torch.device("cuda" if ... else "cpu")`` in the function that trains: only a local
    named ``device`` was rewritten, so ``.to(dev)`` put every process on GPU 0 (RC403 after the
    conversion). Any local bound to a fixed CUDA device now gives the accelerator's device, and
    the Accelerator is made before it."""
    text = convert(LOCAL_DEV).text
    assert "    dev = accelerator.device\n" in text
    assert text.index("accelerator = Accelerator(") < text.index("dev = accelerator.device")
    assert "x = x.to(dev)\n" in text
    assert "cuda" not in text.split("def train():")[1]


def test_a_local_holding_a_tensors_device_is_left_alone():
    """``dev = tensor.device`` names no device the script chose: it stays as written."""
    text = convert(
        LOCAL_DEV.replace(
            'dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")', "dev = torch.randn(1).device"
        )
    ).text
    assert "dev = torch.randn(1).device\n" in text


VISIBLE = (
    "import os\n"
    "import torch\n\n"
    "SETTING\n"
    "device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"
    "model = torch.nn.Linear(8, 4).to(device)\n"
    "optimizer = torch.optim.Adam(model.parameters(), lr=0.01)\n"
    "for step in range(5):\n"
    "    loss = model(torch.randn(16, 8, device=device)).sum()\n"
    "    optimizer.zero_grad()\n"
    "    loss.backward()\n"
    "    optimizer.step()\n"
)


@pytest.mark.parametrize(
    "setting",
    [
        'os.environ["CUDA_VISIBLE_DEVICES"] = "0"',
        "os.environ['CUDA_VISIBLE_DEVICES'] = str(0)",
        'os.environ.setdefault("CUDA_VISIBLE_DEVICES", "0,1")',
    ],
)
def test_a_script_pinning_its_gpus_is_told_a_launch_gives_each_process_its_own(setting):
    """survey 19a DSDN and the molecule regressor: ``os.environ["CUDA_VISIBLE_DEVICES"] = "0"`` at
    module level. Under accelerate launch on several GPUs each process then sees one GPU and
    process 1's cuda:1 does not exist; the conversion said nothing."""
    result = convert(VISIBLE.replace("SETTING", setting))
    note = next((n for n in result.notes if "CUDA_VISIBLE_DEVICES" in n), None)
    assert note is not None, result.notes
    assert note.startswith("CUDA_VISIBLE_DEVICES set at line 4 ")
    assert "--gpu_ids" in note


def test_reading_the_visible_devices_says_nothing():
    result = convert(VISIBLE.replace("SETTING", 'print(os.environ.get("CUDA_VISIBLE_DEVICES"))'))
    assert not any("CUDA_VISIBLE_DEVICES" in n for n in result.notes), result.notes


HANDED_MODEL = """
import argparse
import torch
from torch.utils.data import DataLoader, TensorDataset


@torch.no_grad()
def evaluate(model, data):
    model.eval()
    x = data.to(model.device)
    return model(x).argmax(-1).float().mean().item()


def train(args):
    device = "cuda" if torch.cuda.is_available() else "cpu"
    student = Net().to(device)
    teacher = Net().to(device)
    loader = DataLoader(TensorDataset(torch.randn(64, 8)), batch_size=8)
    optimizer = torch.optim.AdamW(student.parameters(), lr=1e-2)
    test = torch.randn(16, 8)
    print(evaluate(student, test), evaluate(teacher, test))
    for (x,) in loader:
        loss = (student(x.to(device)) - teacher(x.to(device))).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(evaluate(model=student, data=test))


def main():
    parser = argparse.ArgumentParser()
    args = parser.parse_args()
    train(args)
"""


def test_the_device_of_a_model_handed_to_a_function_is_no_flag():
    """survey21c kd_addsum: ``evaluate(model, ...)`` reads ``.to(model.device)``, called with the
    student and the teacher. The parameter's ``.device`` was taken for the user's device flag:
    ``Accelerator(..., cpu=str(model.device) == "cpu")`` in ``train()``, where no ``model``
    exists (``NameError`` before the first step), and the move followed the accelerator, not the
    model it was handed (a teacher kept elsewhere)."""
    text = convert(HANDED_MODEL).text
    assert accelerator_line(text) == "accelerator = Accelerator(dynamo_plugin=dynamo_plugin)"
    assert "    x = data.to(accelerator.unwrap_model(model, keep_torch_compile=False).device)\n" in text


def test_the_device_of_a_command_line_namespace_handed_to_a_function_is_still_a_flag():
    text = convert(
        HANDED_MODEL.replace("data.to(model.device)", "data.to(args.device)")
        .replace("def evaluate(model, data):", "def evaluate(model, data, args=None):")
        .replace("evaluate(student, test)", "evaluate(student, test, args)")
    ).text
    assert 'cpu=str(args.device) == "cpu"' in accelerator_line(text)


CONSTANT_CPU = """\
import torch
import torch.nn as nn

device = {value}
model = nn.Linear(4, 1).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(10):
    x = torch.randn(8, 4).to(device)
    loss = model(x).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
"""


@pytest.mark.parametrize("value", ["'cpu'", 'torch.device("cpu")'])
def test_a_device_set_to_the_cpu_once_and_for_all_keeps_the_cpu(value):
    """survey 22a charrnn_wp: ``device = 'cpu'`` with no other choice trained on the CPU; the
    conversion's ``accelerator.device`` would have been the GPU on a machine with one."""
    result = convert(CONSTANT_CPU.format(value=value))
    assert accelerator_line(result.text).endswith("cpu=True)"), result.text
    assert any("cpu=True" in note for note in result.notes), result.notes


@pytest.mark.parametrize(
    "after",
    [
        "if torch.cuda.is_available():\n    device = 'cuda'\n",  # llm.c's autodetect: a default
        "exec(open('configurator.py').read())\n",  # nanoGPT's configurator may set it
        "def use_gpu():\n    global device\n    device = 'cuda'\n",  # another binding, through a global
        "def pick():\n    global device\n    print(device)\n",  # a global statement is enough to stay away
    ],
)
def test_a_cpu_default_the_script_may_change_is_no_choice_of_the_cpu(after):
    text = CONSTANT_CPU.format(value="'cpu'").replace("device = 'cpu'\n", "device = 'cpu'\n" + after)
    result = convert_source(text, "train.py", ConvertOptions())
    assert result.refused is None, result.refused
    assert "cpu=True" not in accelerator_line(result.text), result.text


MPS_OR_CPU = (
    "import torch\n\n\n"
    "def train(loader):\n"
    '    device = torch.device("mps" if torch.backends.mps.is_available() else "cpu")\n'
    "    model = torch.nn.Linear(4, 1).to(device)\n"
    "    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
    "    for x, y in loader:\n"
    "        loss = torch.nn.functional.mse_loss(model(x.to(device)), y.to(device))\n"
    "        optimizer.zero_grad()\n"
    "        loss.backward()\n"
    "        optimizer.step()\n"
)


@pytest.mark.parametrize(
    ("cuda", "mps", "world_size", "cpu"),
    [
        (True, False, None, True),  # a CUDA machine: the script trains on the CPU, never on the GPU
        (True, False, "2", True),
        (False, True, None, False),  # an Apple machine: the script picks MPS, and so does Accelerate
        (False, False, None, True),
        (False, False, "2", True),  # several processes without CUDA: joined over gloo on the CPU
        (False, True, "2", True),  # gloo has no MPS: several processes are joined on the CPU
    ],
)
def test_a_device_chosen_among_mps_and_the_cpu_never_becomes_cuda(cuda, mps, world_size, cpu, monkeypatch):
    """crnn_ocr (survey 23d): ``torch.device("mps" if torch.backends.mps.is_available() else
    "cpu")`` reads only torch, which was taken for Accelerate's own choice and dropped: on a CUDA
    machine the original trained on the CPU and the conversion on the GPU. The written ``cpu=``
    condition, evaluated over the machines, gives the original's device."""
    result = convert(MPS_OR_CPU)
    line = accelerator_line(result.text)
    assert "cpu=" in line, line
    condition = line.split("cpu=", 1)[1].rsplit(")", 1)[0]
    assert _cpu_on(condition, cuda, mps, world_size, monkeypatch) is cpu, condition
    assert "import os\n" in result.text


def _cpu_on(condition: str, cuda: bool, mps: bool, world_size: str | None, monkeypatch, **names) -> bool:
    """The written ``cpu=`` condition evaluated on a machine with or without CUDA and MPS, under
    ``WORLD_SIZE`` (None: unset), with the script's own ``names`` (``args``)."""
    import os
    import types

    if world_size is None:
        monkeypatch.delenv("WORLD_SIZE", raising=False)
    else:
        monkeypatch.setenv("WORLD_SIZE", world_size)
    backends = types.SimpleNamespace(mps=types.SimpleNamespace(is_available=lambda: mps))
    torch = types.SimpleNamespace(cuda=types.SimpleNamespace(is_available=lambda: cuda), backends=backends)
    return bool(eval(condition, {"torch": torch, "os": os, **names}))


def test_a_script_that_imports_torch_under_another_name_gets_the_torch_its_cpu_condition_reads():
    """``import torch as t`` with crnn_ocr's MPS-or-CPU choice: the ``cpu=`` condition reads
    ``torch.cuda.is_available()``, and the conversion raised ``NameError: name 'torch' is not defined``
    at the Accelerator's line (measured on nanovit's shape, survey25a). It now imports torch too."""
    text = MPS_OR_CPU.replace("import torch\n", "import torch as t\n").replace("torch.", "t.")
    result = convert(text)
    assert "torch.cuda.is_available()" in accelerator_line(result.text), result.text
    assert "\nimport torch\n" in result.text, result.text
    compile(result.text, "train.py", "exec")


def test_cuda_then_mps_then_the_cpu_is_accelerates_own_order_and_gets_no_cpu_flag():
    """nanovit (survey25a): ``"cuda" if t.cuda.is_available() else "mps" if t.backends.mps.is_available()
    else "cpu"``. The inner MPS-or-CPU choice was taken alone: ``cpu=not t.backends.mps.is_available()``,
    True on a CUDA machine (evaluated: cuda=True, mps=False gives cpu=True), which trained on the CPU
    where the script picks CUDA. The chain is Accelerate's own order (CUDA, MPS, CPU): no ``cpu=``."""
    text = (
        "import torch as t\n\n"
        'device = "cuda" if t.cuda.is_available() else "mps" if t.backends.mps.is_available() else "cpu"\n'
        "model = t.nn.Linear(4, 1).to(device)\n"
        "opt = t.optim.SGD(model.parameters(), lr=0.1)\n"
        "for step in range(3):\n"
        "    opt.zero_grad()\n"
        "    model(t.randn(2, 4, device=device)).sum().backward()\n"
        "    opt.step()\n"
    )
    result = convert(text)
    assert "cpu=" not in accelerator_line(result.text), result.text


def test_a_choice_between_cuda_and_the_cpu_by_torch_alone_stays_accelerates_own():
    """``"cuda" if torch.cuda.is_available() else "cpu"`` is what Accelerate does anyway: no ``cpu=``."""
    result = convert(MPS_OR_CPU.replace('"mps" if torch.backends.mps', '"cuda" if torch.cuda'))
    assert "cpu=" not in accelerator_line(result.text)


def test_an_mps_or_cpu_choice_in_a_ddp_script_joins_the_processes_once():
    """The script's own process group (``cpu=not torch.cuda.is_available()``, narrowed to several
    processes) and the MPS-or-CPU choice give one joining term, not two."""
    text = MPS_OR_CPU.replace(
        "import torch\n",
        "import torch\nimport torch.distributed as dist\n"
        "from torch.nn.parallel import DistributedDataParallel as DDP\n",
        1,
    ).replace(
        "    optimizer = torch.optim.SGD",
        '    dist.init_process_group(backend="gloo")\n    model = DDP(model)\n    optimizer = torch.optim.SGD',
    )
    line = accelerator_line(convert(text).text)
    assert line.count("WORLD_SIZE") == 1 and "not torch.backends.mps.is_available()" in line, line


FLAG_THEN_MPS = (
    "import argparse\nimport torch\n\n"
    "parser = argparse.ArgumentParser()\nparser.add_argument('--cuda', action='store_true')\nargs = parser.parse_args()\n"
    'device = "cuda" if args.cuda else "mps" if torch.backends.mps.is_available() else "cpu"\n'
    "model = torch.nn.Linear(4, 1).to(device)\n"
    "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
    "for step in range(3):\n"
    "    opt.zero_grad()\n"
    "    model(torch.randn(2, 4, device=device)).sum().backward()\n"
    "    opt.step()\n"
)


@pytest.mark.parametrize(
    ("flag", "cuda", "mps", "world_size", "cpu"),
    [
        (True, True, False, None, False),  # --cuda on a CUDA machine: CUDA
        (True, True, False, "2", False),
        (False, True, False, None, True),  # no --cuda on a CUDA machine: the script trains on the CPU
        (False, False, True, None, False),  # no --cuda on an Apple machine: MPS, Accelerate's first choice too
        (False, False, False, None, True),
        (False, False, True, "2", True),  # gloo has no MPS: several processes are joined on the CPU
    ],
)
def test_a_flag_before_the_mps_or_cpu_choice_is_part_of_the_cpu_condition(
    flag, cuda, mps, world_size, cpu, monkeypatch
):
    """``"cuda" if args.cuda else "mps" if torch.backends.mps.is_available() else "cpu"`` (leftalone25c,
    noted by survey25a): the inner MPS-or-CPU choice alone wrote ``cpu=... or not
    torch.backends.mps.is_available()``, True on a CUDA machine with --cuda (the CPU where the script
    picks CUDA). The CPU is chosen when no branch before it is: ``not args.cuda and not mps``."""
    import types

    line = accelerator_line(convert(FLAG_THEN_MPS).text)
    condition = line.split("cpu=", 1)[1].rsplit(")", 1)[0]
    args = types.SimpleNamespace(cuda=flag)
    assert _cpu_on(condition, cuda, mps, world_size, monkeypatch, args=args) is cpu, condition


def test_a_process_index_named_device_stays_an_index():
    """A DDP course script (survey 26e ddp_tiger): ``Trainer(..., device)`` handed the mp.spawn
    index, kept as ``self.device`` and compared ``if self.device == 0`` for the rank-0 save. Made
    ``self.accelerator.device`` the comparison was never true (``torch.device("cuda:0") != 0``):
    no checkpoint was written. It stays the index; the batches follow the accelerator's device."""
    text = (
        "import torch\nfrom torch.utils.data import DataLoader, TensorDataset\n\n\n"
        "class Trainer:\n"
        "    def __init__(self, model, train_data, optimizer, device):\n"
        "        self.device = device\n        self.model = model.to(self.device)\n"
        "        self.train_data = train_data\n        self.optimizer = optimizer\n\n"
        "    def train(self):\n"
        "        for source, targets in self.train_data:\n"
        "            source, targets = source.to(self.device), targets.to(self.device)\n"
        "            self.optimizer.zero_grad()\n"
        "            loss = torch.nn.functional.mse_loss(self.model(source), targets)\n"
        "            loss.backward()\n            self.optimizer.step()\n"
        "        if self.device == 0:\n"
        "            torch.save(self.model.state_dict(), 'model.pt')\n\n\n"
        "def main(device):\n"
        "    model = torch.nn.Linear(4, 1)\n    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "    data = DataLoader(TensorDataset(torch.randn(8, 4), torch.randn(8, 1)), batch_size=4)\n"
        "    Trainer(model, data, optimizer, device).train()\n\n\nmain(0)\n"
    )
    out = convert(text).text
    assert "        self.device = device\n" in out
    assert "if self.device == 0:" in out
    assert "source, targets = source.to(self.accelerator.device), targets.to(self.accelerator.device)" in out
    assert "self.model = model.to(self.accelerator.device)" in out


def test_a_built_device_compared_with_a_number_is_still_rewritten():
    """Only a handed parameter compared ``== 0`` stays (the index): a device the script builds
    itself is rewritten as before, even where some code compares it with a number."""
    text = (
        "import torch\n\n"
        "device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"
        "model = torch.nn.Linear(4, 1).to(device)\n"
        "optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "for step in range(3):\n"
        "    optimizer.zero_grad()\n"
        "    model(torch.randn(2, 4, device=device)).sum().backward()\n"
        "    optimizer.step()\n"
        "if device == 0:\n    print('first GPU')\n"
    )
    out = convert(text).text
    assert "device = accelerator.device\n" in out
