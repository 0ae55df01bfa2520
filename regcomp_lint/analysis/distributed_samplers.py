"""Which sampler a loader is fed already gives each rank its own shard: a ``DistributedSampler``,
a class deriving from it (VITS's ``DistributedBucketSampler``, in the script or a module of its
project, read with ``ast`` only), or any sampler told its rank's share (``num_replicas=``,
``rank=``). ``prepare()`` would shard such a loader a second time; with a batch sampler it also
replaces the sampler the script calls ``set_epoch`` on. A factory of another module that builds
one (``get_dataloaders(..., distributed=True)`` in ``data.py``) shards its loaders too.
"""

from __future__ import annotations

import ast

from regcomp_lint.analysis.name_resolution import ImportMap
from regcomp_lint.analysis.reachability.modules import ParsedModule, is_third_party, load_module, module_file
from regcomp_lint.files.parsing import walk
from regcomp_lint.knowledge.torch_api import DISTRIBUTED_SAMPLER, SHARD_KEYWORDS

#: How many bases (and modules) up a class is followed to DistributedSampler.
MAX_DEPTH = 4

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef


def shards_per_rank(call: ast.Call, imports: ImportMap, classes: dict[str, ast.ClassDef], filename: str | None) -> bool:
    """``call`` builds a sampler that gives each rank its own shard: told its share by keyword,
    a DistributedSampler, or a class (of ``classes``, the file's, or imported from a module of
    the project beside ``filename``) deriving from it."""
    if any(kw.arg in SHARD_KEYWORDS and not _is_none(kw.value) for kw in call.keywords):
        return True
    return _is_distributed_sampler(call.func, imports, classes, filename, 0)


def builds_distributed_sampler(function: FunctionNode, module: ParsedModule, depth: int = 0) -> bool:
    """A factory of ``module`` builds a sharding sampler in its body or in a function of the same
    module it calls (``get_dataloaders`` calling ``_make_loader(ds, distributed)``)."""
    for node in walk(function):
        if not isinstance(node, ast.Call):
            continue
        if shards_per_rank(node, module.imports, module.classes, module.path):
            return True
        func = node.func
        if isinstance(func, ast.Name) and func.id in module.functions and depth < MAX_DEPTH:
            callee = module.functions[func.id]
            if callee is not function and builds_distributed_sampler(callee, module, depth + 1):
                return True
    return False


def project_definition(qualname: str, importer: str | None) -> tuple[ParsedModule, str] | None:
    """The module of the script's project (beside ``importer``) that ``qualname``
    (``data.get_dataloaders``) comes from, with the name it defines there; None when that
    module is a library's or cannot be read."""
    if "." not in qualname or importer is None:
        return None
    module, name = qualname.rsplit(".", 1)
    if not module.startswith(".") and is_third_party(module.split(".")[0]):
        return None
    path = module_file(importer, module)
    parsed = load_module(path) if path else None
    return (parsed, name) if parsed is not None else None


def _is_distributed_sampler(
    func: ast.expr, imports: ImportMap, classes: dict[str, ast.ClassDef], filename: str | None, depth: int
) -> bool:
    if imports.resolves_to(func, *DISTRIBUTED_SAMPLER):
        return True
    if depth > MAX_DEPTH:
        return False
    if isinstance(func, ast.Name) and not imports.imported(func.id) and func.id in classes:
        cls = classes[func.id]
        return any(_is_distributed_sampler(base, imports, classes, filename, depth + 1) for base in cls.bases)
    qualname = imports.qualname(func) if imports.root_is_import(func) else None
    found = project_definition(qualname, filename) if qualname else None
    if found is None or found[1] not in found[0].classes:
        return False
    module, name = found
    return any(
        _is_distributed_sampler(base, module.imports, module.classes, module.path, depth + 1)
        for base in module.classes[name].bases
    )


def _is_none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None
