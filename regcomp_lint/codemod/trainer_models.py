"""A trainer class that binds its model in ``__init__`` and builds the optimizer later.

Real scripts hold training in a class: ``__init__`` keeps ``self.model`` (and its loaders and
device; the model may be bound by one method ``__init__`` calls once for it,
``self._build_model()``, whose code counts as ``__init__``'s), and the training method builds the
optimizer itself (``self.optimizer = torch.optim.SGD(self.model.parameters(), ...)``) or calls a
method that does nothing else (``self.set_optimizer()``, which may also build schedulers on that
optimizer). ``prepare()`` must see the optimizer, so it runs in the training method right after
the optimizer exists; the ``Accelerator`` is made in ``__init__``, so ``self.device`` there is
already the accelerator's device and every method reaches ``self.accelerator``. After the
training method has prepared it, ``self.model`` may be a DDP or compile wrapper in every other
method: the model's own methods are read through ``unwrap_model`` there
(``accelerator.unwrap_model`` of a model not yet prepared is the model itself, so a method called
before training is unaffected).

Refused, naming the construct and its line, where one ``prepare()`` in the training method would
not see what the original trains: ``self.model`` bound again in another method, the training
method called more than once or in a loop (each call would build and prepare a new optimizer of
the one prepared model: folds), a ``set_optimizer()``-style method that also builds other things
than schedulers of its optimizer, a model-building method ``__init__`` does not call exactly once
itself, and a model bound in no method of the class (a base class's, out of sight).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import libcst as cst

from regcomp_lint.analysis.training_objects import Kind
from regcomp_lint.codemod.handed_in import constructions, kept_parameters
from regcomp_lint.codemod.lint_view import lint_view
from regcomp_lint.codemod.roles import bindings, bound_keys
from regcomp_lint.codemod.settings import Refusal
from regcomp_lint.codemod.tree import (
    Function,
    Tree,
    code,
    find_all,
    init_of,
    key_of,
    methods_of,
    parameter_names,
    read_keys,
)

if TYPE_CHECKING:
    from regcomp_lint.codemod.plain import PlainPlanner


@dataclass
class TrainerModels:
    """The trainer class whose ``__init__`` binds the models its training method prepares."""

    cls: cst.ClassDef
    init: cst.FunctionDef
    models: list[str] = field(default_factory=list)
    #: ``self._build_model()`` in ``__init__``: the method that binds a model for it, with that call
    helpers: list[tuple[cst.FunctionDef, cst.Call]] = field(default_factory=list)

    def helper_of(self, node: cst.CSTNode, tree: Tree) -> tuple[cst.FunctionDef, cst.Call] | None:
        """The helper whose body holds ``node``, with its call in ``__init__``."""
        return next(((h, c) for h, c in self.helpers if tree.contains(h, node)), None)


@dataclass(frozen=True)
class OptimizerMethod:
    """``self.set_optimizer()``: a method that only builds the optimizer, called as a statement
    from one other method of its class (the scope the optimizer is prepared in)."""

    method: cst.FunctionDef
    caller: cst.FunctionDef
    statement: cst.SimpleStatementLine
    keys: tuple[str, ...]
    #: the schedulers it builds on those optimizers (``self.scheduler = OneCycleLR(self.optimizer, ...)``)
    schedulers: tuple[str, ...] = ()


def optimizer_method(
    planner: PlainPlanner, function: Function, keys: list[str], models: list[str]
) -> OptimizerMethod | None:
    """``function`` is a method that builds the optimizer(s) ``keys`` of ``models`` it does not
    bind itself, returns nothing, and is called once, as a statement, by another method of its
    class: the optimizer is made at that call. Schedulers it builds on those optimizers are made
    there too (prepared, or left unprepared, by their cadence, like one the training method
    builds); a method that also keeps other attributes (a loss, another optimizer's scheduler) is
    refused, naming them."""
    tree = planner.tree
    if not isinstance(function, cst.FunctionDef) or function in planner.training:
        return None
    cls = tree.class_of(function)
    if cls is None or not keys or not all(k.startswith("self.") for k in keys):
        return None
    if not models or any(bindings(function, m) or tree.is_parameter(m, function) for m in models):
        return None
    callers = planner.graph.callers_of(function)
    if len(callers) != 1:
        return None
    caller, call = callers[0]
    expr = tree.parent(call)
    line = tree.parent(expr) if isinstance(expr, cst.Expr) else None
    if (
        not isinstance(caller, cst.FunctionDef)
        or tree.class_of(caller) is not cls
        or not isinstance(line, cst.SimpleStatementLine)
        or len(line.body) != 1
    ):
        return None
    if any(r.value is not None for r in find_all(function, cst.Return, enter_functions=False)):
        return None  # a factory: its result is bound where it is called
    others = [
        (key, node)
        for node in find_all(function, (cst.Assign, cst.AnnAssign, cst.AugAssign), enter_functions=False)
        for key in bound_keys(node)
        if key.startswith("self.") and key not in keys
    ]
    schedulers = [key for key, node in others if _scheduler_on(planner, node, keys)]
    others = [(key, node) for key, node in others if key not in schedulers]
    if others:
        key, node = others[0]
        raise Refusal(
            f"{cls.name.value}.{function.name.value}() (line {tree.line(function)}) builds {', '.join(keys)} and also "
            f"{key} (line {tree.line(node)}); the conversion prepares what {function.name.value}() builds right "
            f"after {caller.name.value}() calls it (line {tree.line(call)}) only when it builds nothing but the "
            "optimizer and its schedulers: build the rest elsewhere, or convert by hand"
        )
    return OptimizerMethod(function, caller, line, tuple(keys), tuple(dict.fromkeys(schedulers)))


def _scheduler_on(planner: PlainPlanner, node: cst.CSTNode, optimizers: list[str]) -> bool:
    """``node`` is ``self.scheduler = Scheduler(self.optimizer, ...)``: it builds a scheduler (as
    the lint's roles see it) on one of ``optimizers``."""
    if not isinstance(node, cst.Assign) or len(node.targets) != 1 or not isinstance(node.value, cst.Call):
        return False
    view = lint_view(planner.tree)
    built = view.origin(node.value)
    if built is None or built.kind is not Kind.SCHEDULER or built.call is not view.expression_at(node.value):
        return False
    args = node.value.args
    on = next((a for a in args if a.keyword is not None and a.keyword.value == "optimizer"), None)
    if on is None and args and args[0].keyword is None and args[0].star == "":
        on = args[0]
    return on is not None and key_of(on.value) in optimizers


def kept_from_init(tree: Tree, scope: Function, model: str) -> bool:
    """``model`` (``self.model``) is the trainer's, which ``scope`` (one of its methods) prepares
    without making it: ``scope`` binds it nowhere, or only from itself (``self.model =
    torch.compile(self.model)``, ``= DDP(self.model)``, ``= self.model.to(device)``: a compile or
    wrap the conversion takes over, a move) when its class's ``__init__`` makes it."""
    if not model.startswith("self.") or not isinstance(scope, cst.FunctionDef):
        return False
    own = bindings(scope, model)
    if not own:
        return True
    cls = tree.class_of(scope)
    init = init_of(cls) if cls is not None else None
    if init is None or init is scope or not init_bindings(tree, init, model):
        return False
    return all(isinstance(n, cst.Assign) and model in read_keys(n.value) for n in own)


def model_helper(tree: Tree, init: cst.FunctionDef, model: str) -> tuple[cst.FunctionDef, cst.Call] | None:
    """The method that binds ``model`` for ``__init__`` (``self._build_model()``): the one other
    method of the class that binds it, returns nothing, and is called once, as a statement of
    ``__init__`` outside any loop, and nowhere else. Its bindings count as ``__init__``'s."""
    cls = tree.class_of(init)
    if cls is None or bindings(init, model):
        return None
    binders = [m for m in methods_of(cls) if m is not init and bindings(m, model)]
    if len(binders) != 1:
        return None
    helper = binders[0]
    calls = _calls_of_method(tree, cls, helper)
    if len(calls) != 1 or _helper_problem(tree, init, helper, calls) is not None:
        return None
    return helper, calls[0]


def builder_methods(tree: Tree, init: cst.FunctionDef, skip: list[Function]) -> list[tuple[cst.FunctionDef, cst.Call]]:
    """The methods ``__init__`` runs once to build what the trainer keeps (``self._build_data()``,
    ``self._build_model()``; swara_jepa, survey21b), with their calls: each other method of its
    class but ``skip`` that binds an attribute of ``self``, returns nothing, and is called once,
    as a statement of ``__init__`` outside any loop, and nowhere else. Their code counts as
    ``__init__``'s: what they build is prepared with what ``__init__`` builds. A method also called
    from a loop or a resume path (built again) is none: what it builds stays unprepared, or, for
    the model, is refused naming its calls (``model_helper``)."""
    cls = tree.class_of(init)
    if cls is None:
        return []
    found: list[tuple[cst.FunctionDef, cst.Call]] = []
    for method in methods_of(cls):
        if method is init or any(method is s for s in skip):
            continue
        if not any(
            key.startswith("self.")
            for node in find_all(method, (cst.Assign, cst.AnnAssign, cst.AugAssign), enter_functions=False)
            for key in bound_keys(node)
        ):
            continue
        calls = _calls_of_method(tree, cls, method)
        if len(calls) == 1 and _helper_problem(tree, init, method, calls) is None:
            found.append((method, calls[0]))
    return found


def _helper_problem(tree: Tree, init: cst.FunctionDef, helper: cst.FunctionDef, calls: list[cst.Call]) -> str | None:
    """Why ``helper``, which binds the model, cannot count as ``__init__``'s own code (None when it can)."""
    if not calls:
        return "which nothing in this file calls"
    if len(calls) > 1:
        lines = [str(tree.line(c)) for c in calls]
        callers = list(dict.fromkeys(function_label(tree.function_of(c)) for c in calls))
        where = f"in {', '.join(callers[:-1])} and {callers[-1]}" if len(callers) > 1 else f"all in {callers[0]}"
        return f"which is called more than once (called at lines {', '.join(lines[:-1])} and {lines[-1]}, {where})"
    call = calls[0]
    caller = tree.function_of(call)
    if caller is not init:
        return f"called in {function_label(caller)} (line {tree.line(call)}), not by __init__() itself"
    loop = next(
        (a for a in tree.ancestors(call) if isinstance(a, (cst.For, cst.While)) and tree.contains(init, a)), None
    )
    if loop is not None:
        return f"which __init__() calls in the loop at line {tree.line(loop)} (line {tree.line(call)})"
    expr = tree.parent(call)
    if not isinstance(expr, cst.Expr):
        return f"whose result __init__() uses at line {tree.line(call)}"
    if any(r.value is not None for r in find_all(helper, cst.Return, enter_functions=False)):
        return "which returns a value"
    return None


def init_bindings(tree: Tree, init: cst.FunctionDef, model: str) -> list[cst.CSTNode]:
    """Where ``__init__`` binds ``model``: in its own body, or in the one helper it calls for it."""
    own = bindings(init, model)
    if own:
        return own
    helper = model_helper(tree, init, model)
    return bindings(helper[0], model) if helper is not None else []


def refuse_made_again(tree: Tree, scope: Function, model: str) -> None:
    """``self.model = Net()`` in ``__init__`` and again in the training method: the trainer's other
    methods (and ``__init__``'s device and loaders) belong to the first model, the training method
    prepares the second."""
    if not model.startswith("self.") or not isinstance(scope, cst.FunctionDef) or kept_from_init(tree, scope, model):
        return
    cls = tree.class_of(scope)
    init = init_of(cls) if cls is not None else None
    if init is None or init is scope or cls is None:
        return
    made = [n for n in init_bindings(tree, init, model) if isinstance(n, cst.Assign) and isinstance(n.value, cst.Call)]
    again = [n for n in bindings(scope, model) if n not in made]  # the helper __init__ calls is no second build
    if made and again:
        raise Refusal(
            f"the model {model} is built in {cls.name.value}.__init__() (line {tree.line(made[0])}) and again in "
            f"{scope.name.value}() at line {tree.line(again[0])} ({code(again[0]).strip().splitlines()[0]}), where "
            "its optimizer is: the trainer's methods would not all use the model prepare() wraps; keep one model "
            "per trainer, or convert by hand"
        )


def trainer_models(planner: PlainPlanner, model: str, found: TrainerModels | None = None) -> TrainerModels:
    """The trainer class whose ``__init__`` binds ``model`` (``self.model``), which the scope (a
    method of that class) prepares but does not bind, with ``model`` added to ``found`` (the
    trainer's models so far); refused when no method binds it or only another method than
    ``__init__`` does, unless that is the one helper ``__init__`` calls for it (model_helper)."""
    tree = planner.tree
    scope = planner.scope
    cls = tree.class_of(scope) if isinstance(scope, cst.FunctionDef) else None
    assert cls is not None and model.startswith("self.")
    methods = methods_of(cls)
    init = next((m for m in methods if m.name.value == "__init__"), None)
    binders = [m for m in methods if bindings(m, model)]
    where = f"{cls.name.value}.{scope.name.value}() (line {tree.line(scope)})"  # type: ignore[union-attr]
    if not binders:
        bases = ", ".join(code(b.value).strip() for b in cls.bases)
        origin = f"from its base class {bases}, or from outside the class" if bases else "from outside the class"
        raise Refusal(
            f"the model {model}, whose optimizer {where} builds, is bound in no method of {cls.name.value} (class at "
            f"line {tree.line(cls)}): it comes {origin}, where the conversion cannot prepare it; bind it in "
            f"{cls.name.value}.__init__(), or convert by hand"
        )
    helper = model_helper(tree, init, model) if init is not None else None
    # swara_jepa (survey21b): `self._build_model()` then `self._build_optimiser()`, both from
    # __init__, which prepares right after the last of its builder calls
    if init is None or (init not in binders and helper is None) or (init is scope and helper is None):
        first = binders[0]
        problem = None
        if init is not None and init is not first and len(binders) == 1:
            problem = _helper_problem(tree, init, first, _calls_of_method(tree, cls, first))
        raise Refusal(
            f"the model {model}, whose optimizer {where} builds, is bound in {first.name.value}() at line "
            f"{tree.line(bindings(first, model)[0])}"
            + (f", {problem}" if problem is not None else f", not in {cls.name.value}.__init__()")
            + ": the conversion prepares a trainer's model only when __init__ builds it, itself or through one "
            "method it calls once for it and nothing else calls (built again, on a resume or for another run, it "
            "would be a model no prepare() holds); convert by hand"
        )
    found = found if found is not None else TrainerModels(cls, init)
    found.models.append(model)
    if helper is not None and all(h is not helper[0] for h, _ in found.helpers):
        found.helpers.append(helper)
    return found


def refuse_rebound_models(planner: PlainPlanner, found: TrainerModels) -> None:
    """``self.model`` bound again in another method than ``__init__`` (a reset, a reload, a
    compile the conversion does not take over): the one ``prepare()`` in the training method
    would see another model than some methods. Wraps and compiles the conversion removes count
    as gone."""
    tree = planner.tree
    for method in methods_of(found.cls):
        if method is found.init:
            continue
        if any(method is helper for helper, _ in found.helpers):
            continue  # __init__'s own model building, in a method it calls once
        for model in found.models:
            left = [n for n in bindings(method, model) if not planner.is_removed(n) and not _moved(n, model)]
            if left and _placeholder_only(bindings(found.init, model)):
                # nanogpt_cls (survey21b): `self.model = None` in __init__, built by loadModel()/resumeModel()
                where = ", ".join(
                    filter(None, (_binder_of_placeholder(planner, found, m, model) for m in methods_of(found.cls)))
                )
                raise Refusal(
                    f"the model {model} is only set to None in {found.cls.name.value}.__init__() (line "
                    f"{tree.line(bindings(found.init, model)[0])}) and bound in {where}: the conversion "
                    "prepares a trainer's model that __init__ builds itself or through one method it calls once for "
                    "it, and that no other method binds again; convert by hand"
                )
            if left:
                raise Refusal(
                    f"the model {model} is built in {found.cls.name.value}.__init__() and bound again in "
                    f"{method.name.value}() at line {tree.line(left[0])} ({code(left[0]).strip().splitlines()[0]}): "
                    f"the model {function_label(planner.scope)} prepares is not the one every method uses; "
                    "keep one model per trainer, or convert by hand"
                )


def _binder_of_placeholder(planner: PlainPlanner, found: TrainerModels, method: cst.FunctionDef, model: str) -> str:
    """``loadModel() (line 243, called by __init__() at line 109)``, ``resumeModel() (line 201,
    called by loadModel() at line 246, not by __init__())``, ``compileModel() (line 315, `self.model
    = torch.compile(self.model)`, called by ...)``: a method other than ``__init__`` that binds the
    placeholder ``model`` and who calls it (nanogpt_cls: a helper's helper, a compile in a
    method), or "" where it is ``__init__`` or its bindings are all removed (a DDP wrap)."""
    tree = planner.tree
    if method is found.init:
        return ""
    left = [n for n in bindings(method, model) if not planner.is_removed(n) and not _moved(n, model)]
    if not left:
        return ""
    value = left[0].value if isinstance(left[0], (cst.Assign, cst.AnnAssign)) else None
    rewrapped = value is not None and model in read_keys(value)  # a compile or wrap of the model itself
    shown = f", `{code(left[0]).strip().splitlines()[0]}`" if rewrapped else ""
    callers = []
    for call in _calls_of_method(tree, found.cls, method):
        caller = tree.function_of(call)
        callers.append(f"{function_label(caller)} at line {tree.line(call)}")
    by = "called by " + ", ".join(callers) if callers else "called nowhere in the file"
    if callers and all(not c.startswith("__init__()") for c in callers):
        by += ", not by __init__()"
    return f"{method.name.value}() (line {tree.line(left[0])}{shown}, {by})"


def _placeholder_only(nodes: list[cst.CSTNode]) -> bool:
    """``self.model = None``: a placeholder, not a model built."""
    return bool(nodes) and all(
        isinstance(n, (cst.Assign, cst.AnnAssign)) and isinstance(n.value, cst.Name) and n.value.value == "None"
        for n in nodes
    )


def refuse_repeated_training(planner: PlainPlanner, found: TrainerModels) -> None:
    """The training method, which builds the optimizer and prepares, runs once: called twice, or
    in a loop (per fold, per run), it would prepare the one model again with each new optimizer."""
    tree = planner.tree
    scope = planner.scope
    assert isinstance(scope, cst.FunctionDef)
    calls = _calls_of_method(tree, found.cls, scope)
    label = f"{found.cls.name.value}.{scope.name.value}()"
    if len(calls) > 1:
        lines = [str(tree.line(c)) for c in calls]
        shown = ", ".join(lines[:-1]) + f" and {lines[-1]}"
        raise Refusal(
            f"{label}, which builds the optimizer and prepares the model {found.cls.name.value}.__init__() built, is "
            f"called more than once (lines {shown}): each call would prepare that model again with a new optimizer; "
            "convert by hand"
        )
    for call in calls:
        loop = _enclosing_loop(planner, call, 0)
        if loop is not None:
            raise Refusal(
                f"{label}, which builds the optimizer and prepares the model {found.cls.name.value}.__init__() built, "
                f"is called in the loop at line {tree.line(loop)} (line {tree.line(call)}): each pass (a fold, a repeated "
                "run) would make another Accelerator and prepare another model and optimizer on it; convert by hand, "
                "making the Accelerator once, outside the loop, and preparing each pass's objects"
            )


def settings_keys(expressions: list[cst.BaseExpression]) -> list[str]:
    """The trainer attributes compile settings read (``self.args`` of ``self.args.compile``)."""
    found: list[str] = []
    for expr in expressions:
        for key in read_keys(expr):
            parts = key.split(".")
            if parts[0] == "self" and len(parts) > 1 and ".".join(parts[:2]) not in found:
                found.append(".".join(parts[:2]))
    return found


def refuse_settings_out_of_reach(
    planner: PlainPlanner,
    found: TrainerModels,
    expressions: list[cst.BaseExpression],
    where: cst.FunctionDef | None = None,
) -> None:
    """The plugin is made in ``__init__``: a compile setting the training method (or ``where``, a
    method ``__init__`` calls to build the model) spells with its own names (``if use_compile:``
    of a local or a parameter, ``self.compile_mode`` set there) is not known yet."""
    tree = planner.tree
    scope = where if where is not None else planner.scope
    assert isinstance(scope, cst.FunctionDef)
    for expr in expressions:
        for key in read_keys(expr):
            root = key.split(".")[0]
            attribute = ".".join(key.split(".")[:2])
            local = root != "self" and (bindings(scope, root) or tree.is_parameter(root, scope))
            unset = root == "self" and "." in key and not bindings(found.init, attribute)
            if local or unset:
                name = root if local else attribute
                raise Refusal(
                    f"the compile setting {code(expr).strip()} (line {tree.line(expr)}) reads {name}, which "
                    f"{found.cls.name.value}.__init__() does not have: the plugin is made there, with the "
                    f"Accelerator, before {scope.name.value}() runs; set it in __init__, or convert by hand"
                )


def _moved(node: cst.CSTNode, model: str) -> bool:
    """``self.model = self.model.to(device)`` (or ``.cuda()``): the same module, moved."""
    value = node.value if isinstance(node, cst.Assign) else None
    return (
        isinstance(value, cst.Call)
        and isinstance(value.func, cst.Attribute)
        and value.func.attr.value in ("to", "cuda")
        and key_of(value.func.value) == model
    )


def function_label(function: Function) -> str:
    return "module level" if isinstance(function, cst.Module) else f"{function.name.value}()"


def _calls_of_method(tree: Tree, cls: cst.ClassDef, method: cst.FunctionDef) -> list[cst.Call]:
    """Calls of ``method`` on an instance of ``cls``: ``self.train()`` in its own methods,
    ``Trainer(args).train()``, and ``trainer.train()`` where the same function binds ``trainer =
    Trainer(...)`` (``model.train()`` of a module is not one)."""
    name, class_name = method.name.value, cls.name.value
    instances: dict[int, set[str]] = {}
    found: list[cst.Call] = []
    for call in find_all(tree.module, cst.Call):
        func = call.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == name):
            continue
        receiver = func.value
        function = tree.function_of(call)
        if isinstance(receiver, cst.Call) and isinstance(receiver.func, cst.Name) and receiver.func.value == class_name:
            found.append(call)
        elif isinstance(receiver, cst.Name) and receiver.value == "self" and tree.class_of(function) is cls:
            found.append(call)
        elif isinstance(receiver, cst.Name):
            if id(function) not in instances:
                instances[id(function)] = {
                    key
                    for assign in find_all(function, cst.Assign, enter_functions=False)
                    if isinstance(assign.value, cst.Call)
                    and isinstance(assign.value.func, cst.Name)
                    and assign.value.func.value == class_name
                    for key in bound_keys(assign)
                }
            if receiver.value in instances[id(function)]:
                found.append(call)
    return found


def _enclosing_loop(planner: PlainPlanner, node: cst.CSTNode, depth: int) -> cst.CSTNode | None:
    """The ``for``/``while`` that runs ``node`` again and again: around it in its function, or
    around a call of that function (three calls up)."""
    tree = planner.tree
    for anc in tree.ancestors(node):
        if isinstance(anc, (cst.For, cst.While)):
            return anc
        if isinstance(anc, cst.FunctionDef):
            break
    function = tree.function_of(node)
    if depth >= 3 or not isinstance(function, cst.FunctionDef):
        return None
    for _, call in planner.graph.callers_of(function):
        loop = _enclosing_loop(planner, call, depth + 1)
        if loop is not None:
            return loop
    return None


def prepared_after(planner: PlainPlanner, key: str) -> list[cst.CSTNode]:
    """The statements of the scope that make ``key``: ``self.set_optimizer()`` for the optimizers
    and schedulers that method builds, ``self._build_data()`` for what a builder method of
    ``__init__`` binds when ``__init__`` is the scope (none for anything else)."""
    made = planner.optimizer_method
    if made is not None and key in (*made.keys, *made.schedulers) and made.caller is planner.scope:
        return [made.statement]
    return [
        line
        for helper, call in planner.init_builders
        if bindings(helper, key)
        and planner.tree.function_of(call) is planner.scope
        and isinstance(line := planner.tree.line_of(call), cst.SimpleStatementLine)
    ]


def later_methods(planner: PlainPlanner) -> list[cst.FunctionDef]:
    """The trainer's methods that may run once the training method has prepared the model:
    every method but ``__init__``, the training method itself (its code before ``prepare()``
    holds the plain model) and the methods only ``__init__`` calls."""
    found = planner.trainer_models
    if found is not None:
        cls, init = found.cls, found.init
    elif (
        planner.owner is not None
        and isinstance(planner.scope, cst.FunctionDef)
        and planner.scope.name.value == "__init__"
        and planner.tree.class_of(planner.scope) is planner.owner
    ):  # a trainer that prepares in __init__: its other methods all run after
        cls, init = planner.owner, planner.scope
    else:
        return []
    methods = methods_of(cls)
    tree = planner.tree
    last = _last_made(planner) if init is planner.scope else None
    # `self._describe()` after the builders, when __init__ prepares: it runs on the prepared model
    late = {id(call) for _, call in planner.graph.calls_from(init) if last is not None and tree.line(call) > last}
    from_init: set[int] = set()
    frontier: list[Function] = [init]
    while frontier:
        current = frontier.pop()
        for callee, _ in planner.graph.calls_from(current):
            callers = planner.graph.callers_of(callee)
            if id(callee) not in from_init and all(
                (c is init and id(call) not in late) or id(c) in from_init for c, call in callers
            ):
                from_init.add(id(callee))
                frontier.append(callee)
    return [m for m in methods if m is not init and m is not planner.scope and id(m) not in from_init]


def _last_made(planner: PlainPlanner) -> int | None:
    """The line of the last statement of the scope (a trainer's ``__init__``) that makes an object
    it prepares, itself or by a builder call (``self._build_optimiser()``): ``prepare()`` follows it."""
    keys = [
        *planner.models,
        *getattr(planner, "optimizers", []),
        *getattr(planner, "loaders", []),
        *getattr(planner, "schedulers", []),
    ]
    lines = [
        planner.tree.line(n) for key in keys for n in [*bindings(planner.scope, key), *prepared_after(planner, key)]
    ]
    return max(lines, default=None)


def refuse_wrap_handed_in(
    planner: PlainPlanner, found: TrainerModels, call: cst.Call, wrap: cst.BaseExpression, wrapped: str | None
) -> None:
    """``net = DDP(Net())`` (``wrap``, of which ``call`` is the DDP call) bound to ``wrapped`` (or
    passed inline) by the caller, then handed to ``Trainer(net, ...)`` as the parameter
    ``__init__`` keeps as one of the models the training method prepares: the conversion prepares
    that model in the training method and cannot take apart a wrap made outside the trainer."""
    tree = planner.tree
    init = found.init
    params = [p for p in parameter_names(init) if p != "self"]
    kept = kept_parameters(tree, init)
    by_param = {kept[m]: m for m in found.models if m in kept}
    for construction in constructions(tree, found.cls):
        for index, arg in enumerate(construction.args):
            if arg.star:
                break
            name = arg.keyword.value if arg.keyword is not None else params[index] if index < len(params) else None
            inline = arg.value is wrap or arg.value is call
            if name not in by_param or not (inline or (wrapped is not None and key_of(arg.value) == wrapped)):
                continue
            what = "the model the caller hands" if inline else f"{wrapped}, which the caller hands"
            cls = found.cls.name.value
            raise Refusal(
                f"{code(call.func)}(...) at line {tree.line(call)} wraps {what} to {cls}(...) at line "
                f"{tree.line(construction)} as {name}; {cls}.__init__() keeps it as {by_param[name]} and "
                f"{function_label(planner.scope)} trains it: the conversion prepares {by_param[name]} in "
                f"{function_label(planner.scope)}, where prepare() wraps it for several processes, and does not take "
                "apart a wrap made outside the trainer; hand the trainer the bare model (drop the wrap), or port it "
                "by hand"
            )


def model_factories(tree: Tree, found: TrainerModels) -> list[tuple[cst.FunctionDef, str]]:
    """``self.model = self.build_model()`` in ``__init__``: each method of the class that returns
    a model ``__init__`` keeps, called only there, with the local name it returns (``return
    model``). A compile of that name in it is ``__init__``'s own: it folds into the plugin."""
    factories: list[tuple[cst.FunctionDef, str]] = []
    methods = {m.name.value: m for m in methods_of(found.cls)}
    for model in found.models:
        for node in bindings(found.init, model):
            value = node.value if isinstance(node, cst.Assign) else None
            func = value.func if isinstance(value, cst.Call) else None
            if not (
                isinstance(func, cst.Attribute)
                and isinstance(func.value, cst.Name)
                and func.value.value == "self"
                and func.attr.value in methods
            ):
                continue
            method = methods[func.attr.value]
            calls = _calls_of_method(tree, found.cls, method)
            returns = [r for r in find_all(method, cst.Return, enter_functions=False) if r.value is not None]
            name = key_of(returns[0].value) if len(returns) == 1 and returns[0].value is not None else None
            if len(calls) == 1 and calls[0] is value and name is not None and "." not in name:
                factories.append((method, name))
    return factories
