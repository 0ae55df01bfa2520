"""Checkpoint saves and loads (analysis/checkpoints.py): what RC404 and regcomp-fix both read."""

from __future__ import annotations

import ast
import textwrap

import pytest

from regcomp_lint.analysis.checkpoints import Checkpoints, StateRead
from regcomp_lint.analysis.file_context import FileContext
from regcomp_lint.analysis.main_process import is_main_process_test
from regcomp_lint.analysis.training_roles import Origin, TrainingRoles
from regcomp_lint.files.source import SourceFile
from regcomp_lint.lint.engine import walk

HEAD = """\
import torch
from accelerate import Accelerator
model = torch.nn.Linear(4, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
"""


class Script:
    def __init__(self, body: str) -> None:
        self.src = HEAD + textwrap.dedent(body)
        self.ctx = FileContext(SourceFile("t.py", self.src), ast.parse(self.src))
        self.roles: TrainingRoles = self.ctx.semantic.training_roles
        walk(self.ctx, [])
        self.checkpoints: Checkpoints = self.roles.checkpoints

    def text(self, node: ast.AST) -> str:
        return self.ctx.source.segment(node)

    def read(self, receiver: str, nth: int = 0) -> StateRead:
        return [r for r in self.checkpoints.reads if self.text(r.receiver) == receiver][nth]

    def saves_of(self, receiver: str, nth: int = 0) -> list[str]:
        return [self.text(s.call) for s in self.checkpoints.saves_of(self.read(receiver, nth))]


def test_a_save_around_the_state_dict_writes_it():
    script = Script("torch.save(model.state_dict(), 'm.pt')\n")
    assert script.saves_of("model") == ["torch.save(model.state_dict(), 'm.pt')"]
    (save,) = script.checkpoints.saves
    assert save.torch_save and not save.main_process


def test_a_dict_of_states_put_in_a_name_is_written_by_the_save_of_that_name():
    script = Script("""\
        state = {"model": model.state_dict(), "opt": opt.state_dict()}
        other = {"x": 1}
        torch.save(other, "o.pt")
        torch.save(state, "ckpt.pt")
        """)
    assert script.saves_of("model") == ['torch.save(state, "ckpt.pt")']
    assert script.saves_of("opt") == ['torch.save(state, "ckpt.pt")']


def test_names_are_followed_through_several_assignments_and_nested_displays():
    script = Script("""\
        import copy
        best = copy.deepcopy(model.state_dict())
        ckpt = {"model": best, "epoch": 3}
        torch.save(obj=ckpt, f="best.pt")
        """)
    assert script.saves_of("model") == ['torch.save(obj=ckpt, f="best.pt")']


def test_a_copy_kept_in_memory_is_written_by_no_save():
    script = Script("""\
        best = model.state_dict()
        model.load_state_dict(best)
        """)
    assert script.saves_of("model") == []
    assert script.checkpoints.loaded_into() == {"model"}


def test_a_later_rebinding_of_the_name_is_not_the_state_saved():
    script = Script("""\
        state = model.state_dict()
        state = {"epoch": 1}
        torch.save(state, "e.pt")
        """)
    assert script.saves_of("model") == []


def test_each_element_of_a_tuple_assignment_is_its_own_value():
    script = Script("""\
        a, b = model.state_dict(), opt.state_dict()
        torch.save(b, "opt.pt")
        """)
    assert script.saves_of("model") == []
    assert script.saves_of("opt") == ['torch.save(b, "opt.pt")']


def test_accelerator_and_safetensors_saves_write_but_are_not_torch_save():
    script = Script("""\
        from safetensors.torch import save_file
        accelerator = Accelerator()
        accelerator.save(model.state_dict(), "a.pt")
        save_file(model.state_dict(), "m.safetensors")
        """)
    saves = script.checkpoints.saves
    assert [script.text(s.call.func) for s in saves] == ["accelerator.save", "save_file"]
    assert not any(s.torch_save for s in saves)
    assert script.saves_of("model", 0) == ['accelerator.save(model.state_dict(), "a.pt")']


