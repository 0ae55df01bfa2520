"""The distribution a script sets up by hand: DDP/DataParallel wraps, ``init_process_group``,
``torch.cuda.set_device``, ``mp.spawn`` workers, ``destroy_process_group``, the rank and world
size it reads, and what has no Accelerate equivalent (FSDP by hand, ``torch.distributed.rpc``,
other frameworks).

``regcomp-fix`` decides from it whether and how to adapt a script's own DDP set-up
(``codemod.distribution`` asks it call by call); the lint reads the same answer. Built after
the engine's walk (which records the imports its names resolve through).
"""

from __future__ import annotations

import ast
import enum
from collections.abc import Callable
from dataclasses import dataclass, field

from regcomp_lint.analysis.file_context import FileContext, string_literal
from regcomp_lint.analysis.name_resolution import last_parts
from regcomp_lint.files.parsing import walk
from regcomp_lint.knowledge import torch_api
from regcomp_lint.knowledge.training_libraries import FOREIGN_FRAMEWORKS


class SetupCall(str, enum.Enum):
    DATA_PARALLEL = "data parallel wrap"
    INIT_PROCESS_GROUP = "init_process_group"
    SET_DEVICE = "torch.cuda.set_device"
    SPAWN = "spawn"
    FSDP = "FSDP"
    RPC = "rpc"
    DESTROY_PROCESS_GROUP = "destroy_process_group"


#: What a rank read gives: the global rank, the rank on this machine, the number of processes.
RANK, LOCAL_RANK, WORLD_SIZE = "rank", "local_rank", "world_size"
_ENVIRONMENT = torch_api.TORCHRUN_VARIABLES


@dataclass(frozen=True)
class RankRead:
    """``os.environ["RANK"]``, ``os.environ.get("LOCAL_RANK")``, ``dist.get_rank()``..."""

    node: ast.expr
    reads: str


@dataclass(frozen=True)
class SpawnedWorker:
    """The function a spawn call starts (``mp.spawn(worker, ...)``, ``mp.spawn(fn=worker, ...)``,
    ``start_processes(...)``, ``mp.spawn(functools.partial(worker, cfg), ...)``) and how many leading
    positional parameters a ``partial`` binds: torch passes the process index to the next one."""

    name: str
    bound: int = 0

    def index_parameter(self, function: ast.FunctionDef | ast.AsyncFunctionDef) -> str | None:
        """The name of ``function``'s parameter that receives the process index."""
        params = [*function.args.posonlyargs, *function.args.args]
        return params[self.bound].arg if function.name == self.name and self.bound < len(params) else None


def spawned_worker(call: ast.Call, is_partial: Callable[[ast.expr], bool]) -> SpawnedWorker | None:
    """What the spawn call ``call`` starts, when it names a function (``is_partial``: does a callee
    resolve to ``functools.partial``)."""
    target: ast.expr | None = call.args[0] if call.args and not isinstance(call.args[0], ast.Starred) else None
    if target is None:
        target = next((kw.value for kw in call.keywords if kw.arg == torch_api.SPAWN_FUNCTION_KEYWORD), None)
    bound = 0
    if isinstance(target, ast.Call) and target.args and is_partial(target.func):
        partial_args = target.args
        if any(isinstance(arg, ast.Starred) for arg in partial_args):
            return None
        target, bound = partial_args[0], len(partial_args) - 1
    return SpawnedWorker(target.id, bound) if isinstance(target, ast.Name) else None


@dataclass
class DistributedSetup:
    """The file's hand-made distribution (see the module docstring); ``ctx.semantic.distributed_setup``."""

    calls: dict[int, tuple[SetupCall, ast.Call]] = field(default_factory=dict)
    rank_reads: list[RankRead] = field(default_factory=list)
    #: (framework, import statement) of each framework Accelerate does not replace
    foreign_frameworks: list[tuple[str, ast.stmt]] = field(default_factory=list)
    #: the worker each spawn call starts, by the call's id (see :func:`spawned_worker`)
    workers: dict[int, SpawnedWorker] = field(default_factory=dict)

    def kind_of(self, call: ast.AST | None) -> SetupCall | None:
        """What the call ``call`` does to the distribution, if anything."""
        found = self.calls.get(id(call)) if call is not None else None
        return found[0] if found is not None else None

    def of_kind(self, kind: SetupCall) -> list[ast.Call]:
        return [call for found, call in self.calls.values() if found is kind]

    def worker_of(self, call: ast.AST | None) -> SpawnedWorker | None:
        """The worker the spawn call ``call`` starts, if it names one."""
        return self.workers.get(id(call)) if call is not None else None

    def index_parameter(self, function: ast.FunctionDef | ast.AsyncFunctionDef) -> str | None:
        """The parameter of ``function`` that a spawn call of the file passes the process index to."""
        return next((name for w in self.workers.values() if (name := w.index_parameter(function))), None)

    @property
    def by_hand(self) -> bool:
        """The script wraps, joins a process group or spawns its workers itself."""
        kinds = {kind for kind, _ in self.calls.values()}
        return bool(kinds & {SetupCall.DATA_PARALLEL, SetupCall.INIT_PROCESS_GROUP, SetupCall.SPAWN})


