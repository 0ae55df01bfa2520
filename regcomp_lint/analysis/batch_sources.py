"""Hand-written batch sources: a function of the script that the training loop calls for its
batches (nanoGPT's ``get_batch(split)``), drawing random rows (``torch.randint``) or slicing a
tensor, instead of iterating a ``DataLoader``.

``accelerate launch`` splits only prepared loaders: such a source gives every rank the same
batches unless the script seeds each process differently (``torch.manual_seed(1337 +
seed_offset)``, a seed from the rank or ``accelerator.process_index``). The converter reads this one answer: where every seed of the
generators the sources draw from can take the process index, it adds it (nanoGPT's
``seed_offset``); otherwise its note names what stands in the way.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import TYPE_CHECKING

from regcomp_lint.analysis.file_context import FileContext
from regcomp_lint.files.parsing import walk
from regcomp_lint.knowledge.torch_api import (
    GENERATOR_OF_PREFIX,
    RANDOM_DRAWS,
    RANDOM_VALUES,
    SEEDS,
    SEEDS_EVERY_GENERATOR,
)

if TYPE_CHECKING:
    from regcomp_lint.analysis.training_roles import TrainingRoles

#: Parts of a name that say a value differs per process.
PER_RANK_NAMES = ("rank", "seed_offset", "process_index")


@dataclass(frozen=True)
class BatchSource:
    """A local function the training loop calls for batches; ``calls``: those calls;
    ``draws``: the random index draws in it; ``slices``: the tensor slices it takes; ``loops``:
    the loops around the calls."""

    function: ast.FunctionDef | ast.AsyncFunctionDef
    calls: tuple[ast.Call, ...]
    draws: tuple[ast.Call, ...]
    slices: tuple[ast.Subscript, ...]
    loops: tuple[ast.AST, ...] = ()


def batch_sources(roles: TrainingRoles) -> list[BatchSource]:
    """The file's hand-written batch sources (see the module docstring)."""
    ctx = roles.ctx
    calls_by_callee = {id(n.func): n for n in walk(ctx.tree) if isinstance(n, ast.Call)}
    found: dict[int, tuple[ast.FunctionDef | ast.AsyncFunctionDef, list[ast.Call]]] = {}
    loops: dict[int, list[ast.AST]] = {}
    for use in roles.uses:
        if use.how != "called" or not isinstance(use.expr, ast.Name) or not roles.trains_on(use):
            continue
        bound = roles.bindings.lookup(use.expr, use.where)
        function = bound.value if bound is not None else None
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        calls = found.setdefault(id(function), (function, []))[1]
        loops.setdefault(id(function), []).extend(use.loops)
        call = calls_by_callee.get(id(use.expr))
        if call is not None and all(call is not known for known in calls):
            calls.append(call)
    sources: list[BatchSource] = []
    for function, calls in found.values():
        draws = tuple(n for n in walk(function) if isinstance(n, ast.Call) and ctx.resolves_to(n.func, *RANDOM_DRAWS))
        slices = tuple(n for n in walk(function) if isinstance(n, ast.Subscript) and _slices_a_name(n))
        if draws or slices:
            sources.append(BatchSource(function, tuple(calls), draws, slices, tuple(loops[id(function)])))
    return sources


def seeded_per_rank(ctx: FileContext) -> list[ast.Call]:
    """Seeding calls whose seed reads the process's rank (``torch.manual_seed(1337 + seed_offset)``)."""
    return [
        node
        for node in walk(ctx.tree)
        if isinstance(node, ast.Call)
        and ctx.resolves_to(node.func, *SEEDS)
        and any(_per_rank(arg) for arg in [*node.args, *(kw.value for kw in node.keywords)])
    ]


@dataclass(frozen=True)
class SeedOffsets:
    """How to make a file's hand-written batch sources draw differently in each process.

    ``draws``: the random draws of its sources; ``seeds``: the seeding calls of the generators
    they draw from (one per process once each adds the process index); ``values_before``: random
    values made outside the sources before training first asks them for a batch (a dataset drawn
    at random): with a seed per process each process would hold other data, so nothing is offset
    while there is one."""

    draws: tuple[ast.Call, ...]
    seeds: tuple[ast.Call, ...]
    values_before: tuple[ast.Call, ...]


def seed_offsets(roles: TrainingRoles) -> SeedOffsets | None:
    """None when the file has no source drawing at random, or already seeds per rank."""
    ctx = roles.ctx
    sources = [s for s in batch_sources(roles) if s.draws]
    if not sources or seeded_per_rank(ctx):
        return None
    draws = tuple(d for s in sources for d in s.draws)
    generators = {_generator(ctx.qualname(d.func) or "") for d in draws}
    seeds = tuple(
        node
        for node in walk(ctx.tree)
        if isinstance(node, ast.Call)
        and (node.args or node.keywords)
        and (
            ctx.resolves_to(node.func, *SEEDS_EVERY_GENERATOR)
            or (ctx.resolves_to(node.func, *SEEDS) and _generator(ctx.qualname(node.func) or "") in generators)
        )
    )
    batch_calls = [call for s in sources for call in s.calls]
    first_batch = min((call.lineno for call in batch_calls), default=0)
    # what the sources draw from, the model classes, and the loops that ask for batches (noise
    # drawn per step, experience collected between steps) differ per process as they should
    owners: list[ast.AST] = [s.function for s in sources]
    owners += [n for n in walk(ctx.tree) if isinstance(n, ast.ClassDef)]
    owners += [loop for s in sources for loop in s.loops]
    inside = {id(n) for owner in owners for n in walk(owner)}
    values_before = tuple(
        node
        for node in walk(ctx.tree)
        if isinstance(node, ast.Call)
        and id(node) not in inside
        and node.lineno < first_batch
        and _random_value(ctx, node)
    )
    return SeedOffsets(draws, seeds, tuple(sorted(values_before, key=lambda n: (n.lineno, n.col_offset))))


def _generator(qualname: str) -> str:
    return next((family for prefix, family in GENERATOR_OF_PREFIX if qualname.startswith(prefix)), "")


def _random_value(ctx: FileContext, call: ast.Call) -> bool:
    """A call that fills values from a global generator (not a seeding call, not a generator of
    its own such as ``numpy.random.default_rng(0)``)."""
    if ctx.resolves_to(call.func, *RANDOM_VALUES):
        return True
    name = ctx.qualname(call.func) or ""
    return (
        _generator(name) in ("numpy", "random")
        and name not in SEEDS
        and name.rsplit(".", 1)[-1]
        not in ("default_rng", "RandomState", "Generator", "Random", "get_state", "getstate")
    )


def _slices_a_name(node: ast.Subscript) -> bool:
    """``data[i : i + block_size]``: a slice of a variable (a tensor, an array)."""
    return isinstance(node.slice, ast.Slice) and isinstance(node.value, ast.Name)


def _per_rank(expr: ast.AST) -> bool:
    """Reads the process's rank: a name that says so, torchrun's ``RANK``/``LOCAL_RANK``
    variable, ``dist.get_rank()``."""
    for node in walk(expr):
        if isinstance(node, ast.Constant) and node.value in ("RANK", "LOCAL_RANK"):
            return True
        if isinstance(node, ast.Attribute) and node.attr == "get_rank":
            return True
        name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
        if name is not None and any(part in name.lower() for part in PER_RANK_NAMES):
            return True
    return False