def test_a_save_in_a_function_reads_the_state_bound_there():
    script = Script("""\
        def checkpoint(path):
            state = {"model": model.state_dict()}
            if rank == 0:
                torch.save(state, path)
        """)
    assert script.saves_of("model") == ["torch.save(state, path)"]
    (save,) = script.checkpoints.saves
    assert save.main_process


@pytest.mark.parametrize(
    ("test", "main"),
    [
        ("master_process", True),
        ("accelerator.is_main_process", True),
        ("rank == 0", True),
        ("0 == args.local_rank", True),
        ("dist.get_rank() == 0", True),
        ("args.local_rank in (-1, 0)", True),
        ('int(os.environ["RANK"]) == 0', True),
        ("not rank", True),
        ("epoch % 10 == 0 and master_process", True),
        ("utils.is_main_process()", True),
        ("is_main_process()", True),
        ("misc.is_main_process() and args.output_dir", True),
        ("utils.is_main_process(group)", False),
        ("utils.get_rank()", False),
        ("rank == 1", False),
        ("epoch == 0", False),
        ("args.save", False),
        ("master_process or debug", False),
    ],
)
def test_main_process_tests(test: str, main: bool):
    assert is_main_process_test(ast.parse(test, mode="eval").body) is main


def test_a_save_in_the_else_of_a_rank_test_is_not_the_main_process_only():
    script = Script("""\
        if rank == 0:
            pass
        else:
            torch.save(model.state_dict(), "m.pt")
        """)
    (save,) = script.checkpoints.saves
    assert not save.main_process


def test_loads_read_from_torch_load_directly_or_through_a_name():
    script = Script("""\
        ckpt = torch.load("ckpt.pt", map_location="cpu")
        model.load_state_dict(ckpt["model"])
        opt.load_state_dict(torch.load("opt.pt"))
        """)
    loads = script.checkpoints.loads_with_reads()
    assert [(script.text(load.receiver), [script.text(c) for c in load.reads]) for load in loads] == [
        ("model", ['torch.load("ckpt.pt", map_location="cpu")']),
        ("opt", ['torch.load("opt.pt")']),
    ]


def test_pairs_group_each_objects_reads_saves_and_loads_by_its_origin():
    script = Script("""\
        net = model.to("cpu")
        state = {"model": net.state_dict(), "opt": opt.state_dict()}
        torch.save(state, "ckpt.pt")
        ckpt = torch.load("ckpt.pt")
        model.load_state_dict(ckpt["model"])
        opt.load_state_dict(ckpt["opt"])
        """)
    roles = script.roles

    def identify(expr: ast.expr, where) -> object:
        found = roles.origin(expr, where, through=True)
        return found.call if isinstance(found, Origin) else None

    pairs = {script.text(p.state): p for p in script.checkpoints.pairs(identify)}
    assert set(pairs) == {"torch.nn.Linear(4, 2)", "torch.optim.SGD(model.parameters(), lr=0.1)"}
    model_pair = pairs["torch.nn.Linear(4, 2)"]
    assert [script.text(r.receiver) for r in model_pair.reads] == ["net"]
    assert [script.text(s.call) for s in model_pair.saves] == ['torch.save(state, "ckpt.pt")']
    assert [script.text(load.receiver) for load in model_pair.loads] == ["model"]
    assert [script.text(c) for c in model_pair.loads[0].reads] == ['torch.load("ckpt.pt")']


def test_whole_module_pickling_is_told_apart_from_a_state_dict_save():
    script = Script("""\
        torch.save(model, "model.pt")
        torch.save(model.state_dict(), "weights.pt")
        """)
    whole = script.checkpoints.whole_module_saves(script.roles.is_model)
    assert [script.text(s.call) for s in whole] == ['torch.save(model, "model.pt")']


def test_a_module_function_named_save_is_a_save_only_when_imported():
    script = Script("""\
        def save(x):
            pass
        save(model.state_dict())
        """)
    assert script.checkpoints.saves == []


