"""Which calls build an optimizer, and from which model(s): by dataflow, for RC402 and regcomp-fix.

An optimizer is a ``torch.optim`` (or other known library) optimizer, an instance of a class the
script derives from ``torch.optim.Optimizer`` (a Muon-style optimizer), whatever a local factory
function returns when every value it returns is one (``make_optimizer(model, cfg)``), a known
library factory (timm's ``create_optimizer_v2(model, ...)``), ``model.configure_optimizers()``,
or any other call fed ``model.parameters()`` / param groups whose result the script uses as an
optimizer (``.zero_grad()``, a ``.step()`` without positional arguments, ``.param_groups``). A
value fed parameters but never used so (``sum(p.numel() for p in model.parameters())``, an EMA
stepped with parameters) is not one -- and never an ``int``.

The *owners* of an optimizer are the models whose parameters it holds, as binding keys
(``model``, ``self.model``): what the converter must prepare with it.
"""

from __future__ import annotations

import ast
import types
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar, cast

from regcomp_lint.analysis.bindings import Bindings, Where, binding_key
from regcomp_lint.analysis.file_context import FileContext
from regcomp_lint.analysis.own_callees import AST, method_called
from regcomp_lint.analysis.training_loops import argument_for
from regcomp_lint.analysis.training_objects import Kind, constructor_kind
from regcomp_lint.files.parsing import walk
from regcomp_lint.knowledge.training_libraries import OPTIMIZER_FACTORIES, OPTIMIZER_FACTORY_METHODS

#: Keywords timm's factories take the model (or its parameters) by.
_FACTORY_MODEL_KEYWORDS = ("model_or_params", "model")
#: Calls fed parameters that are not optimizers: clip_grad_norm_(model.parameters()), schedulers.
_NOT_FED_PREFIXES = ("torch.nn.", "torch.optim.lr_scheduler.")
_PARAMETER_METHODS = ("parameters", "named_parameters")
_MAX_DEPTH = 3


_F = TypeVar("_F", bound=Callable)


def _held_weakly(function: _F) -> _F:
    """``function`` without a strong reference to the object it is a method of. The training
    roles own their :class:`OptimizerSources` and hand it their own methods: held strongly, the
    pair would be a reference cycle that keeps the file's whole tree alive until the cyclic
    collector runs (seconds of collection on a large tree)."""
    if not isinstance(function, types.MethodType):
        return function
    method = weakref.WeakMethod(function)
    name = function.__qualname__

    def call(*args, **kwargs):
        bound = method()
        if bound is None:
            raise ReferenceError(f"{name}: its object no longer exists")
        return bound(*args, **kwargs)

    return cast(_F, call)


@dataclass(frozen=True)
class OptimizerSource:
    """A call that builds an optimizer: the models it optimizes and what builds it (for notes)."""

    owners: list[str]
    construct: str


