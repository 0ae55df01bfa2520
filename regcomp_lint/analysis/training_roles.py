"""What each object a training script builds does there: the one model of roles that RC402 and
``regcomp-fix`` both read, so the lint and the fixer never disagree about what a script does.

A constructor call (``torch.optim.AdamW(...)``, ``DataLoader(...)``, ``StepLR(...)``, ``Net()``:
:func:`~regcomp_lint.analysis.training_objects.constructor_kind`) is its *origin*. Every use of a
name or ``self.`` attribute is followed back to its origin through the file's dataflow:
assignments, tuple unpacking, ``.to(device)``-style calls, DDP and ``torch.compile`` wraps,
``iter(loader)``, the values local functions return (a factory's call site is the origin, so
``train_dl = make_loader(a)`` and ``val_dl = make_loader(b)`` stay two objects) and, for a
function's parameter, the arguments its callers pass. From the uses:

- a data loader *trains* when a loop that reaches the training step iterates it, there or in a
  function it is passed to (:mod:`~regcomp_lint.analysis.training_loops`); any other loader is an
  evaluation loader, left whole on purpose;
- a loader fed a ``DistributedSampler`` is *sharded* already: one shard per rank;
- a ``GradScaler`` the script builds means it scales its loss itself (one scaling, never two):
  :mod:`~regcomp_lint.analysis.mixed_precision`, with its autocast regions;
- a scheduler's *cadence* compares the loops around its ``.step()`` with those around its
  optimizer's (``opt.step()`` or ``scaler.step(opt)``), followed up through the functions that
  call them: the same loops, once per optimizer step; the optimizer's nested inside, once per
  epoch (prepared, it would step once per process). A ``.step()`` in a loop apart from training
  (``for _ in range(start_epoch): scheduler.step()`` on resume) does not decide. One stepped with
  a value (``scheduler.step(val_loss)``, ``step(epoch)``) is stepped *by value*: prepared, it would
  take that value once per process. A scheduler unpacked from a call the roles cannot see into
  (``optimizer, scheduler = build_optimizer(model, cfg)`` of another module, which the converter
  reads) is compared the same way, by the steps of the names that unpacking binds
  (:meth:`TrainingRoles.bound_cadence`). A call fed the optimizer and stepped is a scheduler, not
  an optimizer, when a function of the file returns one or it is named a scheduler and nothing
  zeroes it (``make_scheduler(optimizer)``).

The roles own, fed by the same walk, the file's checkpoints (:mod:`~regcomp_lint.analysis.checkpoints`:
which save writes which state dict, which load reads it back), its mixed precision
(:mod:`~regcomp_lint.analysis.mixed_precision`) and its metric reductions, each tied to the
loader it summarises (:mod:`~regcomp_lint.analysis.metric_reductions`).

Uses are collected during the engine's walk (where each sits needs the walk's bindings); the
questions are answered after it. The converter asks through ``codemod.lint_view``, which maps
its libcst nodes onto this model by source position.
"""

from __future__ import annotations

import ast
import enum
from collections.abc import Callable
from dataclasses import dataclass, field

from regcomp_lint.analysis import callsites
from regcomp_lint.analysis.accelerate_script import MAX_DEPTH, AccelerateScript, enclosing_loops, in_loop_body
from regcomp_lint.analysis.bindings import Bound, Where, binding_key
from regcomp_lint.analysis.checkpoints import Checkpoints
from regcomp_lint.analysis.counted_steps import LoopPath, counting_loop
from regcomp_lint.analysis.distributed_samplers import shards_per_rank
from regcomp_lint.analysis.distributed_setup import LOCAL_RANK, RANK, WORLD_SIZE
from regcomp_lint.analysis.file_context import FileContext
from regcomp_lint.analysis.loop_aliases import trained_elements
from regcomp_lint.analysis.metric_reductions import MetricReductions
from regcomp_lint.analysis.mixed_precision import MixedPrecision
from regcomp_lint.analysis.optimizer_sources import OptimizerSources
from regcomp_lint.analysis.step_counts import StepCounts
from regcomp_lint.analysis.training_loops import (
    COMPREHENSIONS,
    Function,
    argument_for,
    flag_value,
    iterated,
    live_nodes,
    own_nodes,
    scope_nodes,
)
from regcomp_lint.analysis.training_objects import Kind, constructor_kind
from regcomp_lint.files.parsing import children, walk
from regcomp_lint.knowledge.accelerate_api import PREPARE_PLACEMENT_KEYWORD, WRAPPED_OPTIMIZER_ATTRIBUTE
from regcomp_lint.knowledge.torch_api import (
    DATA_PARALLEL,
    DATALOADER,
    LOADER_SAMPLER_KEYWORDS,
    LOADER_SAMPLER_POSITIONS,
    MODULE_ONLY_METHODS,
    NO_GRAD,
    OPTIMIZER_API,
    PLACEMENT_KEYWORDS,
    PLACEMENT_METHODS,
    RANK_ATTRIBUTES,
    SAME_MODULE_METHODS,
)
from regcomp_lint.knowledge.training_libraries import CONTAINER_BUILTINS, ITERATION_BUILTINS, ITERATION_WRAPPERS

#: Calls that hand on a loader's batches: ``next(iter(loader))``, ``it = iter(loader)``.
ITERATION_CALLS = ("iter", "next")
#: Methods that step an optimizer or scheduler.
STEP_METHODS = ("step", "zero_grad")
#: A file with none of these calls (``loss.backward()``, ``optimizer.step()``) trains nothing.
TRAINING_CALLS = ("backward", "step")
#: How many callers up a ``.step()``'s loops are followed.
MAX_CALLER_DEPTH = 3


class Cadence(str, enum.Enum):
    PER_STEP = "per optimizer step"
    PER_EPOCH = "per epoch"
    #: ``scheduler.step(val_loss)`` (ReduceLROnPlateau), ``scheduler.step(epoch)`` (timm): a prepared
    #: scheduler would take the same value once per process (patience would run out N times faster)
    BY_VALUE = "with a value"
    #: never stepped itself, handed to another scheduler that steps it (torchvision's
    #: ``SequentialLR(optimizer, schedulers=[warmup, main])``): its cadence is that scheduler's
    WRAPPED = "through the scheduler it is handed to"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class Origin:
    """Where an object comes from. ``call`` is its identity: the constructor call, or the call
    of a local function that returns one. ``built`` is the constructor call itself."""

    kind: Kind
    call: ast.Call
    where: Where
    built: ast.Call


class _Prepared:
    """Sentinel: the expression holds what a ``prepare`` call returned."""


PREPARED = _Prepared()


@dataclass
class Use:
    """One place the script uses a name: ``how`` is ``called``, ``stepped``, ``iterated`` or
    ``passed`` (to ``callee``, by ``call``); ``loops``: the loops of its function around it,
    innermost first."""

    expr: ast.expr
    how: str
    where: Where
    callee: ast.expr | None = None
    call: ast.Call | None = None
    loops: tuple[ast.AST, ...] = ()


@dataclass
class _Step:
    """An ``X.step(...)`` call anywhere in the file."""

    call: ast.Call
    receiver: ast.expr
    where: Where
    loops: tuple[ast.AST, ...]  # innermost first


@dataclass
class _Marks:
    frozen: list[tuple[ast.expr, Where]] = field(default_factory=list)  # requires_grad_(False)
    trained: list[tuple[ast.expr, Where]] = field(default_factory=list)  # .train()
    evaluated: list[tuple[ast.expr, Where]] = field(default_factory=list)  # .eval() outside loops


