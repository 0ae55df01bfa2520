"""Metric reductions tied to the loader they summarise (analysis/metric_reductions.py)."""

from __future__ import annotations

import ast
import textwrap

from regcomp_lint.analysis.file_context import FileContext
from regcomp_lint.analysis.training_roles import TrainingRoles
from regcomp_lint.files.source import SourceFile
from regcomp_lint.lint.engine import walk

HEAD = """\
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader
model = torch.nn.Linear(4, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
train_dl = DataLoader(train_ds, batch_size=8)
val_dl = DataLoader(val_ds, batch_size=8)
"""


class Script:
    def __init__(self, body: str) -> None:
        self.src = HEAD + textwrap.dedent(body)
        self.ctx = FileContext(SourceFile("t.py", self.src), ast.parse(self.src))
        self.roles: TrainingRoles = self.ctx.semantic.training_roles
        walk(self.ctx, [])

    def text(self, node: ast.AST) -> str:
        return self.ctx.source.segment(node)

    def tied(self) -> list[tuple[str, str, bool]]:
        """(collective call, loader built, evaluates) of each tied reduction."""
        return [
            (self.text(m.reduction.call), self.text(m.loader.call), m.evaluates)
            for m in self.roles.metric_reductions.tied(self.roles)
        ]


TRAIN = """\
for epoch in range(3):
    for x, y in train_dl:
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        dist.all_reduce(loss)
"""


def test_a_reduction_inside_a_loop_summarises_that_loops_loader():
    script = Script(TRAIN)
    assert script.tied() == [("dist.all_reduce(loss)", "DataLoader(train_ds, batch_size=8)", False)]


def test_an_accumulated_metric_reduced_after_the_eval_loop_is_tied_to_the_eval_loader():
    script = Script(
        TRAIN
        + """\
def evaluate(loader):
    correct = torch.zeros(())
    for x, y in loader:
        correct += (model(x).argmax(1) == y).sum()
    dist.all_reduce(correct, op=dist.ReduceOp.SUM)
    return correct
acc = evaluate(val_dl)
"""
    )
    assert script.tied()[1:] == [
        ("dist.all_reduce(correct, op=dist.ReduceOp.SUM)", "DataLoader(val_ds, batch_size=8)", True)
    ]


def test_a_tensor_built_after_the_loop_is_tied_to_the_last_loop_before_it():
    script = Script(
        TRAIN
        + """\
correct = total = 0
with torch.no_grad():
    for x, y in val_dl:
        correct += int((model(x).argmax(1) == y).sum())
        total += len(y)
stats = torch.tensor([correct, total])
torch.distributed.reduce(stats, dst=0)
gathered = [None, None]
dist.all_gather_object(gathered, stats)
"""
    )
    assert script.tied()[1:] == [
        ("torch.distributed.reduce(stats, dst=0)", "DataLoader(val_ds, batch_size=8)", True),
        ("dist.all_gather_object(gathered, stats)", "DataLoader(val_ds, batch_size=8)", True),
    ]
    (reduction,) = script.roles.metric_reductions.of_loader(
        script.roles, script.roles.metric_reductions.tied(script.roles)[0].loader
    )
    assert reduction.collective == "all_reduce" and script.text(reduction.value) == "loss"


def test_the_value_gathered_is_the_local_one_at_each_collectives_position():
    script = Script("t = torch.ones(2)\nout = [t, t]\ndist.all_gather(out, t)\ndist.all_gather_into_tensor(big, t)\n")
    reductions = script.roles.metric_reductions.reductions
    assert [(r.collective, script.text(r.value)) for r in reductions] == [
        ("all_gather", "t"),
        ("all_gather_into_tensor", "t"),
    ]


def test_a_reduction_with_no_loader_loop_before_it_is_tied_to_none():
    script = Script("t = torch.ones(2)\ndist.all_reduce(t)\n" + TRAIN)
    assert [call for call, _, _ in script.tied()] == ["dist.all_reduce(loss)"]
    assert len(script.roles.metric_reductions.reductions) == 2


def test_a_function_named_like_a_collective_is_not_one():
    script = Script("def all_reduce(x):\n    return x\nall_reduce(1)\n")
    assert script.roles.metric_reductions.reductions == []
