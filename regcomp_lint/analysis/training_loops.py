"""Which loops of a file train, and so which data loaders are training loaders.

A loop trains when its body reaches the training step -- an ``X.backward(...)`` call
(``loss.backward()``, ``accelerator.backward(loss)``) -- directly or through the file's own
functions it calls (by name, or ``self.method(...)`` inside a class), or hands to
``optimizer.step(closure)``. A data loader iterated by
such a loop, or passed to a parameter that such a loop iterates, is a training loader; one only
iterated by other loops (evaluation, validation) is not, and is left whole on purpose by the
converter. In a file without any ``backward`` call, ``.step()`` calls stand for the step.

One function often trains and evaluates (``run_epoch(loader, train_mode)`` with the step under
``if train_mode:``): a call that fills such a flag with a constant is read with it bound, so
``run_epoch(val_loader, train_mode=False)`` does not make ``val_loader`` a training loader.

Decided by dataflow, never by names, so the lint (RC402) and the converter agree on which
loaders ``prepare`` must see.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Iterator, Sequence

from regcomp_lint.analysis.bindings import binding_key
from regcomp_lint.analysis.loop_aliases import trained_elements
from regcomp_lint.files.parsing import children, kept_walk
from regcomp_lint.knowledge.training_libraries import INTEGER_BUILTINS

FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
LOOPS = (ast.For, ast.AsyncFor, ast.While)
#: Comprehensions loop too: ``[self.train_step(b) for b in self.train_loader]``.
COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)
#: Nodes whose bodies belong to another scope (not run where they are written).
_OTHER_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
#: How deep a loader is followed through parameters of the file's functions.
MAX_PASSES = 4

Function = ast.FunctionDef | ast.AsyncFunctionDef


def iterated(node: ast.expr) -> list[ast.expr]:
    """The names a ``for`` header iterates over: ``loader``, and the arguments of calls around
    it (``enumerate(loader)``, ``tqdm(loader, ...)``, ``zip(a, b)``, ``skip_first_batches(loader, n)``),
    but not the integers ``range(start_epoch, epochs)`` is given (see ``INTEGER_BUILTINS``)."""
    if binding_key(node) is not None:
        return [node]
    if isinstance(node, ast.Call):
        counts = isinstance(node.func, ast.Name) and node.func.id in INTEGER_BUILTINS
        return [e for arg in node.args if not (counts and binding_key(arg) is not None) for e in iterated(arg)]
    return []


def own_nodes(roots: Sequence[ast.AST]) -> Iterator[ast.AST]:
    """Every node under ``roots`` that runs there: not inside a nested def, lambda or class."""
    stack: list[ast.AST] = list(reversed(roots))
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, _OTHER_SCOPES):
            continue
        stack.extend(reversed(children(node)))


def scope_nodes(block: Sequence[ast.AST]) -> Iterator[ast.AST]:
    """:func:`own_nodes` of a block of the tree (a function's body, a loop's), which the loop
    questions walk again and again: inside ``shared_parses`` listed once (parsing.kept_walk)."""
    return kept_walk(block, own_nodes)


class TrainingLoops:
    """The training loops of one module (see the module docstring)."""

    def __init__(self, tree: ast.Module) -> None:
        self._by_name: dict[str, list[Function]] = defaultdict(list)
        self._methods: dict[int, dict[str, Function]] = {}
        self._inits: dict[str, list[Function]] = defaultdict(list)  # class name -> its __init__
        self._class_of: dict[int, ast.ClassDef] = {}  # method id -> its class
        self._function_of: dict[int, Function | None] = {}  # loop or call id -> the function it is in
        self._calls: list[ast.Call] = []
        self._callers: dict[int, list[ast.Call]] | None = None  # function id -> calls of it
        self._fed: dict[str, list[str]] | None = None  # name key -> the parameters it is passed to
        #: answers of loop_trains and passes_for_training, by the ids they were asked about: the
        #: lint's rules and the converter ask about the same loops and calls once per use and per
        #: loader (each answer walks the loop's body, or the callee's)
        self._loop_trains: dict[int, bool] = {}
        self._passes: dict[tuple[int, int, int], bool] = {}
        #: function id -> the calls of its body that run there (``own_nodes(function.body)``)
        self._own_calls: dict[int, list[ast.Call]] = {}
        self._index(tree, None, None)
        has_backward = any(_is_method_call(n, "backward") for n in self._calls)  # (every call of the file)
        self._step = "backward" if has_backward else "step"
        functions = [f for fs in self._by_name.values() for f in fs]
        #: functions that reach the step
        self._training = self._closure(functions)

    def _closure(self, functions: list[Function]) -> set[int]:
        """ids of the functions that reach the step, directly or through the ones found so far.
        Each function's own calls are listed once: the rounds after the first read only those."""
        found: set[int] = set()
        changed = True
        while changed:
            changed = False
            for function in functions:
                if id(function) in found:
                    continue
                if self._calls_step(iter(self._own_calls[id(function)]), function, found):
                    found.add(id(function))
                    changed = True
        return found

    def _index(
        self, node: ast.AST, function: Function | None, cls: ast.ClassDef | None, own: list[ast.Call] | None = None
    ) -> None:
        """Index ``node``'s children. ``own``: the list of the calls that run in the body of the
        function ``node`` is in, not inside a nested def, lambda or class (:func:`own_nodes`
        order: the same pre-order), or None where they do not (a def's decorators, defaults and
        annotations, a lambda, a nested class)."""
        body: set[int] | None = None
        if own is not None and node is function:  # a def: only its body runs there
            body = {id(stmt) for stmt in node.body}
        for child in children(node):
            child_own = own if body is None or id(child) in body else None
            if isinstance(child, FUNCTIONS):
                self._by_name[child.name].append(child)
                if cls is not None and node is cls:
                    self._methods.setdefault(id(cls), {})[child.name] = child
                    self._class_of[id(child)] = cls
                self._index(child, child, None, self._own_calls.setdefault(id(child), []))
            elif isinstance(child, ast.ClassDef):
                self._index(child, function, child)
                init = self._methods.get(id(child), {}).get("__init__")
                if init is not None:
                    self._inits[child.name].append(init)
            else:
                if isinstance(child, (*LOOPS, *COMPREHENSIONS, ast.Call)):
                    self._function_of[id(child)] = function
                    if isinstance(child, ast.Call):
                        self._calls.append(child)
                        if child_own is not None:
                            child_own.append(child)
                self._index(child, function, cls, None if isinstance(child, ast.Lambda) else child_own)

    # -- the training step -----------------------------------------------------------------
    def _callees(self, call: ast.Call, caller: Function | None) -> list[Function]:
        func = call.func
        if isinstance(func, ast.Name):  # a function, or a class of the file: its __init__
            return [*self._by_name.get(func.id, []), *self._inits.get(func.id, [])]
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self":
            cls = self._class_of.get(id(caller)) if caller is not None else None
            method = self._methods.get(id(cls), {}).get(func.attr) if cls is not None else None
            return [method] if method is not None else []
        return []

    def callers_of(self, function: Function) -> list[ast.Call]:
        """The calls of the file that call ``function`` (by name, or ``self.method(...)``)."""
        if self._callers is None:
            self._callers = defaultdict(list)
            for call in self._calls:
                for callee in self._callees(call, self._function_of.get(id(call))):
                    self._callers[id(callee)].append(call)
        return self._callers.get(id(function), [])

    def parameters_fed(self, key: str) -> list[str]:
        """Parameters of the file's functions that a name ``key`` is passed to, by any call
        (indexed for every name on the first question: RC407 asks once per attribute read)."""
        if self._fed is None:
            self._fed = defaultdict(list)
            for call in self._calls:
                for arg in [*call.args, *(kw.value for kw in call.keywords)]:
                    name = binding_key(arg)
                    if name is None:
                        continue
                    for callee in self._callees(call, self._function_of.get(id(call))):
                        param = _parameter_for(callee, call, arg, is_method=id(callee) in self._class_of)
                        if param is not None and param not in self._fed[name]:
                            self._fed[name].append(param)
        return list(self._fed.get(key, ()))

    def _reaches_step(self, body: Sequence[ast.AST], caller: Function | None, training: set[int] | None = None) -> bool:
        return self._calls_step(own_nodes(body), caller, self._training if training is None else training)

    def _calls_step(self, nodes: Iterator[ast.AST], caller: Function | None, functions: set[int]) -> bool:
        for node in nodes:
            if not isinstance(node, ast.Call):
                continue
            if _is_method_call(node, self._step):
                return True
            if any(id(callee) in functions for callee in self._callees(node, caller)):
                return True
            if self._hands_a_step_closure(node, functions):
                return True
        return False

    def _hands_a_step_closure(self, call: ast.Call, functions: set[int]) -> bool:
        """``optimizer.step(closure)``: the optimizer calls the closure, which reaches the step
        (LBFGS, and the Adam phase of PINN and system-identification trainers)."""
        if not _is_method_call(call, "step"):
            return False
        handed = [*call.args, *(kw.value for kw in call.keywords if kw.arg == "closure")]
        return any(
            isinstance(arg, ast.Name) and any(id(f) in functions for f in self._by_name.get(arg.id, []))
            for arg in handed
        )

    def function_trains(self, function: Function) -> bool:
        """``function`` (of this module) reaches the training step, directly or through its callees."""
        return id(function) in self._training

    def loop_trains(self, loop: ast.AST) -> bool:
        """``loop`` (a ``for``/``while`` or a comprehension of this module) reaches the training step."""
        found = self._loop_trains.get(id(loop))
        if found is None:
            found = self._loop_trains[id(loop)] = self._trains(loop)
        return found

    def _trains(self, loop: ast.AST) -> bool:
        if isinstance(loop, LOOPS):
            body: Sequence[ast.AST] = loop.body
        elif isinstance(loop, ast.DictComp):
            body = [loop.key, loop.value, *(test for gen in loop.generators for test in gen.ifs)]
        elif isinstance(loop, (ast.ListComp, ast.SetComp, ast.GeneratorExp)):
            body = [loop.elt, *(test for gen in loop.generators for test in gen.ifs)]
        else:
            return False
        return self._reaches_step(body, self._function_of.get(id(loop)))

    def trains_under(self, loop: ast.For | ast.AsyncFor, flags: Flags) -> bool:
        """:meth:`loop_trains` when the ``if`` statements on the parameters ``flags`` names take
        the branches their values give (``data_pass(epoch, train)`` with ``train`` True or False)."""
        return self._trains_under(loop, flags)

    def _trains_under(self, loop: ast.For | ast.AsyncFor, flags: Flags) -> bool:
        """:meth:`loop_trains`, leaving out the branches ``flags`` never enter."""
        if not flags:
            return self.loop_trains(loop)
        return self._calls_step(live_nodes(loop.body, flags), self._function_of.get(id(loop)), self._training)

    # -- training loaders ------------------------------------------------------------------
    def passes_for_training(self, call: ast.Call, arg: ast.expr, depth: int = 0) -> bool:
        """``arg``, an argument of ``call``, reaches a parameter of the called function of this
        file that a training loop iterates (there or further down)."""
        key = (id(call), id(arg), depth)
        found = self._passes.get(key)
        if found is None:
            found = self._passes[key] = self._passes_for_training(call, arg, depth)
        return found

    def _passes_for_training(self, call: ast.Call, arg: ast.expr, depth: int) -> bool:
        if depth > MAX_PASSES:
            return False
        held = _element_of(call, arg)  # `[train_loader, eval_loader]`, unpacked by the callee
        for callee in self._callees(call, self._function_of.get(id(call))):
            is_method = id(callee) in self._class_of
            if held is not None:
                param = _parameter_for(callee, call, held[0], is_method)
                names = _unpacked_from(callee, param, held[1]) if param is not None else []
            else:
                param = _parameter_for(callee, call, arg, is_method)
                names = [param] if param is not None else []
            flags = constant_flags(callee, call, is_method)
            if any(self.iterates_for_training(callee, name, depth + 1, flags) for name in names):
                return True
        return False

    def iterates_for_training(self, function: Function, name: str, depth: int = 0, flags: Flags = None) -> bool:
        """``name`` (a parameter of ``function``) is iterated by a training loop of it, or passed
        on to a function of this file that does so. ``flags``: parameters the call fills with a
        constant (``train_mode=False``), whose ``if`` branches it never enters are left out."""
        names = {name} | _iteration_aliases(function, name)
        for node in live_nodes(function.body, flags):
            if isinstance(node, (ast.For, ast.AsyncFor)) and any(binding_key(e) in names for e in iterated(node.iter)):
                if self._trains_under(node, flags):
                    return True
            elif isinstance(node, (ast.For, ast.AsyncFor)) and _held_there(function.body, node, name):
                if self._trains_under(node, flags):  # `with tqdm(loader) as t`, the phase loop's `loader`
                    return True
            elif isinstance(node, ast.Call) and depth <= MAX_PASSES:
                for arg in [*node.args, *(kw.value for kw in node.keywords)]:
                    if binding_key(arg) == name and self.passes_for_training(node, arg, depth + 1):
                        return True
        return False


