"""One file's semantic model: every per-file analysis, built on first use and shared.

Rules (and anything else holding the file's :class:`~regcomp_lint.analysis.file_context.FileContext`)
ask ``ctx.semantic`` instead of building their own copy or keeping module-global caches:

- ``bindings``: what a name holds at a point (:class:`~regcomp_lint.analysis.bindings.Bindings`);
- ``accelerate_script``: the file's Accelerate setup (:class:`AccelerateScript`, on those bindings);
- ``training_roles``: what each built object does there -- trains, shards, steps per epoch
  (:class:`~regcomp_lint.analysis.training_roles.TrainingRoles`, read by RC402 and the converter);
- ``checkpoints``: the state dicts the file saves and loads back
  (:class:`~regcomp_lint.analysis.checkpoints.Checkpoints`: the training roles' own, or fed alone
  for RC404 where nothing asks for the roles);
- ``facts``: every function's :class:`FunctionFacts` and the ``is_compiling()``-guarded code
  (:class:`FactsCollector`);
- ``dead_code``: the regions a constant-false flag keeps from running
  (:class:`~regcomp_lint.analysis.dead_code.DeadCode`; the engine drops findings there);
- ``reachability(deep=..., functions=...)``: the call graphs from the forwards (:class:`Reachability`);
- ``model_finder``: which expressions hold a model with repeated blocks (:class:`ModelFinder`);
- ``devices``: fixed CUDA devices, CPU switches and device flags (:class:`Devices`, read by
  RC403 and the converter);
- ``distributed_setup``: the distribution the script sets up by hand (:class:`DistributedSetup`);
- ``shared(key, build)``: anything a higher layer computes once per file (RC2xx's breaks in other files).

The first six follow the walk (a rule asks "what does ``x`` hold *here*" while the engine
visits a node), so they are fed by the engine's single walk, once for all rules: asked for
before the walk (in a rule's ``__init__``), they are registered, and the engine calls their
handlers before the rules' ``visit_*`` and after the rules' ``leave_*``. Asked for after the
walk, or where no engine walk comes (:meth:`SemanticModel.build_alone`), each is built in a pass
of its own. The others are built from them on first use, after the walk.

The model holds its file context through a weak proxy, so it answers while the context lives
(keep the context, not only ``ctx.semantic``): the context owns the model, and a cycle would
keep every linted file's tree alive until the cyclic garbage collector runs.
"""

from __future__ import annotations

import ast
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar, cast

from regcomp_lint.analysis.accelerate_script import AccelerateScript
from regcomp_lint.analysis.bindings import Bindings
from regcomp_lint.analysis.checkpoints import Checkpoints
from regcomp_lint.analysis.dead_code import DeadCode
from regcomp_lint.analysis.devices import Devices
from regcomp_lint.analysis.distributed_setup import DistributedSetup, find_distributed_setup
from regcomp_lint.analysis.models import ModelFinder
from regcomp_lint.analysis.reachability import FactsCollector, ParsedModule, Reachability
from regcomp_lint.analysis.training_roles import TrainingRoles
from regcomp_lint.files.parsing import children

if TYPE_CHECKING:
    from regcomp_lint.analysis.file_context import FileContext

Handler = Callable[[ast.AST], None]
#: Node type -> the handlers to call on it.
Handlers = dict[type, list[Handler]]
T = TypeVar("T")

#: Where the file is with respect to the engine's walk.
PENDING, WALKING, WALKED = "pending", "walking", "walked"


