"""Hand-written batch sources: a function of the script that the training loop calls for its
batches (nanoGPT's ``get_batch(split)``), drawing random rows (``torch.randint``) or slicing a
tensor, instead of iterating a ``DataLoader``.

``accelerate launch`` splits only prepared loaders: such a source gives every rank the same
batches unless the script seeds each process differently (``torch.manual_seed(1337 +
seed_offset)``, a seed from the rank or ``accelerator.process_index``). The converter's advice
and the lint read this one answer.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import TYPE_CHECKING

from regcomp_lint.analysis.file_context import FileContext
from regcomp_lint.knowledge.torch_api import RANDOM_DRAWS, SEEDS

if TYPE_CHECKING:
    from regcomp_lint.analysis.training_roles import TrainingRoles

#: Parts of a name that say a value differs per process.
PER_RANK_NAMES = ("rank", "seed_offset", "process_index")


@dataclass(frozen=True)
class BatchSource:
    """A local function the training loop calls for batches; ``calls``: those calls;
    ``draws``: the random index draws in it; ``slices``: the tensor slices it takes."""

    function: ast.FunctionDef | ast.AsyncFunctionDef
    calls: tuple[ast.Call, ...]
    draws: tuple[ast.Call, ...]
    slices: tuple[ast.Subscript, ...]


def batch_sources(roles: TrainingRoles) -> list[BatchSource]:
    """The file's hand-written batch sources (see the module docstring)."""
    ctx = roles.ctx
    calls_by_callee = {id(n.func): n for n in ast.walk(ctx.tree) if isinstance(n, ast.Call)}
    found: dict[int, tuple[ast.FunctionDef | ast.AsyncFunctionDef, list[ast.Call]]] = {}
    for use in roles.uses:
        if use.how != "called" or not isinstance(use.expr, ast.Name) or not roles.trains_on(use):
            continue
        bound = roles.bindings.lookup(use.expr, use.where)
        function = bound.value if bound is not None else None
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        calls = found.setdefault(id(function), (function, []))[1]
        call = calls_by_callee.get(id(use.expr))
        if call is not None and all(call is not known for known in calls):
            calls.append(call)
    sources: list[BatchSource] = []
    for function, calls in found.values():
        draws = tuple(
            n for n in ast.walk(function) if isinstance(n, ast.Call) and ctx.resolves_to(n.func, *RANDOM_DRAWS)
        )
        slices = tuple(n for n in ast.walk(function) if isinstance(n, ast.Subscript) and _slices_a_name(n))
        if draws or slices:
            sources.append(BatchSource(function, tuple(calls), draws, slices))
    return sources


def seeded_per_rank(ctx: FileContext) -> list[ast.Call]:
    """Seeding calls whose seed reads the process's rank (``torch.manual_seed(1337 + seed_offset)``)."""
    return [
        node
        for node in ast.walk(ctx.tree)
        if isinstance(node, ast.Call)
        and ctx.resolves_to(node.func, *SEEDS)
        and any(_per_rank(arg) for arg in [*node.args, *(kw.value for kw in node.keywords)])
    ]


def _slices_a_name(node: ast.Subscript) -> bool:
    """``data[i : i + block_size]``: a slice of a variable (a tensor, an array)."""
    return isinstance(node.slice, ast.Slice) and isinstance(node.value, ast.Name)


def _per_rank(expr: ast.AST) -> bool:
    for node in ast.walk(expr):
        name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
        if name is not None and any(part in name.lower() for part in PER_RANK_NAMES):
            return True
    return False