#: Parameters a call fills with a constant truth value (None: none filled so).
Flags = dict[str, bool] | None


def constant_flags(function: Function, call: ast.Call, is_method: bool) -> Flags:
    """The parameters of ``function`` that ``call`` fills with ``True``, ``False`` or ``None``
    (as False), by position or keyword, and that ``function`` never rebinds: ``train_mode=False``."""
    params = positional_parameters(function, call, is_method)
    bound: list[tuple[str | None, ast.expr]] = []
    for index, value in enumerate(call.args):
        if isinstance(value, ast.Starred):
            break  # positions from here on are unknown
        bound.append((params[index] if index < len(params) else None, value))
    bound += [(kw.arg, kw.value) for kw in call.keywords]
    rebound = {n.id for n in scope_nodes(function.body) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    flags = {
        param: bool(value.value)
        for param, value in bound
        if param is not None
        and param not in rebound
        and isinstance(value, ast.Constant)
        and (value.value is None or isinstance(value.value, bool))
    }
    return flags or None


def flag_value(test: ast.expr, flags: Flags) -> bool | None:
    """What an ``if`` test is under ``flags``: ``train_mode`` or ``not train_mode``; None otherwise."""
    if not flags:
        return None
    if isinstance(test, ast.Name):
        return flags.get(test.id)
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = flag_value(test.operand, flags)
        return None if inner is None else not inner
    return None


def live_nodes(roots: Sequence[ast.AST], flags: Flags) -> Iterator[ast.AST]:
    """:func:`own_nodes`, but of an ``if`` on a flag only the branch ``flags`` enter."""
    if not flags:
        yield from own_nodes(roots)
        return
    stack: list[ast.AST] = list(reversed(roots))
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, _OTHER_SCOPES):
            continue
        value = flag_value(node.test, flags) if isinstance(node, ast.If) else None
        if value is None:
            stack.extend(reversed(children(node)))
        else:
            assert isinstance(node, ast.If)
            stack.extend(reversed([node.test, *(node.body if value else node.orelse)]))


