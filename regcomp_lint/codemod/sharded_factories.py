"""A training loader that a data factory of another module returns, sharded there already
(survey 14 D2: ``tr_loader, vl_loader, spe = get_dataloaders(..., distributed=True)``, whose
``data.py`` builds a ``DistributedSampler``). Prepared, it would be sharded a second time: each
rank would see 1/N of its share, and a schedule counted in its batches would stop part-way.

It stays unprepared when the factory can be read (a module of the project beside the script) and
builds a sharding sampler (:mod:`regcomp_lint.analysis.distributed_samplers`), or when it cannot
be read (a library's, a module not there) but the script sets up its own processes and tells the
factory so (``distributed=True``, ``rank=``, ``world_size=``) or the factory hands back the
sampler too and the script calls its ``set_epoch()`` (``train_loader, val_loader, train_sampler,
val_sampler = get_loaders(..., rank, world_size)``, survey 15). Unprepared is exactly right there
whatever the factory does: every rank gets the batches it got in the original, sharded or not,
where preparing is right only if the factory does not shard. A factory that can be read and
builds no such sampler is prepared as before.
"""

from __future__ import annotations

import ast
import os

from regcomp_lint.analysis.distributed_samplers import builds_distributed_sampler, project_definition
from regcomp_lint.analysis.reachability.modules import ParsedModule
from regcomp_lint.codemod.local_modules import importer_of, star_imports, star_source
from regcomp_lint.codemod.tree import Tree
from regcomp_lint.knowledge.torch_api import DISTRIBUTED_FLAG_KEYWORDS, LOADER_SAMPLER_ATTRIBUTE, SAMPLER_SET_EPOCH

_LOADER_SAMPLER = f".{LOADER_SAMPLER_ATTRIBUTE}"


def sharded_by_factory(tree: Tree, imports, call: ast.Call, by_hand: bool, sampler: str | None = None) -> str | None:
    """The note for the loaders ``call`` (another module's factory) returns when they stay
    unprepared (see the module docstring), else None; ``by_hand``: the script sets up its own
    process group or DDP; ``sampler``: a name bound from ``call`` that the script calls
    ``set_epoch()`` on (:func:`sampler_beside`)."""
    name = ast.unparse(call.func)
    readable = _definition(tree, imports, call.func)
    if readable is not None:
        function, path = readable
        if function is None:
            return None  # the module is read and defines no such function (a class): not a factory
        if builds_distributed_sampler(*function):
            where = os.path.basename(path) if path else "its module"
            return (
                f"is built by {name}() of {where}, which builds a DistributedSampler (one shard per rank already): "
                "left unprepared, so every rank sees the batches it saw before"
            )
        return None
    told = next((kw for kw in call.keywords if kw.arg in DISTRIBUTED_FLAG_KEYWORDS and not _is_off(kw.value)), None)
    if by_hand and told is None and sampler is not None:
        handed = (
            f"the script calls {sampler}.{SAMPLER_SET_EPOCH}() on the loader's own sampler"
            if sampler.endswith(_LOADER_SAMPLER)
            else f"hands back {sampler} too, whose {SAMPLER_SET_EPOCH}() the script calls"
        )
        return (
            f"comes from {name}(), which cannot be read but {handed} (a DistributedSampler: one shard per rank "
            "already): left unprepared, so every rank sees exactly the batches it saw before (prepared, it would be "
            "sharded twice: each rank would see 1/N of its share)"
        )
    if not by_hand or told is None:
        return None
    return (
        f"comes from a factory told {told.arg}={ast.unparse(told.value)} by a script that sets up its own processes, "
        f"and {name}() cannot be read: left unprepared, so every rank sees exactly the batches it saw before, whether "
        "the factory shards them or not (prepared, loaders it shards already would be sharded twice: each rank would "
        "see 1/N of its share)"
    )


def sharded_by_own_method(module: ast.Module, imports, call: ast.Call, filename: str | None) -> str | None:
    """The note for the loader ``call`` returns when it calls a method of a class of this file
    (``train_dataloader = dataset.get_dataloader(dtype="train")``, survey 24d, ddp_demo) and every
    class of the file defining a method of that name builds a sharding sampler in it: prepared,
    the loader would be sharded a second time. Else None."""
    func = call.func
    if not isinstance(func, ast.Attribute) or (isinstance(func.value, ast.Name) and imports.imported(func.value.id)):
        return None
    parsed = ParsedModule.from_tree(module, filename, imports)
    owners = [
        (cls.name, method)
        for cls in parsed.classes.values()
        for method in cls.body
        if isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)) and method.name == func.attr
    ]
    if not owners or not all(builds_distributed_sampler(method, parsed) for _, method in owners):
        return None
    return (
        f"is built by {owners[0][0]}.{func.attr}() of this file, which builds a DistributedSampler (one shard per "
        "rank already): left unprepared, so every rank sees the batches it saw before (prepared, it would be sharded "
        "twice: each rank would see 1/N of its share)"
    )