class SemanticModel:
    """The analyses of one file (see the module docstring); ``ctx.semantic`` makes one per file."""

    def __init__(self, ctx: FileContext) -> None:
        self._ctx: FileContext = cast("FileContext", weakref.proxy(ctx))
        self._state = PENDING
        self._alone = 0  # passes of its own under way (:meth:`_walk_alone`)
        #: Walk-fed analyses waiting for the engine's walk: (visit, leave) handlers of each.
        self._pending: list[tuple[dict[type, Handler], dict[type, Handler]]] = []
        self._bindings: Bindings | None = None
        self._script: AccelerateScript | None = None
        self._facts: FactsCollector | None = None
        self._roles: TrainingRoles | None = None
        self._checkpoints: Checkpoints | None = None
        self._dead_code: DeadCode | None = None
        self._reach: dict[tuple[bool, bool], Reachability] = {}
        self._model_finder: ModelFinder | None = None
        self._devices: Devices | None = None
        self._distributed_setup: DistributedSetup | None = None
        self._shared: dict[str, object] = {}

    # -- analyses that follow the walk ---------------------------------------------------------
    @property
    def bindings(self) -> Bindings:
        if self._bindings is None:
            self._not_walking()
            bindings = self._bindings = Bindings()
            self._feed(*bindings.walk_handlers())
        return self._bindings

    @property
    def accelerate_script(self) -> AccelerateScript:
        if self._script is None:
            self._not_walking()
            if self._state == WALKED:
                # Built in a pass of its own, which needs bindings that follow it node by node:
                # fresh ones, fed in the same pass (they become the file's if it had none yet).
                bindings = Bindings()
                script = self._script = AccelerateScript(self._ctx, bindings)
                if self._bindings is None:
                    self._bindings = bindings
                self._walk_alone(_joined([bindings.walk_handlers(), script.walk_handlers()]))
            else:
                script = self._script = AccelerateScript(self._ctx, self.bindings)
                self._feed(*script.walk_handlers())
        return self._script

    @property
    def training_roles(self) -> TrainingRoles:
        if self._roles is None:
            self._not_walking()
            if self._state == WALKED:
                # the uses need bindings that follow them node by node: a pass of its own with
                # fresh bindings and script (the file's own were fed by the walk already)
                bindings = Bindings()
                roles = self._roles = TrainingRoles(self._ctx, AccelerateScript(self._ctx, bindings))
                self._walk_alone(
                    _joined([bindings.walk_handlers(), roles.script.walk_handlers(), roles.walk_handlers()])
                )
            else:
                # checkpoints asked for alone before are fed already: the roles share them
                roles = self._roles = TrainingRoles(self._ctx, self.accelerate_script, self._checkpoints)
                self._feed(*roles.walk_handlers())
        return self._roles

    @property
    def checkpoints(self) -> Checkpoints:
        """The file's checkpoints (:class:`~regcomp_lint.analysis.checkpoints.Checkpoints`): fed
        alone by the walk when asked for before it, without the rest of the training roles (RC404
        reads them in model files no other rule builds the roles for: the roles cost more than
        the file's parse there); the roles' own when those are built already or the walk is over."""
        if self._checkpoints is None:
            self._not_walking()
            if self._roles is not None or self._state != PENDING:
                self._checkpoints = self.training_roles.checkpoints
            else:
                bindings = self.bindings
                checkpoints = self._checkpoints = Checkpoints(self._ctx, bindings)

                def visit_call(node: ast.AST) -> None:
                    call = cast(ast.Call, node)
                    checkpoints.visit_call(call, bindings.here(call))

                self._feed({ast.Call: visit_call}, {})
        return self._checkpoints

    @property
    def facts(self) -> FactsCollector:
        if self._facts is None:
            self._not_walking()
            facts = self._facts = FactsCollector()
            self._feed(*facts.walk_handlers())
        return self._facts

    @property
    def dead_code(self) -> DeadCode:
        if self._dead_code is None:
            self._not_walking()
            dead = self._dead_code = DeadCode(self._ctx.tree)
            self._feed(*dead.walk_handlers())
        return self._dead_code

    def _not_walking(self) -> None:
        if self._state == WALKING:
            raise RuntimeError("a walk-fed analysis must be asked for before the walk (in a rule's __init__)")

    def _feed(self, visit: dict[type, Handler], leave: dict[type, Handler]) -> None:
        """Have the engine's walk feed an analysis, or, when there is none to come, a pass of its own."""
        if self._state == PENDING:
            self._pending.append((visit, leave))
        else:
            self._walk_alone(_joined([(visit, leave)]))

    # -- the engine's walk ------------------------------------------------------------------------
    def begin_walk(self) -> tuple[Handlers, Handlers]:
        """The handlers of every analysis asked for so far, in the order they were asked for
        (the bindings before the script built on them): ``visit`` ones to call before the
        rules' (what a rule asks while visiting a node sees the node), ``leave`` ones after."""
        if self._state != PENDING:
            raise RuntimeError(f"the file was already walked ({self._state})")
        self._state = WALKING
        pending, self._pending = self._pending, []
        return _joined(pending)

    def end_walk(self) -> None:
        self._state = WALKED

    @property
    def settled(self) -> bool:
        """The file was walked and no pass of its own is under way: every analysis built so far
        (the bindings above all) has seen the whole tree, so what is worked out from them holds
        for the rest of the file's life (what a memo of their answers needs)."""
        return self._state == WALKED and not self._alone

    def build_alone(self) -> None:
        """No engine walk will feed this file (a tool, the codemod): every analysis asked for so
        far is built now in one pass of its own, and any asked for later in another."""
        if self._state == PENDING:
            self._state = WALKED
            pending, self._pending = self._pending, []
            self._walk_alone(_joined(pending))

    def _walk_alone(self, handlers: tuple[Handlers, Handlers]) -> None:
        """One pass over the tree, keeping ``ctx.ancestors`` as the engine's walk does."""
        visit, leave = handlers
        ancestors = self._ctx.ancestors
        base = len(ancestors)
        stack: list[tuple[ast.AST, int]] = [(self._ctx.tree, base)]
        self._alone += 1
        try:
            while stack:
                node, depth = stack.pop()
                while len(ancestors) > depth:
                    done = ancestors.pop()
                    for handler in leave.get(type(done), ()):
                        handler(done)
                for handler in visit.get(type(node), ()):
                    handler(node)
                ancestors.append(node)
                stack.extend((child, depth + 1) for child in reversed(children(node)))
            while len(ancestors) > base:
                done = ancestors.pop()
                for handler in leave.get(type(done), ()):
                    handler(done)
        finally:
            self._alone -= 1

    # -- analyses built on first use, after the walk ------------------------------------------------
    def reachability(self, deep: bool = False, functions: bool = False) -> Reachability:
        """The file's call graph from its forwards (see :mod:`~regcomp_lint.analysis.reachability`).

        ``deep``: also follow submodule classes and functions imported from local modules (parsed
        lazily, once per run). The default reads other files only to resolve base classes: a
        finding is always reported in the file that contains it, so per-file rules do not need
        the rest, and the lint stays fast on large trees. RC210 and RC502 ask for the deep graph.

        ``functions`` (without ``deep``): the default graph plus the functions it calls in local
        modules (and what those call): the RC2xx rules look there for breaks of other files a
        forward reaches. Classes stay as the default graph sees them, so no file is read for a
        class; a module class of another file reports its own breaks when its file is linted.
        """
        if self._state == WALKING:
            raise RuntimeError("the reachability is built after the walk (in finish())")
        functions = functions and not deep
        key = (deep, functions)
        found = self._reach.get(key)
        if found is None:
            if functions:
                # The same classes as the default graph (neither reads a file for a class): shared,
                # with its parsed module, instead of built again.
                found = Reachability(None, functions=True, classes_from=self.reachability())
            else:
                # Facts the walk collected, when an RC2xx rule had it collect them; else each
                # function's facts are found on their own when the graph needs them.
                facts = self._facts.facts if self._facts is not None else None
                ctx = self._ctx
                module = ParsedModule.from_tree(ctx.tree, ctx.filename, ctx.imports)
                found = Reachability(module, deep=deep, facts=facts)
            self._reach[key] = found
        return found

    @property
    def model_finder(self) -> ModelFinder:
        if self._model_finder is None:
            self._model_finder = ModelFinder(self._ctx, self.bindings)
        return self._model_finder

    @property
    def devices(self) -> Devices:
        if self._devices is None:
            self._devices = Devices(self._ctx, self.bindings)
        return self._devices

    @property
    def distributed_setup(self) -> DistributedSetup:
        if self._distributed_setup is None:
            self._distributed_setup = find_distributed_setup(self._ctx)
        return self._distributed_setup

    def shared(self, key: str, build: Callable[[], T]) -> T:
        """What ``build()`` returns, once per file: for analyses of higher layers that every rule
        of a family shares (``key`` names them)."""
        if key not in self._shared:
            self._shared[key] = build()
        return cast(T, self._shared[key])


def _joined(analyses: list[tuple[dict[type, Handler], dict[type, Handler]]]) -> tuple[Handlers, Handlers]:
    """The handlers of several analyses fed by one walk, each type's in the analyses' order."""
    visit: Handlers = {}
    leave: Handlers = {}
    for visits, leaves in analyses:
        for node_type, handler in visits.items():
            visit.setdefault(node_type, []).append(handler)
        for node_type, handler in leaves.items():
            leave.setdefault(node_type, []).append(handler)
    return visit, leave