def _iteration_aliases(function: Function, name: str) -> set[str]:
    """Names ``function`` binds to a wrapper of ``name`` before looping over them: speech
    trainers' ``pbar = tqdm(enumerate(loader), total=len(loader))`` then ``for i, batch in pbar:``."""
    return {
        node.targets[0].id
        for node in scope_nodes(function.body)
        if isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Name)
        and node.targets[0].id != name
        and any(binding_key(e) == name for e in iterated(node.value))
    }


def _held_there(scope: Sequence[ast.AST], loop: ast.For | ast.AsyncFor, name: str) -> bool:
    """``loop`` iterates a name that stands for ``name`` where its training step runs (:mod:`.loop_aliases`)."""
    return any(
        binding_key(held) == name
        for e in iterated(loop.iter)
        if isinstance(e, ast.Name) and e.id != name
        for held in trained_elements(scope, e.id, loop, scope_nodes, iterated)
    )


def _element_of(call: ast.Call, arg: ast.expr) -> tuple[ast.expr, int] | None:
    """The list or tuple display argument of ``call`` that holds ``arg``, with its position."""
    for value in [*call.args, *(kw.value for kw in call.keywords)]:
        if isinstance(value, (ast.List, ast.Tuple)):
            for index, element in enumerate(value.elts):
                if element is arg:
                    return (value, index) if not any(isinstance(e, ast.Starred) for e in value.elts[:index]) else None
    return None