def test_save_at_answers_for_one_call():
    script = Script('torch.save(model, "m.pt")\nprint(model)\n')
    calls = {script.text(n): n for n in ast.walk(script.ctx.tree) if isinstance(n, ast.Call)}
    save = script.checkpoints.save_at(calls['torch.save(model, "m.pt")'])
    assert save is not None and save.torch_save
    assert script.checkpoints.save_at(calls["print(model)"]) is None
    assert script.checkpoints.save_at(None) is None


@pytest.mark.parametrize(
    "body",
    [
        """\
        def checkpoint(path, rank):
            is_main = rank == 0
            if is_main:
                torch.save(model.state_dict(), path)
        """,
        """\
        def checkpoint(path, rank):
            if rank != 0:
                return
            torch.save(model.state_dict(), path)
        """,
        """\
        def train(rank):
            is_main = dist.get_rank() == 0
            for epoch in range(2):
                if not is_main:
                    continue
                torch.save(model.state_dict(), "m.pt")
        """,
        """\
        def is_main(rank):
            return rank == 0

        def checkpoint(path, rank):
            if not is_main(rank):
                return
            torch.save(model.state_dict(), path)
        """,
        """\
        def is_main(rank):
            return rank == 0

        def checkpoint(path, rank):
            if is_main(rank):
                torch.save(model.state_dict(), path)
        """,
        """\
        import torch.distributed as dist

        def is_rank0():
            return not dist.is_available() or not dist.is_initialized() or dist.get_rank() == 0

        def checkpoint(path):
            if is_rank0():
                torch.save(model.state_dict(), path)
        """,
        """\
        from torch import distributed

        def checkpoint(path, args):
            if distributed.get_world_size() == 1 or args.local_rank == 0:
                torch.save(model.state_dict(), path)
        """,
    ],
)
def test_a_save_under_a_main_process_flag_or_after_an_early_exit_is_the_main_process_only(body: str):
    """The fixer's test (survey 19e sphere_flow: ``is_main = rank == 0``, ``if not is_main:
    continue``); before, the lint saw only an ``if`` on the rank written out, so a helper saving
    this way was a checkpoint writer every process ran, and its calls got a second guard. A
    disjunction of a rank test with "not distributed at all" (survey 23c psma_segresnet's
    ``is_rank0()``: ``not dist.is_initialized() or dist.get_rank() == 0``) holds on the main
    process only too."""
    (save,) = Script(body).checkpoints.saves
    assert save.main_process


@pytest.mark.parametrize(
    "body",
    [
        """\
        def checkpoint(path, rank):
            is_main = rank == 0
            is_main = True
            if is_main:
                torch.save(model.state_dict(), path)
        """,
        """\
        def checkpoint(path, rank):
            torch.save(model.state_dict(), path)
            if rank != 0:
                return
        """,
        """\
        def checkpoint(path, rank):
            if rank != 0:
                print("not main")
            torch.save(model.state_dict(), path)
        """,
        """\
        def is_main(rank):
            if rank == 0:
                return True
            return rank == 0 or True

        def checkpoint(path, rank):
            if not is_main(rank):
                return
            torch.save(model.state_dict(), path)
        """,
        """\
        import torch.distributed as dist

        def checkpoint(path, rank):
            if not torch.cuda.is_available() or not torch.cuda.is_initialized() or rank == 0:
                torch.save(model.state_dict(), path)
        """,
        """\
        import torch.distributed as dist

        def checkpoint(path, rank):
            if not dist.is_initialized() or rank == 1:
                torch.save(model.state_dict(), path)
        """,
        """\
        def checkpoint(path, rank):
            if not is_initialized() or rank == 0:
                torch.save(model.state_dict(), path)
        """,
    ],
)
def test_a_flag_bound_otherwise_or_an_exit_after_the_save_guards_nothing(body: str):
    (save,) = Script(body).checkpoints.saves
    assert not save.main_process