class OptimizerSources:
    """The optimizer questions of one file. ``holds(expr, where, call)`` answers whether ``expr``
    holds what ``call`` returned (the roles' dataflow), for "used as an optimizer"."""

    def __init__(
        self,
        ctx: FileContext,
        bindings: Bindings,
        optimizer_uses: list[tuple[ast.expr, Where]],
        holds: Callable[[ast.expr, Where, ast.Call], bool],
        is_model: Callable[[ast.expr, Where], bool],
    ) -> None:
        self.ctx = ctx
        self.bindings = bindings
        self._optimizer_uses = optimizer_uses
        self._holds = _held_weakly(holds)
        self._is_model = _held_weakly(is_model)
        self._used: dict[int, bool] = {}
        #: id of a scope -> its list-name -> models filled from parameters (see _filled_from_parameters)
        self._fills: dict[int, dict[str, list[str]]] = {}
        #: (id of a node, where, depth) -> the node and its parameter owners (see parameter_owners)
        self._owners: dict[tuple[int, Where, int], tuple[ast.AST, list[str]]] = {}

    def source(self, call: ast.Call, where: Where, depth: int = 0) -> OptimizerSource | None:
        """What ``call`` builds when it certainly builds an optimizer, else None."""
        if depth > _MAX_DEPTH:
            return None
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr in OPTIMIZER_FACTORY_METHODS:
            key = binding_key(func.value)
            return OptimizerSource([key] if key else [], self._text(func))
        if self.ctx.resolves_to(func, *OPTIMIZER_FACTORIES):
            model = next((kw.value for kw in call.keywords if kw.arg in _FACTORY_MODEL_KEYWORDS), None)
            if model is None and call.args and not isinstance(call.args[0], ast.Starred):
                model = call.args[0]
            owners = self.parameter_owners(model, where) if model is not None else []
            key = binding_key(model) if model is not None and not owners else None
            return OptimizerSource(owners or ([key] if key else []), self._text(func))
        if constructor_kind(self.ctx, call, self.bindings.classes) is Kind.OPTIMIZER or self._class_alias(func, where):
            return OptimizerSource(self.parameter_owners(call, where, handed=True), self._text(func))
        factory = self._local_function(func, where)
        if factory is not None and factory is not where.function:
            return self._factory_call(call, where, factory, depth)
        return None

    def _class_alias(self, func: ast.expr, where: Where) -> bool:
        """``func`` is a name bound to an optimizer class: a course script's ``optim =
        getattr(torch.optim, name)`` then ``optim(params, lr=lr)`` (the local shadowing its ``import
        torch.optim as optim``), or ``opt_cls = torch.optim.SGD``. Only a class expression is
        followed (a name, an attribute, ``module.__dict__[...]`` or ``getattr(module, ...)``), never
        another call's result."""
        if not isinstance(func, ast.Name):
            return False
        bound = self.bindings.lookup(func, where)
        value = bound.value if bound is not None and bound.index is None else None
        if not isinstance(value, (ast.Name, ast.Attribute, ast.Subscript, ast.Call)) or value is func:
            return False
        if isinstance(value, ast.Call) and not (isinstance(value.func, ast.Name) and value.func.id == "getattr"):
            return False
        picked = ast.Call(func=value, args=[], keywords=[])
        return constructor_kind(self.ctx, picked, self.bindings.classes) is Kind.OPTIMIZER

    def fed_parameters(self, call: ast.Call, where: Where) -> list[str]:
        """Model keys whose parameters a call of unknown kind receives (one level through a name).
        Nothing for a call known to build something else: ``get_linear_schedule_with_warmup(optimizer,
        ...)`` is handed the optimizer (whose parameters are the model's) and stepped, but it is a
        scheduler."""
        if (self.ctx.qualname(call.func) or "").startswith(_NOT_FED_PREFIXES):
            return []
        if constructor_kind(self.ctx, call, self.bindings.classes) not in (None, Kind.OPTIMIZER):
            return []
        return [
            k for arg in [*call.args, *(kw.value for kw in call.keywords)] for k in self.parameter_owners(arg, where)
        ]

    def used_as_optimizer(self, call: ast.Call) -> bool:
        """Something holding what ``call`` returns gets ``.zero_grad()``, a ``.step()`` without
        positional arguments or ``.param_groups`` (here, in functions it is passed to, or in
        the class's other methods)."""
        if id(call) not in self._used:
            self._used[id(call)] = False  # asked again while answering: not (yet) known
            self._used[id(call)] = any(self._holds(expr, where, call) for expr, where in self._optimizer_uses)
        return self._used[id(call)]

    def parameter_owners(self, node: ast.AST, where: Where, depth: int = 0, *, handed: bool = False) -> list[str]:
        """Keys ``M`` of every ``M.parameters()`` / ``M.named_parameters()`` inside ``node`` (one
        level through a name: ``params = [p for p in model.parameters() if ...]``).

        Asked again and again of the same arguments (every call of unknown kind, once per
        question about it: 42 % of the asks on the fixtures). Without ``handed`` the answer reads
        only the tree and the bindings, so it is kept once the file's analyses are
        :attr:`~regcomp_lint.analysis.semantic_model.SemanticModel.settled` (never while the
        bindings are still being fed: a rule visiting a node may ask before the names below it
        are bound). ``handed`` asks whether expressions are models, which may still be being
        worked out: not kept."""
        if handed or not self.ctx.semantic.settled:
            return self._parameter_owners(node, where, depth, handed)
        key = (id(node), where, depth)
        kept = self._owners.get(key)
        if kept is None:  # (the node is kept with its answer: its id is not reused meanwhile)
            kept = self._owners[key] = (node, self._parameter_owners(node, where, depth, handed))
        return list(kept[1])

    def _parameter_owners(self, node: ast.AST, where: Where, depth: int, handed: bool) -> list[str]:
        owners: list[str] = []
        for sub in walk(node):
            if (
                isinstance(sub, ast.Call)
                and isinstance(sub.func, ast.Attribute)
                and sub.func.attr in _PARAMETER_METHODS
            ):
                key = _owner_key(sub.func.value)
                if key and key not in owners:
                    owners.append(key)
        # a call that certainly builds an optimizer follows one name further: ijepa_ddp's (survey25a)
        # `groups = [{'params': enc_2d}, ...]` of `enc_2d, enc_1d = params_generator(encoder)`
        if not owners and (depth == 0 or (depth == 1 and handed)):
            for name in (n for n in walk(node) if isinstance(n, ast.Name)):
                for bound in self.bindings.every_binding(name, where):
                    if bound.value is not None and not isinstance(bound.value, (ast.FunctionDef, ast.ClassDef)):
                        found = self.parameter_owners(bound.value, bound.where, 1, handed=handed)
                        owners += [k for k in found if k not in owners]
        if not owners and depth <= 1:
            # in source order, not the hash seed's: the owners' order decides the prepare call
            for read in dict.fromkeys(n.id for n in walk(node) if isinstance(n, ast.Name)):
                owners += [k for k in self._filled_from_parameters(read, where) if k not in owners]
        if not owners and handed:  # only for a call that certainly builds an optimizer
            owners = self._models_handed(node, where)
        return owners

    def _filled_from_parameters(self, name: str, where: Where) -> list[str]:
        """Models whose parameters a loop appends to list ``name`` (Barlow Twins' LARS groups:
        ``for p in model.parameters(): (biases if p.ndim == 1 else weights).append(p)``)."""
        scope = where.function if where.function is not None else self.ctx.tree
        if id(scope) not in self._fills:
            self._fills[id(scope)] = self._parameter_fills(scope)
        return self._fills[id(scope)].get(name, [])

    def _parameter_fills(self, scope: ast.AST) -> dict[str, list[str]]:
        """List name -> models whose parameters the loops of ``scope`` append to it (one walk)."""
        fills: dict[str, list[str]] = {}
        submodules = _submodule_loops(scope)
        for loop in walk(scope):
            if not isinstance(loop, ast.For):
                continue
            # each model once: two of its submodules (`model.head`, `model.emb`) are one model
            models = list(
                dict.fromkeys(
                    submodules.get(key, key)
                    for sub in walk(loop.iter)
                    if isinstance(sub, ast.Call)
                    and isinstance(sub.func, ast.Attribute)
                    and sub.func.attr in _PARAMETER_METHODS
                    for key in [_owner_key(sub.func.value)]
                    if key
                )
            )
            if not models:
                continue
            for name in _appended_to(loop):
                owners = fills.setdefault(name, [])
                owners += [m for m in models if m not in owners]
        return fills

    def _models_handed(self, node: ast.AST, where: Where) -> list[str]:
        """Models a param-group helper is handed: ``get_params_groups(model)`` (DINO, timm's
        ``param_groups_weight_decay(model, ...)``) or ``model.get_trainable_parameters()``; the
        optimizer then holds that model's parameters, the same objects ``prepare`` wraps. By
        keyword too: IDDM's ``optimizer_initializer(model=model, optim=optim, ...)``."""
        owners: list[str] = []
        for sub in walk(node):
            if not isinstance(sub, ast.Call):
                continue
            handed = [*sub.args, *(keyword.value for keyword in sub.keywords if keyword.arg is not None)]
            if isinstance(sub.func, ast.Attribute):
                handed.append(sub.func.value)
            for expr in handed:
                key = binding_key(expr)
                if key and key not in owners and self._is_model(expr, where):
                    owners.append(key)
        return owners

    def unpacked_sources(
        self, call: ast.Call, where: Where, width: int
    ) -> dict[int, tuple[OptimizerSource, list[int]]]:
        """The optimizers a local function returns inside tuples of ``width`` values
        (``model, opt = get_model(lr)``), by position. Each comes with the models it holds: in
        ``owners`` the caller's arguments it was handed (``get_opt_and_sched(model)``), in the
        position list the tuple's other values that are its models (``return model, SGD(model...)``)."""
        factory = self._local_function(call.func, where)
        if factory is None or factory is where.function:
            return {}
        returns = self.bindings.returns(factory)
        if not returns or any(not isinstance(v, ast.Tuple) or len(v.elts) != width for v, _ in returns):
            return {}
        value, inside = returns[0]
        assert isinstance(value, ast.Tuple)
        found = self._returned_sources(call, factory, dict(enumerate(value.elts)), inside)
        return {
            index: (source, [b for b in beside if isinstance(b, int)])
            for index, (source, beside) in found.items()
            if isinstance(index, int)
        }

    def element_sources(self, call: ast.Call, where: Where) -> dict[int | str, tuple[OptimizerSource, list[int | str]]]:
        """Like :meth:`unpacked_sources`, by slot, for a local function every return of which is
        a tuple of one width (slots: positions) or a dict display with constant string keys (slots:
        its keys, ``return {"model": model, "optimizer": optimizer}``): what a caller that holds the
        result in a name and takes it apart (``parts["optimizer"]``, ``parts[1]``) gets there."""
        factory = self._local_function(call.func, where)
        if factory is None or factory is where.function:
            return {}
        returns = self.bindings.returns(factory)
        shapes = [returned_slots(value) for value, _ in returns]
        first = shapes[0] if shapes else None
        if first is None or any(s is None or sorted(map(str, s)) != sorted(map(str, first)) for s in shapes):
            return {}
        return self._returned_sources(call, factory, first, returns[0][1])

    def _returned_sources(
        self, call: ast.Call, factory: ast.FunctionDef, elements: dict[int | str, ast.expr], inside: Where
    ) -> dict[int | str, tuple[OptimizerSource, list[int | str]]]:
        """The optimizers among a returned container's ``elements`` (slot -> value), each with the
        caller's arguments it was handed and the slots of the container's models beside it."""
        keys = {slot: binding_key(e) for slot, e in elements.items()}
        parameters = {a.arg for a in [*factory.args.posonlyargs, *factory.args.args, *factory.args.kwonlyargs]}
        found: dict[int | str, tuple[OptimizerSource, list[int | str]]] = {}
        for index, element in elements.items():
            built: ast.AST | None = element
            at = inside
            if binding_key(element) is not None:  # `opt = SGD(...); return model, opt`
                bound = self.bindings.lookup(element, inside)
                built, at = (bound.value, bound.where) if bound is not None and bound.index is None else (None, at)
            if not isinstance(built, ast.Call):
                continue
            source = self.source(built, at, 1)
            if source is None:
                continue
            firsts = [next(slot for slot, key in keys.items() if key == o) for o in source.owners if o in keys.values()]
            beside = [slot for slot in firsts if slot != index]
            handed: list[str] = []
            for owner in source.owners:
                argument = argument_for(factory, call, owner) if owner in parameters else None
                key = binding_key(argument) if argument is not None else None
                if key and key not in handed:
                    handed.append(key)
            if beside or handed:
                construct = f"{self._text(call.func)}() (returns {source.construct})"
                found[index] = (OptimizerSource(handed, construct), beside)
        return found

    # -- local factories ---------------------------------------------------------------------
    def _factory_call(
        self, call: ast.Call, where: Where, factory: ast.FunctionDef, depth: int
    ) -> OptimizerSource | None:
        result = self._factory_result(factory, depth)
        if result is None:
            return None
        parameters, construct, fed = result
        models: list[str] = []
        for parameter in parameters:
            if parameter.startswith("self."):
                models += [parameter] if parameter not in models else []
                continue
            argument = argument_for(factory, call, parameter)
            if argument is None:
                continue
            key = binding_key(argument)
            owners = self.parameter_owners(argument, where, 1) or ([key] if key else [])
            models += [m for m in owners if m not in models]
        for parameter in fed:
            # `build_optimizer(list(model.parameters()), lr)`, `params = list(model.parameters())`
            # ... `build_optimizer(params)`: the parameters handed in are the model's own objects
            # through a param-group helper too: `groups = get_groups(model)` ... `build_optimizer(groups)`
            argument = argument_for(factory, call, parameter)
            if argument is not None:
                models += [m for m in self.parameter_owners(argument, where, handed=True) if m not in models]
        return OptimizerSource(models, f"{self._text(call.func)}() (returns {construct})")

    def _factory_result(self, factory: ast.FunctionDef, depth: int) -> tuple[list[str], str, list[str]] | None:
        """(model-owning parameters of ``factory``, construct, parameters it is fed the model's
        parameters by) when every value it returns is an optimizer. The last: the parameters the
        optimizer's parameter argument is built from (``def build_optimizer(params, lr): return
        AdamW(params, lr=lr)``, or through the factory's own names, ``decay = [p for p in params
        ...]``, ``groups = [{"params": decay}]``)."""
        returns = self.bindings.returns(factory)
        if not returns:
            return None
        constructs: list[str] = []
        owners: list[str] = []
        fed: list[str] = []
        arguments = [a.arg for a in [*factory.args.posonlyargs, *factory.args.args, *factory.args.kwonlyargs]]
        for value, where in returns:
            if binding_key(value) is not None:  # `opt = AdamW(...); return opt`
                bound = self.bindings.lookup(value, where)
                if bound is None or not isinstance(bound.value, ast.Call) or bound.index is not None:
                    return None
                value, where = bound.value, bound.where
            if not isinstance(value, ast.Call):
                return None
            found = self.source(value, where, depth + 1)
            if found is None:
                return None
            owners += [m for m in found.owners if m not in owners]
            constructs.append(found.construct)
            if constructor_kind(self.ctx, value, self.bindings.classes) is Kind.OPTIMIZER:
                fed += [a for a in self._fed_from(value, where, arguments) if a not in fed]
        # the groups a factory builds are often filled in loops (`for n, p in model.named_parameters()`)
        inside = returns[0][1]
        owners += [m for s in factory.body for m in self.parameter_owners(s, inside, 1) if m not in owners]
        parameters = set(arguments)
        # a method called on self: its self.model is the caller's self.model
        owning = [m for m in owners if m in parameters or m.startswith("self.")]
        return owning, constructs[0], [a for a in fed if a not in owning]

    def _fed_from(self, optimizer: ast.Call, where: Where, arguments: list[str]) -> list[str]:
        """Which of a factory's ``arguments`` the parameter argument of ``optimizer`` (its first
        positional or ``params=``) is built from, through the factory's names (up to
        :data:`_MAX_DEPTH` bindings back)."""
        first = (
            optimizer.args[0]
            if optimizer.args
            else next((k.value for k in optimizer.keywords if k.arg == "params"), None)
        )
        if first is None or isinstance(first, ast.Starred):
            return []
        found: list[str] = []
        frontier: list[tuple[ast.AST, Where, int]] = [(first, where, 0)]
        while frontier:
            expr, at, hops = frontier.pop()
            for name in (n for n in walk(expr) if isinstance(n, ast.Name)):
                bound = self.bindings.every_binding(name, at)
                if name.id in arguments and (not bound or any(b.value is None for b in bound)):
                    if name.id not in found:
                        found.append(name.id)
                    continue
                if hops < _MAX_DEPTH:
                    frontier += [(b.value, b.where, hops + 1) for b in bound if isinstance(b.value, ast.expr)]
                    frontier += [(it, at.at(it), hops + 1) for it in _filling_loops(at, name.id)]
        return found

    def _local_function(self, func: ast.expr, where: Where) -> ast.FunctionDef | None:
        """The file's function ``func`` calls (:mod:`~regcomp_lint.analysis.own_callees`): a module
        or nested function by name, or a method of the class ``where`` is in, called on ``self``
        (a trainer's ``self._build_optimizer()``)."""
        if (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id == "self"
            and where.cls is not None
        ):
            return method_called(AST, where.cls, func.attr, self.bindings.classes)
        if not isinstance(func, ast.Name):
            return None
        bound = self.bindings.lookup(func, where)
        return bound.value if bound is not None and isinstance(bound.value, ast.FunctionDef) else None

    def _text(self, node: ast.expr) -> str:
        return self.ctx.source.segment(node)


