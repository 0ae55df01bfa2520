"""``OptimizerSources.parameter_owners`` keeps its answers only once the file's analyses are
settled (walked, no pass of its own under way): a rule asking while the engine's walk still
feeds the bindings gets an answer worked out afresh, never one kept for later."""

from __future__ import annotations

import ast

from regcomp_lint.analysis.bindings import Where
from regcomp_lint.analysis.file_context import FileContext
from regcomp_lint.checks.base import Rule
from regcomp_lint.files.source import SourceFile
from regcomp_lint.lint.engine import walk

# `params` is bound below the function that reads it: while the walk is at the call, it is not yet
SCRIPT = (
    "import torch\n"
    "def build():\n"
    "    return torch.optim.SGD(params, lr=0.1)\n"
    "model = torch.nn.Linear(2, 2)\n"
    "params = list(model.parameters())\n"
)


class _Asker(Rule):
    """Asks the owners of every call's first argument while the walk visits the call."""

    code, name, message = "RC000", "asker", ""

    def __init__(self, ctx: FileContext) -> None:
        super().__init__(ctx)
        self.roles = ctx.semantic.training_roles
        self.bindings = ctx.semantic.bindings
        self.asked: list[tuple[bool, list[str]]] = []
        self.where: dict[int, Where] = {}

    def visit_Call(self, node: ast.Call) -> None:
        if node.args and isinstance(node.args[0], ast.Name) and node.args[0].id == "params":
            where = self.where[id(node.args[0])] = self.bindings.here(node.args[0])
            owners = self.roles.optimizers.parameter_owners(node.args[0], where)
            self.asked.append((self.ctx.semantic.settled, owners))


def _walked() -> tuple[FileContext, _Asker]:
    ctx = FileContext(SourceFile("train.py", SCRIPT), ast.parse(SCRIPT))
    asker = _Asker(ctx)
    assert not ctx.semantic.settled  # not walked yet
    walk(ctx, [asker])
    return ctx, asker


def _sgd(ctx: FileContext) -> ast.Call:
    return next(n for n in ast.walk(ctx.tree) if isinstance(n, ast.Call) and n.args and isinstance(n.args[0], ast.Name))


def test_an_answer_asked_during_the_walk_is_not_kept() -> None:
    ctx, asker = _walked()
    assert asker.asked == [(False, [])]  # `params` not bound yet where the walk is
    assert ctx.semantic.settled
    assert asker.roles.optimizers._owners == {}
    arg = _sgd(ctx).args[0]
    # asked again once settled: worked out from the whole file's bindings, not the walk's answer
    assert asker.roles.optimizers.parameter_owners(arg, asker.where[id(arg)]) == ["model"]


def test_settled_answers_are_kept_and_handed_out_as_copies() -> None:
    ctx, asker = _walked()
    optimizers = asker.roles.optimizers
    sgd = _sgd(ctx)
    arg = sgd.args[0]
    where = asker.where[id(arg)]
    first = optimizers.parameter_owners(arg, where)
    assert first == ["model"]
    first.append("changed by the caller")
    assert optimizers.parameter_owners(arg, where) == ["model"]
    assert len(optimizers._owners) >= 1
    # handed: asks whether expressions are models, still being worked out: never kept
    kept = len(optimizers._owners)
    optimizers.parameter_owners(sgd, where, handed=True)
    assert len(optimizers._owners) == kept
