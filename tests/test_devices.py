"""Device values, CPU switches and device flags (analysis/devices.py): what RC403 and regcomp-fix read."""

from __future__ import annotations

import ast
import textwrap

import pytest

from regcomp_lint.analysis.bindings import Where
from regcomp_lint.analysis.devices import Devices
from regcomp_lint.analysis.file_context import FileContext
from regcomp_lint.checks.base import Rule
from regcomp_lint.files.source import SourceFile
from regcomp_lint.lint.engine import walk


class _Moves(Rule):
    """Where each ``.to(...)`` sits, with its argument."""

    code, name, message = "RC000", "moves", ""

    def __init__(self, ctx: FileContext) -> None:
        super().__init__(ctx)
        self.bindings = ctx.semantic.bindings
        self.moves: list[tuple[ast.expr, Where]] = []

    def visit_Call(self, node: ast.Call) -> None:
        if isinstance(node.func, ast.Attribute) and node.func.attr == "to" and node.args:
            self.moves.append((node.args[0], self.bindings.here(node)))


class Script:
    def __init__(self, body: str) -> None:
        src = "import torch\nimport os\n" + textwrap.dedent(body)
        self.ctx = FileContext(SourceFile("t.py", src), ast.parse(src))
        recorder = _Moves(self.ctx)
        walk(self.ctx, [recorder])
        self.moves = recorder.moves
        self.devices: Devices = self.ctx.semantic.devices
        self.tree = self.ctx.tree

    def value_of(self, name: str) -> ast.expr:
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
                return node.value
        raise AssertionError(name)

    def fixed_cuda_moves(self) -> list[bool]:
        return [self.devices.fixed_cuda(arg, where) for arg, where in self.moves]


@pytest.mark.parametrize(
    ("body", "fixed"),
    [
        ("x.to('cuda')\n", True),
        ("x.to('cuda:1')\n", True),
        ("x.to(f'cuda:{rank}')\n", True),
        ("x.to('cuda:' + str(rank))\n", True),
        ("x.to(torch.device('cuda'))\n", True),
        ("x.to(torch.device(type='cuda', index=0))\n", True),
        ("x.to(torch.cuda.current_device())\n", True),
        ("d = 'cuda' if torch.cuda.is_available() else 'cpu'\nx.to(d)\n", True),
        ("x.to('cpu')\n", False),
        ("x.to(torch.float16)\n", False),
        ("def move(x, device):\n    return x.to(device)\n", False),
        ("d = accelerator.device\nx.to(d)\n", False),
        # the binding visible at the move decides
        ("d = 'cuda'\nd = 'cpu'\nx.to(d)\n", False),
        # a function of the script's own that returns one (survey 20e d2l_densenet's get_device())
        (
            "def get_device(i=0):\n    if torch.cuda.device_count() >= i + 1:\n        dev = f'cuda:{i}'\n"
            "        return torch.device(dev)\n    return torch.device('cpu')\nd = get_device()\nx.to(d)\n",
            True,
        ),
        ("def get_device():\n    return torch.device('cpu')\nx.to(get_device())\n", False),
        ("def pick(devices):\n    return devices[0]\nx.to(pick(['cuda']))\n", False),
    ],
)
def test_fixed_cuda_devices(body: str, fixed: bool):
    assert Script(body).fixed_cuda_moves() == [fixed]


@pytest.mark.parametrize(
    ("value", "cpu_when", "flags"),
    [
        ('"cuda" if use_cuda else "cpu"', False, ("use_cuda",)),
        ('"cuda" if not args.no_cuda and torch.cuda.is_available() else "cpu"', False, ("args",)),
        ('"cpu" if args.cpu else "cuda"', True, ("args",)),
        ('"cuda" if torch.cuda.is_available() else "cpu"', False, ()),
        ('"cuda" if os.environ.get("CPU") is None else "cpu"', False, ()),
    ],
)
def test_device_choices_and_the_flags_their_tests_read(value: str, cpu_when: bool, flags: tuple[str, ...]):
    script = Script(f"device = {value}\n")
    choice = script.devices.choice(script.value_of("device"))
    assert choice is not None
    assert (choice.cpu_when, choice.flags) == (cpu_when, flags)


def test_a_choice_between_two_gpus_is_no_cpu_switch():
    script = Script('device = "cuda:0" if rank == 0 else "cuda:1"\n')
    assert script.devices.choice(script.value_of("device")) is None
    assert script.devices.choice(script.value_of("device").test) is None  # not a conditional at all


def test_device_flags_are_the_scripts_attributes_named_like_a_device_in_source_order():
    script = Script("device = torch.device(cfg.train.device if args.device is None else args.device)\n")
    assert script.devices.flags(script.value_of("device")) == ["cfg.train.device", "args.device", "args.device"]


def test_own_names_leave_out_imported_modules_and_attribute_names():
    script = Script("flag = torch.cuda.is_available() and not opts.cpu and use_gpu\n")
    assert script.devices.own_names(script.value_of("flag")) == ("opts", "use_gpu")


@pytest.mark.parametrize(
    ("expr", "flag"),
    [
        ("args.device", True),
        ("cfg.train.device", True),
        ("torch.device", False),
        ("get().device", False),
        ("device", False),
    ],
)
def test_is_flag(expr: str, flag: bool):
    script = Script(f"x = {expr}\n")
    assert script.devices.is_flag(script.value_of("x")) is flag
