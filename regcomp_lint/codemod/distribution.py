"""Find the distribution set-up a script does by hand.

Accelerate owns data-parallel wrapping; a script that also wraps is adapted by
``hand_distribution`` (torchrun env-rank scripts and ``mp.spawn`` workers). FSDP, RPC and other
frameworks are refused: their structure has no one-to-one Accelerate equivalent.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from regcomp_lint.analysis.distributed_setup import SetupCall
from regcomp_lint.codemod.lint_view import lint_view
from regcomp_lint.codemod.tree import Tree, find_all
from regcomp_lint.knowledge.torch_api import SINGLE_PROCESS_DATA_PARALLEL


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

    def multi_process_wraps(self, tree: Tree) -> list[cst.Call]:
        """The data-parallel wraps that span processes (DDP), not ``nn.DataParallel``'s
        one-process threads: in the original, each of them meant one process per rank."""
        return [c for c in self.data_parallel if not tree.resolves_to(c.func, *SINGLE_PROCESS_DATA_PARALLEL)]

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
    """The script's own distribution, as the lint's analysis sees it
    (:mod:`~regcomp_lint.analysis.distributed_setup`), on the converter's nodes."""
    found = Distribution()
    view = lint_view(tree)
    setup = view.distributed_setup
    if setup is None:
        return found
    lists = {
        SetupCall.DATA_PARALLEL: found.data_parallel,
        SetupCall.INIT_PROCESS_GROUP: found.init_process_group,
        SetupCall.SET_DEVICE: found.set_device,
        SetupCall.SPAWN: found.spawn,
    }
    for call in find_all(tree.module, cst.Call):
        if view.is_dead(call):
            continue  # `milti_gpus = False` ... `if milti_gpus: model = DDP(model)`: a one-process script
        kind = setup.kind_of(view.expression_at(call))
        if kind in lists:
            lists[kind].append(call)
        elif kind is SetupCall.FSDP:
            found.blockers.append(f"it shards the model with FSDP by hand (line {tree.line(call)})")
        elif kind is SetupCall.RPC:
            found.blockers.append(f"it distributes work with torch.distributed.rpc (line {tree.line(call)})")
    for framework, stmt in setup.foreign_frameworks:
        found.blockers.append(f"it uses {framework} (import at line {stmt.lineno})")
    return found
