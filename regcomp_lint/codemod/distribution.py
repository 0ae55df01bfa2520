"""Find the distribution set-up a script does by hand.

Accelerate owns data-parallel wrapping; a script that also wraps is adapted by
``hand_distribution`` (torchrun env-rank scripts and ``mp.spawn`` workers). FSDP, RPC and other
frameworks are refused: their structure has no one-to-one Accelerate equivalent.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from regcomp_lint.codemod.tree import Tree, find_all
from regcomp_lint.knowledge import torch_api
from regcomp_lint.knowledge.training_libraries import FOREIGN_FRAMEWORKS


@dataclass
class Distribution:
    data_parallel: list[cst.Call] = field(default_factory=list)
    init_process_group: list[cst.Call] = field(default_factory=list)
    set_device: list[cst.Call] = field(default_factory=list)
    #: ``mp.spawn(worker, ...)`` calls: the script starts its own worker processes
    spawn: list[cst.Call] = field(default_factory=list)
    #: reasons the script can never be converted (spawn, FSDP, other frameworks)
    blockers: list[str] = field(default_factory=list)

    @property
    def by_hand(self) -> bool:
        return bool(self.data_parallel or self.init_process_group or self.spawn)

    def describe(self, tree: Tree) -> str:
        parts = [
            f"{_short(tree, c)} at line {tree.line(c)}" for c in [*self.data_parallel, *self.init_process_group][:3]
        ]
        return ", ".join(parts)


def _short(tree: Tree, call: cst.Call) -> str:
    for name in tree.imported_names(call.func):
        return name.rsplit(".", 1)[-1]
    return "distributed set-up"


def find_distribution(tree: Tree) -> Distribution:
    found = Distribution()
    for call in find_all(tree.module, cst.Call):
        func = call.func
        if tree.resolves_to(func, *torch_api.DATA_PARALLEL):
            found.data_parallel.append(call)
        elif tree.resolves_to(func, *torch_api.INIT_PROCESS_GROUP):
            found.init_process_group.append(call)
        elif tree.resolves_to(func, *torch_api.CUDA_SET_DEVICE):
            found.set_device.append(call)
        elif tree.resolves_to(func, *torch_api.SPAWN):
            found.spawn.append(call)
        elif tree.resolves_to(func, *torch_api.FSDP):
            found.blockers.append(f"it shards the model with FSDP by hand (line {tree.line(call)})")
        elif tree.resolves_under(func, torch_api.RPC_MODULE):
            found.blockers.append(f"it distributes work with torch.distributed.rpc (line {tree.line(call)})")
    for stmt in find_all(tree.module, (cst.Import, cst.ImportFrom)):
        module = _imported_module(stmt)
        for prefix, framework in FOREIGN_FRAMEWORKS:
            if module == prefix or module.startswith(prefix + "."):
                found.blockers.append(f"it uses {framework} (import at line {tree.line(stmt)})")
                break
    return found


def _imported_module(stmt: cst.Import | cst.ImportFrom) -> str:
    from regcomp_lint.codemod.tree import dotted

    if isinstance(stmt, cst.ImportFrom):
        if stmt.relative:
            return ""
        return dotted(stmt.module) or "" if stmt.module is not None else ""
    first = stmt.names[0]
    return dotted(first.name) or ""