class TrainingRoles:
    """The roles of one file's training objects (see the module docstring); ``ctx.semantic.training_roles``."""

    def __init__(self, ctx: FileContext, script: AccelerateScript, checkpoints: Checkpoints | None = None) -> None:
        """``checkpoints``: the file's, fed by the same walk already (``ctx.semantic.checkpoints``
        asked for first); None: the roles make and feed their own."""
        self.ctx = ctx
        self.script = script
        self.bindings = script.bindings
        #: Uses inside loops (and passes to functions), in walk order.
        self.uses: list[Use] = []
        #: The file calls ``.backward()`` or ``.step()`` somewhere.
        self.trains = False
        self._marks = _Marks()
        self._steps: list[_Step] = []
        #: other method calls (``X.first_step(...)``): SAM-style optimizers step through their own methods
        self._other_methods: list[_Step] = []
        self._calls: dict[int, tuple[Where, tuple[ast.AST, ...]]] = {}  # call id -> where, loops
        self._cadence: dict[int, tuple[Cadence, ast.Call | None]] = {}
        #: ids of the calls that build a scheduler handed to another scheduler (found on first ask)
        self._wrapped_schedulers: set[int] | None = None
        #: ``X.zero_grad()``, ``X.step()`` without positional arguments, ``X.param_groups``
        self._optimizer_uses: list[tuple[ast.expr, Where]] = []
        #: ``X.zero_grad()``, ``X.param_groups``: what an optimizer gets and a scheduler does not
        self._zeroed: list[tuple[ast.expr, Where]] = []
        #: names called anywhere, in loops or not, split by whether autograd records the call:
        #: a model called only under no_grad is frozen
        self._calls_by_grad: dict[bool, list[tuple[ast.expr, Where]]] = {True: [], False: []}
        self._rank_read_ids: set[int] | None = None
        self._called_in_training: set[str] | None = None
        #: names something only a module has is called on (``.train()``, ``.parameters()``)
        self._module_keys: set[str] = set()
        #: calls being asked "is it used as an optimizer?": they hold an optimizer meanwhile
        self._asking: list[ast.Call] = []
        self.optimizers = OptimizerSources(ctx, self.bindings, self._optimizer_uses, self._holds, self.is_model)
        #: the checkpoints it writes and reads back (:mod:`~regcomp_lint.analysis.checkpoints`)
        self.checkpoints = checkpoints if checkpoints is not None else Checkpoints(ctx, self.bindings)
        self._feeds_checkpoints = checkpoints is None
        #: its own loss scaling and autocast regions (:mod:`~regcomp_lint.analysis.mixed_precision`)
        self.mixed_precision = MixedPrecision(ctx, self.bindings)
        #: its collectives and the loaders they summarise (:mod:`~regcomp_lint.analysis.metric_reductions`)
        self.metric_reductions = MetricReductions(ctx)
        #: what a scheduler's number of steps is computed from (:mod:`~regcomp_lint.analysis.step_counts`)
        self.step_counts = StepCounts(ctx.tree, self.bindings)
        self._process_count_ids: set[int] | None = None

    # -- feeding, from the walk ------------------------------------------------------------
    def walk_handlers(self) -> tuple[dict[type, Callable[[ast.AST], None]], dict[type, Callable[[ast.AST], None]]]:
        visit: dict[type, Callable] = {
            ast.For: self._visit_for,
            ast.AsyncFor: self._visit_for,
            ast.Call: self._visit_call,
            ast.Attribute: self._visit_attribute,
            ast.With: self.mixed_precision.visit_with,
            ast.AsyncWith: self.mixed_precision.visit_with,
        }
        visit.update((kind, self._visit_comprehension) for kind in COMPREHENSIONS)
        return visit, {}

    def _visit_comprehension(self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp) -> None:
        for generator in node.generators:
            where = self.bindings.here(generator.iter)
            for expr in iterated(generator.iter):
                self.uses.append(Use(expr, "iterated", where, loops=(node,)))

    def _visit_for(self, node: ast.For | ast.AsyncFor) -> None:
        where = self.bindings.here(node.iter)
        for expr in iterated(node.iter):
            self.uses.append(Use(expr, "iterated", where, loops=(node,)))
            if isinstance(expr, ast.Name):
                # `with tqdm(loader) as t: for b in t`, `for phase, loader in zip(p, [a, b])`
                for held in trained_elements(self._scope_body(), expr.id, node, scope_nodes, iterated):
                    self.uses.append(Use(held, "iterated", self.bindings.here(held), loops=(node,)))

    def _scope_body(self) -> list[ast.stmt]:
        """The body of the function (or the module) the node being visited runs in."""
        for function in self.ctx.enclosing(ast.FunctionDef, ast.AsyncFunctionDef):
            if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                return function.body
        return self.ctx.tree.body

    def _visit_attribute(self, node: ast.Attribute) -> None:
        if node.attr == "param_groups" and binding_key(node.value) is not None:
            self._optimizer_uses.append((node.value, self.bindings.here(node)))
            self._zeroed.append((node.value, self.bindings.here(node)))

    def _visit_call(self, node: ast.Call) -> None:
        func = node.func
        where = self.bindings.here(node)
        loops = enclosing_loops(self.ctx, node)
        self._calls[id(node)] = (where, loops)
        if self._feeds_checkpoints:
            self.checkpoints.visit_call(node, where)
        self.metric_reductions.visit_call(node, where, loops)
        if isinstance(func, ast.Attribute) and func.attr in TRAINING_CALLS:
            self.trains = True
        self.mixed_precision.visit_call(node)
        if binding_key(func) is None:  # a method: optimizer.step(), model.train()
            if isinstance(func, ast.Attribute) and func.attr == "step":
                self._steps.append(_Step(node, func.value, where, loops))
            elif isinstance(func, ast.Attribute) and loops and func.attr not in OPTIMIZER_API:
                self._other_methods.append(_Step(node, func.value, where, loops))
            if isinstance(func, ast.Attribute) and binding_key(func.value) is not None:
                self._method_call(node, func, where, loops)
            return
        if isinstance(func, ast.Name) and func.id in ITERATION_CALLS:
            # `next(val_loader)` under torch.no_grad() inside the training loop is evaluation
            if node.args and binding_key(node.args[0]) is not None and loops and not self._under_no_grad():
                self.uses.append(Use(node.args[0], "iterated", where, loops=loops))
            return
        self._calls_by_grad[not self._under_no_grad()].append((func, where))
        # passed anywhere, loop or not: ``fit(epochs, model, opt, train_dl, valid_dl)`` called once
        # runs its epoch loop inside (fastai style), so train_dl trains there
        for arg in [*node.args, *(kw.value for kw in node.keywords)]:
            # `train_and_evaluate(..., [train_loader, eval_loader])` (VITS): each element is handed too
            for one in arg.elts if isinstance(arg, (ast.List, ast.Tuple)) else [arg]:
                if binding_key(one) is not None:
                    self.uses.append(Use(one, "passed", where, func, node, loops))
        if loops:
            self.uses.append(Use(func, "called", where, loops=loops))

    def _under_no_grad(self) -> bool:
        """The node being visited runs without autograd: inside ``with torch.no_grad():`` or a
        function decorated ``@torch.no_grad()``."""
        for node in self.ctx.enclosing(ast.With, ast.AsyncWith, ast.FunctionDef, ast.AsyncFunctionDef):
            if isinstance(node, (ast.With, ast.AsyncWith)):
                if any(self._is_no_grad(item.context_expr) for item in node.items):
                    return True
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
                self._is_no_grad(d) for d in node.decorator_list
            ):
                return True
        return False

    def _is_no_grad(self, expr: ast.expr) -> bool:
        func = expr.func if isinstance(expr, ast.Call) else expr
        return self.ctx.resolves_to(func, *NO_GRAD)

    def _method_call(self, node: ast.Call, func: ast.Attribute, where: Where, loops: tuple[ast.AST, ...]) -> None:
        receiver = func.value
        if func.attr == "zero_grad" or (func.attr == "step" and not node.args):
            self._optimizer_uses.append((receiver, where))
        if func.attr == "zero_grad":
            self._zeroed.append((receiver, where))
        if func.attr in MODULE_ONLY_METHODS:
            self._module_keys.add(binding_key(receiver) or "")
        if func.attr in STEP_METHODS:
            if loops:
                self.uses.append(Use(receiver, "stepped", where, loops=loops))
        elif func.attr == "requires_grad_" and _is_false(
            node.args[0] if node.args else _keyword_value(node, "requires_grad")
        ):
            self._marks.frozen.append((receiver, where))
        elif func.attr == "train":
            self._marks.trained.append((receiver, where))
        elif func.attr == "eval" and not in_loop_body(self.ctx, node):
            self._marks.evaluated.append((receiver, where))

    # -- what an expression holds ------------------------------------------------------------
    def origin(
        self, expr: ast.AST | None, where: Where, depth: int = 0, through: bool = False, callers: int = 0
    ) -> Origin | _Prepared | None:
        """What ``expr`` at ``where`` holds: an object the file builds, a prepared one, or None.
        ``through``: a prepared object is the object it was prepared from. ``callers``: how many
        calls up a parameter of a local function (or of a class's ``__init__``) is followed to
        what its callers pass (the first one that holds something)."""
        if expr is None or depth > MAX_DEPTH:
            return None
        if isinstance(expr, ast.Call):
            return self._call_origin(expr, where, depth, through, callers)
        if isinstance(expr, ast.IfExp):
            return self.origin(expr.body, where, depth + 1, through, callers) or self.origin(
                expr.orelse, where, depth + 1, through, callers
            )
        slot = constant_slot(expr)
        if slot is not None:  # `parts["optimizer"]`, `parts[1]`: what a helper's dict or tuple holds there
            assert isinstance(expr, ast.Subscript)
            for element, at in self._elements(expr.value, slot, where, depth):
                found = self.origin(element, at, depth + 1, through, callers)
                if found is not None:
                    return found
            return None
        for bound in self.bindings.candidates(expr, where):
            found = self._bound_origin(bound, expr, depth, through, callers)
            if found is not None:
                return found
        return None

    def _bound_origin(
        self, bound: Bound, expr: ast.AST, depth: int, through: bool, callers: int
    ) -> Origin | _Prepared | None:
        value = bound.value
        if value is None:
            return self._parameter_origin(bound, expr, depth, through, callers) if callers else None
        if isinstance(value, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            return None
        if bound.index is None:
            return self.origin(value, bound.where, depth + 1, through, callers)
        if self.script.is_prepare_result(value):
            if through and _plain_arguments(value) and bound.index < len(value.args):
                return self.origin(value.args[bound.index], bound.where, depth + 1, through, callers)
            return PREPARED
        for element, at in self._elements(value, bound.index, bound.where, depth):
            found = self.origin(element, at, depth + 1, through, callers)
            if found is not None:
                return found
        return None

    def _parameter_origin(
        self, bound: Bound, expr: ast.AST, depth: int, through: bool, callers: int
    ) -> Origin | _Prepared | None:
        """A parameter ``expr`` of a local function: what its callers pass, one call up."""
        function = _parameter_of(bound, expr)
        key = binding_key(expr)
        if function is None or key is None:
            return None  # a ``for`` target or a ``with`` name: unknown, not a parameter
        for call in self.script.training_loops.callers_of(function):
            arg = argument_for(function, call, key)
            if arg is None or id(call) not in self._calls:
                continue
            found = self.origin(arg, self._calls[id(call)][0], depth + 1, through, callers - 1)
            if found is not None:
                return found
        return None

    def _call_origin(
        self, call: ast.Call, where: Where, depth: int, through: bool, callers: int = 0
    ) -> Origin | _Prepared | None:
        func = call.func
        if isinstance(func, ast.Attribute):
            if self.script.is_prepare_result(call):
                if through and _plain_arguments(call) and len(call.args) == 1:
                    return self.origin(call.args[0], where, depth + 1, through, callers)
                return PREPARED
            if func.attr in SAME_MODULE_METHODS:
                return self.origin(func.value, where, depth + 1, through, callers)
        if call.args and (
            self.ctx.resolves_to(func, *DATA_PARALLEL, *ITERATION_WRAPPERS)
            or callsites.is_torch_compile(self.ctx, func)
            or callsites.is_compile_regions(self.ctx, func)
            or (isinstance(func, ast.Name) and func.id in ITERATION_BUILTINS and not self.ctx.imports.imported(func.id))
            or self._local_iteration_wrapper(func, where)
        ):
            return self.origin(call.args[0], where, depth + 1, through, callers)
        kind = constructor_kind(self.ctx, call, self.bindings.classes)
        if kind is None and self._builds_optimizer(call, where, depth):
            kind = Kind.OPTIMIZER
        if kind is None and self._built_on_optimizer(call, where, depth):
            kind = Kind.SCHEDULER  # a scheduler of another library: create_scheduler(optimizer, ...)
        if kind is not None:
            return Origin(kind, call, where, call)
        for value, at in self._returned(func, where):
            found = self.origin(*self._passed_back(value, at, call, where), depth + 1, through, callers)
            if isinstance(found, Origin):
                return Origin(found.kind, call, where, found.built)  # each call of a factory: its own object
            if found is not None:
                return found
        return None

    def _local_iteration_wrapper(self, func: ast.expr, where: Where) -> bool:
        """A generator of the script that yields what its first parameter iterates (lucidrains'
        ``def cycle(loader): while True: for data in loader: yield data``): ``cycle(loader)`` holds
        the loader's batches, as ``itertools.cycle(loader)`` does."""
        if not isinstance(func, ast.Name):
            return False
        bound = self.bindings.lookup(func, where)
        function = bound.value if bound is not None else None
        if not isinstance(function, ast.FunctionDef) or not function.args.args:
            return False
        first = function.args.args[0].arg
        return any(
            isinstance(loop, ast.For)
            and isinstance(loop.iter, ast.Name)
            and loop.iter.id == first
            and any(isinstance(n, (ast.Yield, ast.YieldFrom)) for s in loop.body for n in walk(s))
            for loop in walk(function)
        )

    def _builds_optimizer(self, call: ast.Call, where: Where, depth: int = 0) -> bool:
        """A factory of an optimizer, or a call fed parameters whose result is used as one. Not a
        scheduler handed the optimizer (so fed its parameters) and stepped as an optimizer is:
        one a function of the file returns (``make_scheduler(optimizer)``), or a call named a
        scheduler on an optimizer (another module's ``build_scheduler(optimizer, cfg)``) whose
        result is never zeroed (``zero_grad()``, ``param_groups``) as an optimizer wrapper is."""
        if any(call is asked for asked in self._asking):
            return True
        optimizers = self.optimizers
        if optimizers.source(call, where) is not None:
            return True
        if not optimizers.fed_parameters(call, where) or not optimizers.used_as_optimizer(call):
            return False
        if self._returns_a_scheduler(call.func, where, depth):
            return False
        return not self._built_on_optimizer(call, where, depth) or self._is_zeroed(call)

    def _returns_a_scheduler(self, func: ast.expr, where: Where, depth: int) -> bool:
        """``func`` is a function of the file that returns a scheduler."""
        for value, at in self._returned(func, where):
            found = self.origin(value, at, depth + 1)
            if isinstance(found, Origin) and found.kind is Kind.SCHEDULER:
                return True
        return False

    def _is_zeroed(self, call: ast.Call) -> bool:
        """Something holding what ``call`` returns gets ``.zero_grad()`` or ``.param_groups``."""
        return any(self._holds(expr, where, call) for expr, where in self._zeroed)

    def is_model(self, expr: ast.expr, where: Where) -> bool:
        """``expr`` holds a model: built as one, called in a loop that trains (``student(x)``), or
        given a method only modules have (``transformer.train()``), for classes of other files."""
        found = self.origin(expr, where, through=True)
        if isinstance(found, Origin):
            return found.kind is Kind.MODEL
        key = binding_key(expr)
        return key is not None and self._module_like(key, 0)

    def _module_like(self, key: str, depth: int) -> bool:
        if key in self._module_keys or key in self._trained_callees():
            return True
        if depth >= MAX_CALLER_DEPTH or "." in key:
            return False
        # handed to a function of the file whose parameter is used as a module there
        return any(self._module_like(param, depth + 1) for param in self.script.training_loops.parameters_fed(key))

    def _trained_callees(self) -> set[str]:
        if self._called_in_training is None:
            self._called_in_training = {
                key
                for use in self.uses
                if use.how == "called" and (key := binding_key(use.expr)) is not None and self.trains_on(use)
            }
        return self._called_in_training

    def _holds(self, expr: ast.expr, where: Where, call: ast.Call) -> bool:
        """``expr`` at ``where`` holds what ``call`` returns, taken as an optimizer meanwhile."""
        self._asking.append(call)
        try:
            found = self.passed_origin(expr, where)
        finally:
            self._asking.pop()
        return isinstance(found, Origin) and found.call is call

    def _built_on_optimizer(self, call: ast.Call, where: Where, depth: int) -> bool:
        """``XScheduler(optimizer, ...)``, ``PolyLR(optimizer, ...)``: a call named a scheduler
        (``sched`` in it, or torch's ``...LR`` ending) whose first argument holds an optimizer (the
        name only tells a scheduler from an optimizer wrapper such as Lookahead)."""
        func = call.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if not call.args or not ("sched" in name.lower() or name.endswith("LR")):
            return False
        found = self.origin(call.args[0], where, depth + 1, through=True)
        return isinstance(found, Origin) and found.kind is Kind.OPTIMIZER

    def _returned(self, func: ast.expr, where: Where) -> list[tuple[ast.expr, Where]]:
        """The values a local function called as ``func`` returns, or a method of the enclosing
        class called as ``self.name`` (minGPT-ddp's ``self._prepare_dataloader(dataset)``)."""
        function = self._called_function(func, where)
        return self.bindings.returns(function) if function is not None else []

    def _called_function(self, func: ast.expr, where: Where) -> Function | None:
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self":
            return _own_method(where.cls, func.attr, self.bindings.classes)
        bound = self.bindings.lookup(func, where) if isinstance(func, ast.Name) else None
        function = bound.value if bound is not None else None
        return function if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)) else None

    def _passed_back(self, value: ast.expr, at: Where, call: ast.Call, where: Where) -> tuple[ast.expr, Where]:
        """``value`` (at ``at``) returned by the local function ``call`` at ``where`` runs: a
        parameter returned as it came in, not rebound before the ``return``, is what the call
        passes. ``model, optimizer, epoch = load_ckp(path, model, optimizer)`` hands back the
        caller's own optimizer (brats_diff, survey26c: RC402 took it for an unprepared one)."""
        bound = self.bindings.lookup(value, at) if isinstance(value, ast.Name) else None
        function = _parameter_of(bound, value) if bound is not None and bound.value is None else None
        if function is None or function is not self._called_function(call.func, where):
            return value, at
        argument = argument_for(function, call, binding_key(value) or "")
        return (argument, where) if argument is not None else (value, at)

    def unpacked_origin(self, value: ast.expr, where: Where, index: int) -> Origin | None:
        """What element ``index`` of ``a, b = value`` holds: ``value`` a tuple display or a call of
        a local function that returns tuples (``optimizer, scheduler = build_optimizer(model, cfg)``)."""
        for element, at in self._elements(value, index, where, 0):
            found = self.origin(element, at)
            if isinstance(found, Origin):
                return found
        return None

    def _elements(self, value: ast.AST, index: int | str, where: Where, depth: int) -> list[tuple[ast.expr, Where]]:
        """Element ``index`` of a tuple display, of the tuples a local function returns, or of
        those a name holds: a parameter is followed to what its callers pass (VITS's
        ``optim_g, optim_d = optims``, handed ``[optim_g, optim_d]``). A string ``index`` is the
        constant key of a dict display (``return {"model": model, "optimizer": optimizer}``)."""
        if isinstance(value, ast.Dict):
            return [(v, where) for k, v in zip(value.keys, value.values) if _is_constant(k, index, str)]
        if isinstance(value, ast.Name) and depth < MAX_DEPTH:
            return [
                item
                for bound in self.bindings.every_binding(value, where)
                for held, at in self._held_by(bound, value)
                for item in self._elements(held, index, at, depth + 1)
            ]
        if isinstance(value, (ast.Tuple, ast.List)):
            elts = value.elts
            if (
                isinstance(index, int)
                and index < len(elts)
                and not any(isinstance(e, ast.Starred) for e in elts[: index + 1])
            ):
                return [(elts[index], where)]
            return []
        if isinstance(value, ast.Call) and depth < MAX_DEPTH:
            returned = self._returned(value.func, where)
            if len({len(r.elts) for r, _ in returned if isinstance(r, (ast.Tuple, ast.List))}) > 1:
                return []  # tuples of different shapes: which one this unpacking gets is unknown
            return [
                self._passed_back(element, at, value, where)
                for r, held in returned
                for element, at in self._elements(r, index, held, depth + 1)
            ]
        return []

    def _held_by(self, bound: Bound, name: ast.expr) -> list[tuple[ast.expr, Where]]:
        """What a binding of ``name`` holds: its value, or for a parameter of a local function
        what each caller passes."""
        if bound.value is not None:
            return [(bound.value, bound.where)] if bound.index is None and isinstance(bound.value, ast.expr) else []
        function = _parameter_of(bound, name)
        key = binding_key(name)
        if function is None or key is None:
            return []
        found = []
        for call in self.script.training_loops.callers_of(function):
            arg = argument_for(function, call, key)
            if arg is not None and id(call) in self._calls:
                found.append((arg, self._calls[id(call)][0]))
        return found

    def passed_origin(self, expr: ast.AST, where: Where, depth: int = 0) -> Origin | _Prepared | None:
        """Like :meth:`origin` with ``through``, and a parameter of a local function (also one
        kept as ``self.x`` by ``__init__``) is followed to what its callers pass."""
        return self.origin(expr, where, depth, through=True, callers=MAX_CALLER_DEPTH)

    # -- roles -----------------------------------------------------------------------------
    def frozen_origins(self) -> set[int]:
        """ids of origins of models the script freezes (``requires_grad_(False)``, ``.eval()``
        outside loops and never ``.train()``, or called only under ``torch.no_grad()``, as a DQN's
        target network): they stay unprepared on purpose."""

        def origins(marks: list[tuple[ast.expr, Where]]) -> set[int]:
            return {id(o.call) for expr, where in marks if isinstance(o := self.origin(expr, where), Origin)}

        marks = self._marks
        return (
            origins(marks.frozen)
            | self._called_only_without_grad()
            | (origins(marks.evaluated) - origins(marks.trained))
        )

    def _built_anew(self, expr: ast.expr, where: Where, depth: int = 0) -> bool:
        """Every binding of ``expr`` calls something (``model = UNet(...).to(device)``, a class of
        a star import): an object of its own, whatever its kind, so not one of the file's models
        under another name (an alias would bind a name or an attribute)."""
        if not isinstance(expr, ast.Name) or depth > MAX_DEPTH:
            return False
        bound = list(self.bindings.candidates(expr, where))
        for b in bound:
            value = b.value
            if b.index is not None and self.script.is_prepare_result(value):  # prepare() returns what it is handed
                assert isinstance(value, ast.Call)
                if not (_plain_arguments(value) and b.index < len(value.args)):
                    return False
                if not self._built_anew(value.args[b.index], b.where, depth + 1):
                    return False
            elif not (isinstance(value, ast.Call) and b.index is None):
                return False
        return bool(bound)

    def unoptimized_models(self) -> set[int]:
        """ids of origins of models no optimizer of the file is fed the parameters of (a loss
        module of the script, ``criterion = LabelSmoothing()``; a perceptual-loss network), when
        every optimizer the training loop steps is known with its models: nothing of theirs
        trains, so they need no prepare() (regcomp-fix prepares only its optimizers' models)."""
        owners: list[tuple[str, Where]] = []
        for use in self.uses:
            if use.how != "stepped":
                continue
            # an optimizer stepped in a training function is followed to what its callers hand it
            found = self.origin(use.expr, use.where, through=True, callers=MAX_CALLER_DEPTH)
            if not isinstance(found, Origin) or found.kind is not Kind.OPTIMIZER:
                continue
            where = self._built_where(found)
            source = self.optimizers.source(found.built, where)
            if source is None or not source.owners:
                return set()  # an optimizer of unknown models: any model may train
            owners += [(key, where) for key in source.owners]
        if not owners:
            return set()
        optimized = set()
        for key, where in owners:
            expr = ast.parse(key, mode="eval").body
            found = self.origin(expr, where, through=True, callers=MAX_CALLER_DEPTH)
            if isinstance(found, Origin):
                optimized.add(id(found.call))
            elif not self._built_anew(expr, where):
                return set()  # a model the roles cannot follow: keep asking about every model
        return {
            id(origin.call)
            for use in self.uses
            if use.how == "called"
            and isinstance(origin := self.origin(use.expr, use.where), Origin)
            and origin.kind is Kind.MODEL
            and id(origin.call) not in optimized
        }

    def _called_only_without_grad(self) -> set[int]:
        """ids of origins of models every call of which runs under ``torch.no_grad()``."""
        found: set[int] = set()
        for expr, where in self._calls_by_grad[False]:
            origin = self.passed_origin(expr, where)
            if isinstance(origin, Origin) and origin.kind is Kind.MODEL:
                found.add(id(origin.call))
        if not found:
            return found
        for expr, where in self._calls_by_grad[True]:
            origin = self.passed_origin(expr, where)
            if isinstance(origin, Origin):
                found.discard(id(origin.call))
        return found

    def trains_on(self, use: Use) -> bool:
        """``use`` sits in a training loop: iterated by a loop reaching the training step, or
        passed to a function of the file whose training loop iterates it."""
        loops = self.script.training_loops
        if use.how == "passed":
            return use.call is not None and loops.passes_for_training(use.call, use.expr)
        return any(loops.loop_trains(loop) for loop in use.loops)

    def is_training_loader(self, origin: Origin) -> bool:
        """Some loop that trains iterates the loader built at ``origin`` (there or in a callee)."""
        for use in self.uses:
            if use.how in ("iterated", "passed") and self.trains_on(use):
                flagged = self.flag_trained_origins(use)
                if flagged is not None:
                    if any(found.call is origin.call for found in flagged):
                        return True
                    continue
                found = self.origin(use.expr, use.where, callers=MAX_CALLER_DEPTH)
                if isinstance(found, Origin) and found.call is origin.call:
                    return True
        return False

    def flag_leaves_out(self, use: Use, origin: Origin) -> bool:
        """The loop of ``use`` iterates the loader built at ``origin`` only on a branch of a flag
        where it does not train (``test_loader`` of ``data_pass(epoch, train)``, see
        :meth:`flag_trained_origins`): an evaluation pass, left whole on purpose."""
        flagged = self.flag_trained_origins(use)
        return flagged is not None and all(found.call is not origin.call for found in flagged)

    def flag_trained_origins(self, use: Use) -> list[Origin] | None:
        """The loaders a loop trains on when the name it iterates is bound on the branches of an
        ``if`` on a parameter that also decides whether the loop trains: ctallec/world-models'
        ``data_pass(epoch, train)`` binds ``loader = train_loader`` under ``if train:`` and
        ``loader = test_loader`` otherwise, and steps under ``if train:`` in the loop (survey24b
        mdrnn: taking the last binding prepared ``test_loader`` and left ``train_loader`` whole).
        Only the bindings live where the loop trains count; None when no flag parts them."""
        function = use.where.function
        loop = use.loops[0] if use.loops else None
        if use.how != "iterated" or not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return None
        if not isinstance(loop, (ast.For, ast.AsyncFor)):
            return None
        bounds = [b for b in self.bindings.every_binding(use.expr, use.where) if b.value is not None]
        if len(bounds) < 2:
            return None
        rebound = {n.id for n in own_nodes(function.body) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        params = {a.arg for a in [*function.args.posonlyargs, *function.args.args, *function.args.kwonlyargs]} - rebound
        tested = {
            flag
            for node in own_nodes(function.body)
            if isinstance(node, ast.If)
            for flag in params
            if flag_value(node.test, {flag: True}) is not None
        }
        for flag in sorted(tested):
            live = {value: {id(n) for n in live_nodes(function.body, {flag: value})} for value in (True, False)}
            if all(id(b.value) in live[True] and id(b.value) in live[False] for b in bounds):
                continue  # this flag does not part the bindings
            found: list[Origin] = []
            for value in (True, False):
                if not self.script.training_loops.trains_under(loop, {flag: value}):
                    continue
                for bound in bounds:
                    held = bound.value
                    if held is None or id(held) not in live[value]:
                        continue
                    if bound.index is None and binding_key(held) is not None:
                        found += self._possible_origins(held, bound.where, 1)
                    elif isinstance(one := self._bound_origin(bound, use.expr, 1, True, MAX_CALLER_DEPTH), Origin):
                        found.append(one)
            return found
        return None

    def training_iterables(self) -> list[tuple[ast.expr, Where]]:
        """Names a training loop iterates (there, or in a function they are passed to), with
        where: what ``prepare`` must see whatever built it (a loader of another module's helper)."""
        return [(use.expr, use.where) for use in self.uses if use.how in ("iterated", "passed") and self.trains_on(use)]

    def shards_training_data(self) -> bool:
        """Some training loop iterates a loader that ``prepare()`` shards across processes: a
        prepared one, or a DataLoader left unprepared and not sharded already (RC402 reports it;
        its fix prepares it). Only then must a per-step scheduler be prepared. When none does
        (full-batch training, batches the script draws itself in ``for it in range(max_iters)``,
        a loader its own DistributedSampler shards, or one whose origin is unknown: a trainer's
        ``loader`` parameter no call of the file hands in), every process takes the original's
        steps, so a per-step scheduler stays unprepared: prepared, it would step once per process
        at each step. The converter decides the same way (it prepares no scheduler without a
        prepared training loader), so the lint never asks to undo what it left on purpose."""
        for expr, where in self.training_iterables():
            found = self.origin(expr, where, callers=MAX_CALLER_DEPTH)
            if isinstance(found, _Prepared):
                return True
            if (
                isinstance(found, Origin)
                and found.kind is Kind.DATALOADER
                and self.shard_reason(found) is None
                and self.sharded_on_a_branch(expr, where) is None
            ):
                return True
        return False

    def sharded_on_a_branch(self, expr: ast.AST, where: Where) -> str | None:
        """Why the loader a name holds at ``where`` gives each rank its own data on some branch,
        if it does: ``if distributed: loader = DataLoader(ds, sampler=DistributedSampler(ds))
        else: loader = DataLoader(ds, shuffle=True)`` is sharded whenever the script runs on
        several processes, whichever binding :meth:`origin` answers with."""
        for found in self._possible_origins(expr, where):
            if found.kind is Kind.DATALOADER:
                reason = self.shard_reason(found)
                if reason is not None:
                    return reason
        return None

    def sharded_by_sampler(self, origin: Origin) -> bool:
        """``DataLoader(..., sampler=DistributedSampler(...))`` (or ``batch_sampler=``, a subclass,
        a sampler built with ``num_replicas=``/``rank=``: :mod:`.distributed_samplers`), directly
        or through a name (whatever branch bound it: ``s = DistributedSampler(d) if ddp else None``),
        positionally or inside the ``**kwargs`` dict the loader is given (:meth:`_sampler_arguments`)."""
        return self.call_sharded_by_sampler(origin.built, self._built_where(origin))

    def call_sharded_by_sampler(self, call: ast.Call, where: Where) -> bool:
        """:meth:`sharded_by_sampler` for the loader ``call`` at ``where`` builds, whatever class
        it is: a library's own DataLoader (PyG's, MONAI's) handed ``sampler=DistributedSampler(...)``
        is sharded per rank as torch's is, though the roles do not know its kind."""
        for argument, at in self._sampler_arguments(call, where):
            values: list[ast.AST] = [argument]
            for bound in self.bindings.every_binding(argument, at):
                if bound.value is None:
                    continue
                if bound.index is None:
                    values.append(bound.value)
                    continue
                # `dataset, dataset_test, train_sampler, test_sampler = load_data(...)` (torchvision)
                for element, at_element in self._elements(bound.value, bound.index, bound.where, 0):
                    values.append(element)
                    values += [b.value for b in self.bindings.every_binding(element, at_element) if b.value is not None]
            for value in values:
                if any(
                    isinstance(node, ast.Call)
                    and shards_per_rank(node, self.ctx.imports, self.bindings.classes, self.ctx.filename)
                    for node in walk(value)
                ):
                    return True
        return False

    def _sampler_arguments(self, call: ast.Call, where: Where) -> list[tuple[ast.expr, Where]]:
        """What the loader built by ``call`` may be given as its sampler: ``sampler=``/
        ``batch_sampler=``; the 4th/5th positional argument of torch's ``DataLoader``; and the
        sampler entries of a ``**kwargs`` dict (``dict(sampler=s, ...)``, ``{"sampler": s}``,
        ``kw["sampler"] = s``, ``kw.update(sampler=s)``), followed through the names it is bound to."""
        found = [(kw.value, where) for kw in call.keywords if kw.arg in LOADER_SAMPLER_KEYWORDS]
        if self.ctx.imports.resolves_to(call.func, *DATALOADER):
            found += [
                (arg, where)
                for i, arg in enumerate(call.args)
                if i in LOADER_SAMPLER_POSITIONS and not any(isinstance(a, ast.Starred) for a in call.args[:i])
            ]
        for kw in call.keywords:
            if kw.arg is None:
                found += self._dict_samplers(kw.value, where, 0)
        return found

    def _dict_samplers(self, expr: ast.AST, where: Where, depth: int) -> list[tuple[ast.expr, Where]]:
        """The sampler entries of the dict ``expr`` is or is bound to (see :meth:`_sampler_arguments`)."""
        if depth > MAX_DEPTH:
            return []
        if isinstance(expr, ast.Dict):
            found: list[tuple[ast.expr, Where]] = []
            for key, value in zip(expr.keys, expr.values, strict=True):
                if key is None:
                    found += self._dict_samplers(value, where, depth + 1)
                elif isinstance(key, ast.Constant) and key.value in LOADER_SAMPLER_KEYWORDS:
                    found.append((value, where))
            return found
        if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id == "dict":
            found = [(kw.value, where) for kw in expr.keywords if kw.arg in LOADER_SAMPLER_KEYWORDS]
            for arg in expr.args[:1]:
                found += self._dict_samplers(arg, where, depth + 1)
            for kw in expr.keywords:
                if kw.arg is None:
                    found += self._dict_samplers(kw.value, where, depth + 1)
            return found
        if not isinstance(expr, ast.Name):
            return []
        found = []
        for bound in self.bindings.every_binding(expr, where):
            if bound.value is not None and bound.index is None:
                found += self._dict_samplers(bound.value, bound.where, depth + 1)
        return found + self._dict_writes(expr.id, where, depth)

    def _dict_writes(self, name: str, where: Where, depth: int) -> list[tuple[ast.expr, Where]]:
        """Sampler entries written into the dict ``name`` in the scope of ``where``:
        ``name["sampler"] = s`` and ``name.update(sampler=s)`` / ``name.update({"sampler": s})``."""
        scope = where.function if where.function is not None else self.ctx.tree
        found: list[tuple[ast.expr, Where]] = []
        for node in walk(scope):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if (
                        isinstance(target, ast.Subscript)
                        and isinstance(target.value, ast.Name)
                        and target.value.id == name
                        and isinstance(target.slice, ast.Constant)
                        and target.slice.value in LOADER_SAMPLER_KEYWORDS
                    ):
                        found.append((node.value, where.at(node)))
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "update"
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == name
            ):
                at = where.at(node)
                found += [(kw.value, at) for kw in node.keywords if kw.arg in LOADER_SAMPLER_KEYWORDS]
                for arg in node.args[:1]:
                    found += self._dict_samplers(arg, at, depth + 1)
        return found

    def shard_reason(self, origin: Origin) -> str | None:
        """Why the loader built at ``origin`` already gives each rank its own data, if it does:
        prepare() would shard it a second time (each rank would see 1/N of its 1/N)."""
        if self.sharded_by_sampler(origin):
            return "sharded by its DistributedSampler"
        dataset = origin.built.args[0] if origin.built.args else _keyword_value(origin.built, "dataset")
        return self.split_by_rank([dataset] if dataset is not None else [], self._built_where(origin))

    def call_where(self, call: ast.Call) -> Where | None:
        """Where the walk met ``call`` (None for a call it did not visit)."""
        found = self._calls.get(id(call))
        return found[0] if found is not None else None

    def built_where(self, origin: Origin) -> Where:
        """Where the constructor call of ``origin`` itself sits (see :meth:`_built_where`)."""
        return self._built_where(origin)

    def _built_where(self, origin: Origin) -> Where:
        """Where the constructor call itself sits: inside the factory for a factory's object
        (``origin.where`` is then the factory's call site)."""
        found = self._calls.get(id(origin.built))
        return found[0] if found is not None else origin.where

    def split_by_rank(self, inputs: list[ast.expr], where: Where) -> str | None:
        """Why a loader built from ``inputs`` at ``where`` is split per rank by hand, if it is:
        they depend on the process's rank (``idx.split(n // world_size)[rank]``, a dataset
        indexed with ``int(os.environ["RANK"])``), followed through the names they read."""
        seen: set[int] = set()
        for expr in inputs:
            read = self._rank_read(expr, where, seen, 0)
            if read is not None:
                return f"built from data split by rank (line {read.lineno})"
        return None

    def _rank_read(self, expr: ast.AST, where: Where, seen: set[int], depth: int) -> ast.expr | None:
        """A read of the process's rank that ``expr``'s value depends on, through the names it
        reads and their assignments (``idx = idx.split(n // world_size)[rank]``)."""
        if depth > MAX_DEPTH:
            return None
        for node in _data_nodes(expr):
            rank = id(node) in self._rank_reads() or (isinstance(node, ast.Attribute) and node.attr in RANK_ATTRIBUTES)
            if rank and isinstance(node, ast.expr):
                return node
            if isinstance(node, ast.Attribute) and binding_key(node) is None:
                for value in _attribute_assignments(node, where):  # `args.rank = gpu` in a spawned worker
                    if id(value) not in seen:
                        seen.add(id(value))
                        found = self._rank_read(value, where, seen, depth + 1)
                        if found is not None:
                            return found
                continue
            if not isinstance(node, ast.Name) or binding_key(node) is None:
                continue
            for bound in self.bindings.every_binding(node, where):
                if id(bound) in seen:
                    continue
                seen.add(id(bound))
                if bound.value is None:
                    if self._is_spawned_rank(bound, node):
                        return node
                elif not isinstance(bound.value, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                    found = self._rank_read(bound.value, bound.where, seen, depth + 1)
                    if found is not None:
                        return found
        return None

    def _rank_reads(self) -> set[int]:
        """ids of the file's reads of a process's rank (``dist.get_rank()``, ``os.environ["RANK"]``,
        ``os.getenv("LOCAL_RANK")``), as distributed_setup finds them."""
        if self._rank_read_ids is None:
            reads = self.ctx.semantic.distributed_setup.rank_reads
            self._rank_read_ids = {id(r.node) for r in reads if r.reads in (RANK, LOCAL_RANK)}
        return self._rank_read_ids

    def _process_count_reads(self) -> set[int]:
        """ids of the file's reads of the number of processes (``dist.get_world_size()``,
        ``os.environ["WORLD_SIZE"]``), as distributed_setup finds them."""
        if self._process_count_ids is None:
            reads = self.ctx.semantic.distributed_setup.rank_reads
            self._process_count_ids = {id(r.node) for r in reads if r.reads == WORLD_SIZE}
        return self._process_count_ids

    def _is_spawned_rank(self, bound: Bound, name: ast.AST) -> bool:
        """``name`` is the parameter of a worker a spawn call starts that receives its process index
        (the first, or the first after what a ``functools.partial`` binds)."""
        function = bound.where.function
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return False
        return (
            bound.where.pos == (function.lineno, function.col_offset)
            and binding_key(name) is not None
            and binding_key(name) == self.ctx.semantic.distributed_setup.index_parameter(function)
        )

    def sized_from_prepared_loader(self, origin: Origin) -> bool:
        """The scheduler built at ``origin`` counts one process's steps: an argument of its
        constructor (or of the factory call that builds it) is computed from the length of an
        already prepared loader: ``get_linear_schedule_with_warmup(opt, 100, len(train_dl) * epochs)``
        after ``train_dl`` was prepared, or ``num_training_steps=args.max_train_steps`` computed
        from it a few statements earlier (:mod:`~regcomp_lint.analysis.step_counts`). Not when
        multiplied by the number of processes: that counts every process's steps."""
        call = origin.call
        for arg in [*call.args, *(kw.value for kw in call.keywords)]:
            for loader, at in self.step_counts.lengths_read(
                arg, origin.where, self.origin, self._process_count_reads()
            ):
                if self.origin(loader, at) is PREPARED:
                    return True
        return False

    def counted_loop(self, scheduler: Origin) -> ast.stmt | None:
        """The loop that fixes how many times the per-step scheduler built at ``scheduler``
        steps, whatever share of the data each process gets (``while global_step < total_steps``,
        ``for step in range(max_steps)``: :mod:`~regcomp_lint.analysis.counted_steps`). Every
        process then takes the original's steps, so the scheduler stays unprepared: prepared, it
        would step once per process at each. None for a scheduler of another cadence."""
        how, step = self.cadence(scheduler)
        return self.counting_loop_of(step, self._built_where(scheduler)) if how is Cadence.PER_STEP else None

    def counting_loop_of(self, step: ast.Call | None, built: Where | None) -> ast.stmt | None:
        """The loop that fixes how many times the call ``step`` runs (see :meth:`counted_loop`).
        ``built``: where the scheduler is built. A bound may read the length of a loader before
        that point (``total_steps = epochs * len(loader)`` to size the scheduler): ``prepare``
        comes after it, so that is the whole loader's length; never one read later, or of a
        prepared loader (one process's share)."""
        path = self._located_loops(step, 0, ()) if step is not None else None
        if path is None:
            return None

        def fixed(expr: ast.expr, where: Where) -> bool:
            for loader, at in self.step_counts.lengths_read(expr, where, self.origin, self._process_count_reads()):
                if self._own_container(loader, at):
                    continue  # `len(history)` of a list the script keeps: not the data's length
                if self.origin(loader, at) is PREPARED:
                    return False
                if built is None or at.function is not built.function or at.pos >= built.pos:
                    return False
            return True

        return counting_loop(path, fixed)

    def _own_container(self, expr: ast.expr, where: Where) -> bool:
        """``expr`` holds, on every binding, a list, tuple, dict or set the script builds (a
        display, a comprehension, ``list(...)`` and its kin) from nothing the roles know as a
        training object: its length (``start_step = len(testCER) * log_every`` of a resumed run's
        evaluations) does not shrink when a process gets a share of the data. ``list(loader)`` or
        ``[b for b in loader]`` is not such a container."""
        if isinstance(expr, ast.Name):
            bound = self.bindings.every_binding(expr, where)
            if not bound or any(b.value is None or b.index is not None for b in bound):
                return False
            values = [(b.value, b.where) for b in bound]
        else:
            values = [(expr, where)]
        for value, at in values:
            if isinstance(value, (ast.List, ast.Tuple, ast.Set, ast.Dict)):
                continue
            if isinstance(value, (ast.ListComp, ast.SetComp, ast.DictComp)):
                if all(self.origin(g.iter, at) is None for g in value.generators):
                    continue
                return False
            if (
                isinstance(value, ast.Call)
                and isinstance(value.func, ast.Name)
                and value.func.id in CONTAINER_BUILTINS
                and not self.ctx.imports.imported(value.func.id)
                and all(self.origin(arg, at) is None for arg in value.args)
            ):
                continue
            return False
        return True

    def _located_loops(self, call: ast.Call, depth: int, below: tuple[ast.AST, ...]) -> LoopPath | None:
        """The loops that run ``call``, outermost first, each with where it sits and the functions
        (``below``, then the function of ``call``) its body reaches the step through, following the
        one call of each function that reaches it; None when several calls do."""
        found = self._calls.get(id(call))
        if found is None:
            return None
        where, loops = found
        own: LoopPath = [
            (loop, where.at(loop), below)
            for loop in reversed(loops)
            if isinstance(loop, (ast.For, ast.AsyncFor, ast.While))
        ]
        function = where.function
        if depth >= MAX_CALLER_DEPTH or not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return own
        callers = self.script.training_loops.callers_of(function)
        if not callers:
            return own
        if len(callers) != 1:
            return None
        outer = self._located_loops(callers[0], depth + 1, (*below, function))
        return outer + own if outer is not None else None

    def cadence(self, scheduler: Origin) -> tuple[Cadence, ast.Call | None]:
        """How often the scheduler built at ``scheduler`` steps, with the ``.step()`` call that
        decided it (see the module docstring)."""
        key = id(scheduler.call)
        if key not in self._cadence:
            self._cadence[key] = self._read_cadence(scheduler)
        return self._cadence[key]

    def _read_cadence(self, scheduler: Origin) -> tuple[Cadence, ast.Call | None]:
        first = scheduler.built.args[0] if scheduler.built.args else None
        built_on = self.origin(first, scheduler.where, through=True) if first is not None else None
        if built_on is None and isinstance(first, ast.Attribute):
            # SAM's `CosineAnnealingLR(optimizer.base_optimizer, ...)`: the optimizer an optimizer holds
            # steps when its holder does (second_step() calls base_optimizer.step())
            holder = self.origin(first.value, scheduler.where, through=True)
            built_on = holder if isinstance(holder, Origin) and holder.kind is Kind.OPTIMIZER else None
        # an optimizer of unknown origin (another module's `build_optimizer(model)`): its steps are
        # those of the same binding of the name the scheduler is built on
        same_binding = self._built_where(scheduler) if built_on is None and isinstance(first, ast.Name) else None
        named = self.bindings.lookup(first, same_binding) if same_binding is not None and first is not None else None
        own_steps: list[_Step] = []
        optimizer_steps: list[_Step] = []
        for step in self._steps:
            receiver = self._step_origin(step.receiver, step.where)
            if any(o.call is scheduler.call for o in self._possible_origins(step.receiver, step.where)):
                own_steps.append(step)  # `lr_scheduler = SequentialLR(...) if warmup else main_lr_scheduler`
            elif isinstance(receiver, Origin) and receiver.kind is Kind.OPTIMIZER and _is(receiver, built_on):
                optimizer_steps.append(step)
            elif named is not None and receiver is None and self._steps_optimizer(step, None, named):
                optimizer_steps.append(step)  # also `scaler.step(optim_g)` of the binding, handed in a list
            elif any(_is(self._step_origin(a, step.where), built_on, Kind.OPTIMIZER) for a in step.call.args):
                optimizer_steps.append(step)  # scaler.step(optimizer)
        if not own_steps and self._handed_to_a_scheduler(scheduler):
            return Cadence.WRAPPED, None
        if own_steps and not optimizer_steps and isinstance(built_on, Origin):
            # SAM's `optimizer.first_step()` / `second_step()`: no `.step()` call, its own methods step it
            optimizer_steps = [s for s in self._other_methods if self._own_method_of(s, built_on)]
        wrapping = [s for s in self._steps if self._wraps(self._step_origin(s.receiver, s.where), built_on)]
        if own_steps and wrapping:
            # torchlars' `optimizer = LARS(base_optimizer)` with the scheduler on base_optimizer: its
            # `self.optim.step()` runs inside the wrapper's step(), which the training loop calls
            optimizer_steps = [s for s in optimizer_steps if s.where.cls is None] + wrapping
        return self._compare_steps(own_steps, optimizer_steps, scheduler.where.function)

    def _wraps(self, found: Origin | _Prepared | None, inner: Origin | _Prepared | None) -> bool:
        """``found`` is an optimizer built around the optimizer ``inner`` (handed to its constructor)."""
        if not isinstance(inner, Origin) or inner.kind is not Kind.OPTIMIZER:
            return False
        if not isinstance(found, Origin) or found.kind is not Kind.OPTIMIZER or found.call is inner.call:
            return False
        handed = [*found.built.args, *(k.value for k in found.built.keywords)]
        return any(_is(self.origin(a, found.where, through=True), inner) for a in handed)

    def _own_method_of(self, call: _Step, optimizer: Origin) -> bool:
        """``call`` is a method the optimizer built at ``optimizer`` has beyond torch's Optimizer API,
        called on it or, once prepared, on the optimizer the prepared one wraps (``optimizer.optimizer``)."""
        held = call.receiver
        if isinstance(held, ast.Attribute) and held.attr == WRAPPED_OPTIMIZER_ATTRIBUTE:
            held = held.value
        receiver = self._step_origin(held, call.where)
        return isinstance(receiver, Origin) and receiver.kind is Kind.OPTIMIZER and _is(receiver, optimizer)

    def bound_cadence(
        self, scheduler: ast.expr, optimizer: ast.expr | None, where: Where
    ) -> tuple[Cadence, ast.Call | None]:
        """How often the scheduler the name ``scheduler`` holds at ``where`` steps, when the roles
        cannot see what built it: another module's ``optimizer, scheduler = build_optimizer(model,
        cfg)`` or ``scheduler = make_scheduler(optimizer)``. Its steps are those of whatever holds
        that binding (here, or as the parameter of a function of the file it is handed to), its
        optimizer's those of ``optimizer`` (a name at ``where``: its object when the roles know it,
        else its binding); then as :meth:`cadence` decides. ``where``: just after the statement
        that binds both names."""
        own = self.bindings.lookup(scheduler, where)
        if own is None:
            return Cadence.UNKNOWN, None
        built_on = self.origin(optimizer, where, through=True) if optimizer is not None else None
        named = self.bindings.lookup(optimizer, where) if optimizer is not None and built_on is None else None
        own_steps: list[_Step] = []
        optimizer_steps: list[_Step] = []
        for step in self._steps:
            if self._holds_binding(step.receiver, step.where, own):
                own_steps.append(step)
            elif self._steps_optimizer(step, built_on, named):
                optimizer_steps.append(step)
        return self._compare_steps(own_steps, optimizer_steps, where.function)

    def _steps_optimizer(self, step: _Step, built_on: Origin | _Prepared | None, named: Bound | None) -> bool:
        """``step`` steps the optimizer built at ``built_on`` or, unknown, held by ``named``:
        ``opt.step()`` or ``scaler.step(opt)``."""
        if isinstance(built_on, Origin):
            receiver = self._step_origin(step.receiver, step.where)
            if isinstance(receiver, Origin) and receiver.kind is Kind.OPTIMIZER and _is(receiver, built_on):
                return True
            return any(_is(self._step_origin(a, step.where), built_on, Kind.OPTIMIZER) for a in step.call.args)
        if named is None:
            return False
        return (
            not step.call.args
            and self._holds_binding(step.receiver, step.where, named)
            or any(self._holds_binding(a, step.where, named) for a in step.call.args)
        )

    def _holds_binding(self, expr: ast.AST, where: Where, bound: Bound, depth: int = 0) -> bool:
        """``expr`` at ``where`` holds what ``bound`` bound: through ``a = b`` and through the
        parameters of the file's functions, followed to what their callers pass."""
        if binding_key(expr) is None or depth > MAX_DEPTH:
            return False
        for found in self.bindings.every_binding(expr, where):
            if found is bound:
                return True
            value = found.value
            if value is not None and found.index is None and binding_key(value) is not None:
                if self._holds_binding(value, found.where, bound, depth + 1):  # `sched = scheduler`
                    return True
                continue
            if value is not None and found.index is not None and isinstance(value, ast.Name):
                # `optim_g, optim_d = optims`, handed `[optim_g, optim_d]` (VITS)
                if any(
                    self._holds_binding(element, at, bound, depth + 1)
                    for element, at in self._elements(value, found.index, found.where, depth + 1)
                ):
                    return True
                continue
            function = found.where.function
            key = binding_key(expr)
            if (
                value is not None
                or key is None
                or "." in key
                or not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef))
                or found.where.pos != (function.lineno, function.col_offset)
            ):
                continue
            for call in self.script.training_loops.callers_of(function):  # a parameter: what callers pass
                arg = argument_for(function, call, key)
                if arg is not None and id(call) in self._calls:
                    if self._holds_binding(arg, self._calls[id(call)][0], bound, depth + 1):
                        return True
        return False

    def _compare_steps(
        self, own_steps: list[_Step], optimizer_steps: list[_Step], scope: object
    ) -> tuple[Cadence, ast.Call | None]:
        """A scheduler's cadence from its own ``.step()`` calls and its optimizer's, by the loops
        (from ``scope``, where it is built, down) that run each (see the module docstring)."""
        valued = [s for s in own_steps if s.call.args or s.call.keywords]
        if valued:
            return Cadence.BY_VALUE, valued[0].call
        if not own_steps or not optimizer_steps:
            return Cadence.UNKNOWN, None
        optimizer_paths = [self._loop_path(s.call, scope) for s in optimizer_steps]
        if any(p is None for p in optimizer_paths):
            return Cadence.UNKNOWN, None
        found: set[Cadence] = set()
        for step in own_steps:
            path = self._loop_path(step.call, scope)
            if path is None:
                return Cadence.UNKNOWN, None
            if path and not any(other is not None and other[:1] == path[:1] for other in optimizer_paths):
                continue  # a loop apart from training (fast-forwarding the schedule on resume)
            for other in optimizer_paths:
                assert other is not None
                if other == path:
                    found.add(Cadence.PER_STEP)
                elif len(other) > len(path) and other[: len(path)] == path:
                    found.add(Cadence.PER_EPOCH)
                else:
                    found.add(Cadence.UNKNOWN)
        if len(found) == 1:
            return found.pop(), own_steps[0].call
        return Cadence.UNKNOWN, None

    def _possible_origins(self, expr: ast.AST, where: Where, depth: int = 0) -> list[Origin]:
        """Every object the name ``expr`` may hold at ``where``, one per binding that reaches it
        (``origin`` answers with the first): a name bound in each branch of an ``if``."""
        if binding_key(expr) is None or depth > MAX_DEPTH:
            return []
        found: list[Origin] = []
        for bound in self.bindings.every_binding(expr, where):
            value = bound.value
            if value is not None and bound.index is None and binding_key(value) is not None:
                found += self._possible_origins(value, bound.where, depth + 1)  # `a = b`: every object of b
                continue
            one = self._bound_origin(bound, expr, depth, True, MAX_CALLER_DEPTH)
            if isinstance(one, Origin):
                found.append(one)
            found += [
                o
                for o in self._factory_origins(bound.value, bound.where, bound.index, depth)
                if all(o.built is not f.built for f in found)
            ]
        return found or [o for o in [self._step_origin(expr, where)] if isinstance(o, Origin)]

    def factory_shard_reason(self, value: ast.expr, where: Where, index: int | None = None) -> str | None:
        """Why the loader a local function called as ``value`` hands back (element ``index`` of the
        tuples it returns) gives each rank its own data on some branch of that function, if it does."""
        for found in self._factory_origins(value, where, index, 0):
            if found.kind is Kind.DATALOADER and (reason := self.shard_reason(found)) is not None:
                return reason
        return None

    def _factory_origins(self, value: ast.AST | None, where: Where, index: int | None, depth: int) -> list[Origin]:
        """Every object a local function called as ``value`` may hand back (element ``index`` of
        the tuples it returns), one per binding of each name it returns: survey 19c's
        ``prepare_data()`` builds its training loader with a DistributedSampler when distributed
        and a plain shuffled one otherwise, and returns it in a tuple."""
        if not isinstance(value, ast.Call) or depth > MAX_DEPTH:
            return []
        returned = self._returned(value.func, where)
        if not returned:
            return []
        items = returned if index is None else self._elements(value, index, where, depth)
        found: list[Origin] = []
        for item, at in items:
            if binding_key(item) is not None:
                found += self._possible_origins(item, at, depth + 1)
            elif isinstance(one := self.origin(item, at, depth + 1), Origin):
                found.append(one)
        if index is None:  # `loader = make_loader(...)`: each call of a factory, its own object (_call_origin)
            return [Origin(o.kind, value, where, o.built) for o in found]
        return found

    def _handed_to_a_scheduler(self, scheduler: Origin) -> bool:
        """The scheduler is an argument (or an element of one) of another scheduler's constructor."""
        if self._wrapped_schedulers is None:  # one walk of the file, whatever the number of schedulers
            self._wrapped_schedulers = set()
            for node in walk(self.ctx.tree):
                if not isinstance(node, ast.Call) or id(node) not in self._calls:
                    continue
                if constructor_kind(self.ctx, node, self.bindings.classes) is not Kind.SCHEDULER:
                    continue
                where = self._calls[id(node)][0]
                for arg in [*node.args, *(kw.value for kw in node.keywords)]:
                    for sub in walk(arg):
                        if binding_key(sub) is not None:
                            self._wrapped_schedulers |= {
                                id(o.call) for o in self._possible_origins(sub, where) if o.built is not node
                            }
        return id(scheduler.call) in self._wrapped_schedulers

    def _step_origin(self, expr: ast.AST, where: Where) -> Origin | _Prepared | None:
        return self.passed_origin(expr, where) if binding_key(expr) is not None else None

    def _loop_path(self, call: ast.Call, scope: object, depth: int = 0) -> tuple[ast.AST, ...] | None:
        """The loops (outermost first) that run ``call``, from ``scope`` down through the calls
        that reach it; None when calls from different loops reach it."""
        where, loops = self._calls.get(id(call), (None, ()))
        own = tuple(reversed(loops))
        function = where.function if where is not None else None
        if (
            function is scope
            or depth >= MAX_CALLER_DEPTH
            or not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef))
        ):
            return own
        callers = self.script.training_loops.callers_of(function)
        if not callers:
            return own
        paths = {self._loop_path(c, scope, depth + 1) for c in callers}
        if len(paths) != 1 or None in paths:
            return None
        (outer,) = paths
        assert outer is not None
        return outer + own