def _appended_to(loop: ast.For) -> list[str]:
    """The names of the lists ``loop``'s body appends to or extends (``decay.append(p)``, Barlow
    Twins' ``(biases if p.ndim == 1 else weights).append(p)``), in source order."""
    found: list[str] = []
    for stmt in loop.body:
        for sub in walk(stmt):
            if (
                isinstance(sub, ast.Call)
                and isinstance(sub.func, ast.Attribute)
                and sub.func.attr in ("append", "extend")
            ):
                found += [n.id for n in walk(sub.func.value) if isinstance(n, ast.Name) and n.id not in found]
    return found


def _filling_loops(where: Where, name: str) -> list[ast.expr]:
    """What the loops of ``where``'s function that append to (or extend) list ``name`` iterate:
    tinygpt_ddp's (survey25a) ``p_decay = []`` then ``for p in params_grad: ... p_decay.append(p)``
    in a factory handed the parameters, where the binding ``p_decay = []`` alone says nothing."""
    function = where.function
    if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return []
    return [loop.iter for loop in walk(function) if isinstance(loop, ast.For) and name in _appended_to(loop)]


def returned_slots(value: ast.expr) -> dict[int | str, ast.expr] | None:
    """A returned tuple by position, or a dict display by its constant string keys; else None."""
    if isinstance(value, ast.Tuple) and not any(isinstance(e, ast.Starred) for e in value.elts):
        return dict(enumerate(value.elts))
    if isinstance(value, ast.Dict):
        slots: dict[int | str, ast.expr] = {}
        for k, v in zip(value.keys, value.values, strict=True):
            if not isinstance(k, ast.Constant) or not isinstance(k.value, str):
                return None
            slots[k.value] = v
        return slots
    return None


def _owner_key(receiver: ast.expr) -> str | None:
    """The model whose parameters ``receiver.parameters()`` gives: ``model`` for ``model``, and
    for a submodule of it (``model.body``, ``self.model.encoder``: param groups with their own
    learning rates), the same parameter objects ``prepare(model)`` wraps."""
    while isinstance(receiver, ast.Attribute) and binding_key(receiver) is None:
        receiver = receiver.value
    return binding_key(receiver)


def _submodule_loops(scope: ast.AST) -> dict[str, str]:
    """Loop variable -> the model it walks the submodules of (``for block in model.blocks:
    for p in block.parameters(): ...``, a Muon-style param-group split): those parameters are
    the model's, and ``block`` is no model of its own to prepare."""
    found: dict[str, str] = {}
    for loop in walk(scope):
        if isinstance(loop, ast.For) and isinstance(loop.target, ast.Name) and isinstance(loop.iter, ast.Attribute):
            owner = _owner_key(loop.iter)
            if owner is not None and owner != loop.target.id:
                found[loop.target.id] = owner
    return found