def _unpacked_from(function: Function, name: str, index: int) -> list[str]:
    """The names ``function`` unpacks element ``index`` of its parameter ``name`` into:
    ``train_loader, eval_loader = loaders``."""
    found = []
    for node in own_nodes(function.body):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name) and node.value.id == name:
            for target in node.targets:
                if isinstance(target, (ast.Tuple, ast.List)) and index < len(target.elts):
                    if any(isinstance(e, ast.Starred) for e in target.elts[: index + 1]):
                        continue
                    element = target.elts[index]
                    if isinstance(element, ast.Name):
                        found.append(element.id)
    return found


def _is_method_call(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == name


def _parameter_for(function: Function, call: ast.Call, arg: ast.expr, is_method: bool) -> str | None:
    """The parameter of ``function`` that ``arg`` of ``call`` binds."""
    for index, value in enumerate(call.args):
        if isinstance(value, ast.Starred):
            return None  # positions from here on are unknown
        if value is arg:
            params = positional_parameters(function, call, is_method)
            return params[index] if index < len(params) else None
    for kw in call.keywords:
        if kw.value is arg and kw.arg is not None:
            names = {p.arg for p in [*function.args.posonlyargs, *function.args.args, *function.args.kwonlyargs]}
            return kw.arg if kw.arg in names else None
    return None


def positional_parameters(function: Function, call: ast.Call, is_method: bool) -> list[str]:
    """The parameters ``call``'s positional arguments bind, in order: ``self`` (or ``cls``) is
    skipped for a method called through an attribute and for a class's ``__init__`` called as
    the class (``Trainer(model, loader)``)."""
    params = [p.arg for p in [*function.args.posonlyargs, *function.args.args]]
    bound_first = isinstance(call.func, ast.Attribute) or function.name == "__init__"
    if is_method and params and bound_first:
        return params[1:]
    return params


def argument_for(function: Function, call: ast.Call, parameter: str) -> ast.expr | None:
    """The argument of ``call`` that binds ``parameter`` of ``function``."""
    for kw in call.keywords:
        if kw.arg == parameter:
            return kw.value
    is_method = bool(function.args.args) and function.args.args[0].arg in ("self", "cls")
    params = positional_parameters(function, call, is_method)
    for index, value in enumerate(call.args):
        if isinstance(value, ast.Starred):
            return None
        if index < len(params) and params[index] == parameter:
            return value
    return None