def constant_slot(expr: ast.AST) -> int | str | None:
    """The constant position or key ``expr`` reads when it is ``x[1]`` or ``x["optimizer"]``."""
    if not isinstance(expr, ast.Subscript) or not isinstance(expr.slice, ast.Constant):
        return None
    key = expr.slice.value
    return key if isinstance(key, (int, str)) and not isinstance(key, bool) else None


def _is_constant(node: ast.AST | None, value: object, kind: type) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, kind) and node.value == value


def _is(found: Origin | _Prepared | None, target: Origin | _Prepared | None, kind: Kind | None = None) -> bool:
    """``found`` is the object ``target`` (any object of ``kind`` when ``target`` is unknown)."""
    if not isinstance(found, Origin):
        return False
    if isinstance(target, Origin):
        return found.call is target.call
    return kind is None or found.kind is kind


def _own_method(
    cls: ast.ClassDef | None, name: str, classes: dict[str, ast.ClassDef], depth: int = 0
) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The method ``name`` of ``cls`` or of a base class defined in the file (the first found)."""
    if cls is None or depth > MAX_DEPTH:
        return None
    for statement in cls.body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)) and statement.name == name:
            return statement
    for base in cls.bases:
        found = _own_method(classes.get(base.id), name, classes, depth + 1) if isinstance(base, ast.Name) else None
        if found is not None:
            return found
    return None


def _plain_arguments(call: ast.Call) -> bool:
    """``prepare(a, b)``: no ``*args`` nor keywords (``device_placement=[...]`` aside), so result
    ``i`` is argument ``i``."""
    return all(k.arg == PREPARE_PLACEMENT_KEYWORD for k in call.keywords) and not any(
        isinstance(a, ast.Starred) for a in call.args
    )


def _attribute_assignments(attr: ast.Attribute, where: Where) -> list[ast.expr]:
    """The values assigned to ``obj.attr`` (a namespace's field, ``args.rank = gpu``) in the
    function ``where`` is in: the bindings track names and ``self.`` attributes only."""
    function = where.function
    if not isinstance(attr.value, ast.Name) or not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return []
    return [
        node.value
        for node in walk(function)
        if isinstance(node, ast.Assign)
        and any(
            isinstance(t, ast.Attribute)
            and t.attr == attr.attr
            and isinstance(t.value, ast.Name)
            and t.value.id == attr.value.id
            for t in node.targets
        )
    ]


def _data_nodes(expr: ast.AST) -> list[ast.AST]:
    """The nodes of ``expr`` that decide its data, not where it lives: the arguments of
    ``.to(rank)``/``.cuda(rank)`` and ``device=``-style keywords are placement, not a split."""
    found: list[ast.AST] = []
    stack = [expr]
    while stack:
        node = stack.pop()
        found.append(node)
        if isinstance(node, ast.Call):
            func = node.func
            stack.append(func)
            if not (isinstance(func, ast.Attribute) and func.attr in PLACEMENT_METHODS):
                stack.extend(node.args)
                stack.extend(kw.value for kw in node.keywords if kw.arg not in PLACEMENT_KEYWORDS)
            continue
        stack.extend(children(node))
    return found


def _keyword_value(call: ast.Call, name: str) -> ast.expr | None:
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    return None


def _is_false(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Constant) and node.value is False


def _parameter_of(bound: Bound, name: ast.AST) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The local function whose parameter ``bound`` binds ``name`` to (a plain name bound at the
    ``def`` itself), else None."""
    function = bound.where.function
    key = binding_key(name)
    if (
        key is None
        or "." in key
        or not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef))
        or bound.where.pos != (function.lineno, function.col_offset)
    ):
        return None
    return function