def sampler_beside(module: ast.Module, call: ast.Call) -> str | None:
    """A name the statement unpacking ``call`` binds that the script calls ``set_epoch()`` on: the
    factory returned the sampler of its loaders beside them; or ``<loader>.sampler`` when the script
    calls ``set_epoch()`` on the own sampler of a loader ``call`` returns (survey 23b, gpt2_chakra:
    ``train_loader.sampler.set_epoch(epoch)``, which only a DistributedSampler-like sampler has)."""
    names: set[str] = set()
    unpacked = False
    for node in ast.walk(module):
        if isinstance(node, ast.Assign) and node.value is call:
            target = node.targets[0]
            unpacked = isinstance(target, (ast.Tuple, ast.List))
            elts = target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target]
            names = {e.id for e in elts if isinstance(e, ast.Name)}
    if not names:
        return None
    for node in ast.walk(module):
        func = node.func if isinstance(node, ast.Call) else None
        if not isinstance(func, ast.Attribute) or func.attr != SAMPLER_SET_EPOCH:
            continue
        owner = func.value
        if unpacked and isinstance(owner, ast.Name) and owner.id in names:
            return owner.id
        if (
            isinstance(owner, ast.Attribute)
            and owner.attr == LOADER_SAMPLER_ATTRIBUTE
            and isinstance(owner.value, ast.Name)
            and owner.value.id in names
        ):
            return f"{owner.value.id}{_LOADER_SAMPLER}"
    return None


def _definition(tree: Tree, imports, func: ast.expr):
    """``((function, module), path)`` for a factory of a project module that can be read (with
    ``function`` None when that module defines no function of that name), or None when it cannot."""
    if tree.filename is None:
        return None
    importer = importer_of(tree.filename)
    if imports.root_is_import(func):
        found = project_definition(imports.qualname(func) or "", importer)
    elif isinstance(func, ast.Name):
        star = star_source(importer, star_imports(tree), func.id)
        found = (star[0], func.id) if star is not None else None
    else:
        return None
    if found is None:
        return None
    module, name = found
    function = module.functions.get(name)
    return ((function, module) if function is not None else None), module.path


def _is_off(value: ast.expr) -> bool:
    return isinstance(value, ast.Constant) and value.value in (False, None, 0)


def sharded_on_another_branch(tree: Tree, roles, expr: ast.expr, where, bound, by_hand: bool) -> str | None:
    """Why the loop's loader stays unprepared when another binding of its name in the same scope,
    on another branch, comes from a call that shards it already (survey 21a, drift_dit:
    ``if kind == "imagenet": loader, n = build_imagenet_loader(cfg, rank=rank, world_size=ws)`` then
    ``elif kind == "robotics": loader, ... = build_robotics_loader(cfg)``), else None. ``bound`` is
    the binding the loop reads last. One ``prepare()`` cannot shard one branch and not the other:
    prepared, the sharded branch's loader would be sharded twice (each rank 1/N of its share);
    unprepared, every rank iterates on either branch exactly what it iterated in the original."""
    for other in roles.bindings.every_binding(expr, where):
        call = other.value
        if other is bound or not isinstance(call, ast.Call) or other.where.function is not bound.where.function:
            continue
        why = roles.split_by_rank([*call.args, *(kw.value for kw in call.keywords)], other.where)
        why = f"is {why}" if why is not None else None
        if why is None and roles.origin(call, other.where) is None:
            why = sharded_by_factory(tree, roles.ctx.imports, call, by_hand, sampler_beside(roles.ctx.tree, call))
        if why is None:
            continue
        why = why.split(": left unprepared", 1)[0]
        last = ast.unparse(bound.value.func) if isinstance(bound.value, ast.Call) else ast.unparse(bound.value)
        return (
            f"{ast.unparse(expr)} (from {ast.unparse(call.func)}(), line {call.lineno}) {why}; the same name is "
            f"bound on another branch from {last}() (line {bound.value.lineno}): left unprepared on every branch, so "
            "every rank iterates exactly what it iterated in the original (one prepare() cannot shard one branch and "
            "not the other; prepared, the sharded loader would be sharded twice: each rank would see 1/N of its share)"
        )
    return None