#: Qualified names of the calls of each kind (the RPC module is matched by prefix).
_KINDS: tuple[tuple[SetupCall, tuple[str, ...]], ...] = (
    (SetupCall.DATA_PARALLEL, torch_api.DATA_PARALLEL),
    (SetupCall.INIT_PROCESS_GROUP, torch_api.INIT_PROCESS_GROUP),
    (SetupCall.SET_DEVICE, torch_api.CUDA_SET_DEVICE),
    (SetupCall.SPAWN, torch_api.SPAWN),
    (SetupCall.FSDP, torch_api.FSDP),
    (SetupCall.DESTROY_PROCESS_GROUP, torch_api.DESTROY_PROCESS_GROUP),
)
#: a call named none of these resolves to no kind (the file's every call is asked)
_KIND_LAST_PARTS = last_parts(*(names for _, names in _KINDS))
_RANK_LAST_PARTS = last_parts(torch_api.RANK_CALLS, torch_api.GET_WORLD_SIZE, ("os.getenv",))


def find_distributed_setup(ctx: FileContext) -> DistributedSetup:
    found = DistributedSetup()
    branching: list[ast.If | ast.Try] = []  # (for _optional_imports: one walk of the file serves both)
    for node in walk(ctx.tree):
        if isinstance(node, (ast.If, ast.Try)):
            branching.append(node)
        elif isinstance(node, ast.Call):
            kind = _call_kind(ctx, node)
            if kind is not None:
                found.calls[id(node)] = (kind, node)
            worker = (
                spawned_worker(node, lambda f: ctx.resolves_to(f, *torch_api.PARTIAL))
                if kind is SetupCall.SPAWN
                else None
            )
            if worker is not None:
                found.workers[id(node)] = worker
            reads = _rank_call(ctx, node)
            if reads is not None:
                found.rank_reads.append(RankRead(node, reads))
        elif isinstance(node, ast.Subscript) and _is_environ(ctx, node.value):
            reads = _ENVIRONMENT.get(string_literal(node.slice) or "")
            if reads is not None:
                found.rank_reads.append(RankRead(node, reads))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            framework = _foreign_framework(node)
            if framework is not None:
                found.foreign_frameworks.append((framework, node))
    optional = _optional_imports(branching)
    found.foreign_frameworks = [item for item in found.foreign_frameworks if id(item[1]) not in optional]
    found.rank_reads.sort(key=lambda read: (read.node.lineno, read.node.col_offset))
    found.foreign_frameworks.sort(key=lambda item: (item[1].lineno, item[1].col_offset))
    return found


def _call_kind(ctx: FileContext, call: ast.Call) -> SetupCall | None:
    if ctx.imports.last_part(call.func) in _KIND_LAST_PARTS:
        for kind, names in _KINDS:
            if ctx.resolves_to(call.func, *names):
                return kind
    qualname = ctx.imports.qualname(call.func) if ctx.imports.root_is_import(call.func) else None
    if qualname is not None and qualname.startswith(torch_api.RPC_MODULE + "."):
        return SetupCall.RPC
    return None


def _rank_call(ctx: FileContext, call: ast.Call) -> str | None:
    """``dist.get_rank()``, ``dist.get_world_size()``, ``os.environ.get("RANK")``, ``os.getenv("LOCAL_RANK")``."""
    func = call.func
    named = ctx.imports.last_part(func) in _RANK_LAST_PARTS
    if named and ctx.resolves_to(func, *torch_api.RANK_CALLS):
        return RANK
    if named and ctx.resolves_to(func, *torch_api.GET_WORLD_SIZE):
        return WORLD_SIZE
    reads_environment = (named and ctx.resolves_to(func, "os.getenv")) or (
        isinstance(func, ast.Attribute) and func.attr == "get" and _is_environ(ctx, func.value)
    )
    if reads_environment and call.args:
        return _ENVIRONMENT.get(string_literal(call.args[0]) or "")
    return None


def _is_environ(ctx: FileContext, node: ast.expr) -> bool:
    return ctx.resolves_to(node, "os.environ")


def _optional_imports(branching: list[ast.If | ast.Try]) -> set[int]:
    """Imports with a stand-in: one branch of an ``if``/``try`` (of ``branching``, the file's)
    imports the framework and the other binds the same name from elsewhere (minGPT's
    ``import pytorch_lightning as pl`` else ``import mingpt.fake_lightning as pl``). The script
    then runs without the framework."""
    found: set[int] = set()
    for node in branching:
        if isinstance(node, ast.If):
            branches = [node.body, node.orelse]
        else:
            branches = [node.body, *(h.body for h in node.handlers)]
        bound = [{alias: stmt for stmt in branch for alias in _imported_aliases(stmt)} for branch in branches]
        for index, names in enumerate(bound):
            others = set().union(*(b for i, b in enumerate(bound) if i != index))
            found |= {id(stmt) for alias, stmt in names.items() if alias in others}
    return found


def _imported_aliases(stmt: ast.stmt) -> list[str]:
    if not isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return []
    return [alias.asname or alias.name.split(".")[0] for alias in stmt.names]


def _foreign_framework(stmt: ast.Import | ast.ImportFrom) -> str | None:
    if isinstance(stmt, ast.ImportFrom):
        module = stmt.module or "" if not stmt.level else ""
    else:
        module = stmt.names[0].name
    for prefix, framework in FOREIGN_FRAMEWORKS:
        if module == prefix or module.startswith(prefix + "."):
            return framework
    return None
