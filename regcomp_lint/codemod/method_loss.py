"""A loss computed by one of the model's own methods, run through a module whose forward() calls it.

``loss = self.model.training_step(batch)`` (a minGPT-fork trainer, cleanrl's
``agent.get_action_and_value(...)``) does not pass through what ``prepare()`` wraps the model in:
DDP arms its gradient sync in ``forward()`` and the compile wraps ``forward()``, so through the
prepared model the method would bypass both. The conversion adds a small module to the script
whose ``forward()`` calls that one method, prepares it in the model's place and trains through
it (``self.training_step(batch)``). The script's own model stays the plain module: it holds the
very parameters the wrapper does (the optimizer's, DDP broadcasts them in place when it wraps),
so its evaluation, its other methods and its saves (keys without ``module.`` or ``_orig_mod.``)
work as before. Several methods in one loss (``encode``, then ``decode``) have no such single
forward() and stay refused.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import libcst as cst

from regcomp_lint.codemod.builders import statement
from regcomp_lint.codemod.fresh_state import makes_fresh_state
from regcomp_lint.codemod.rewrites import function_name
from regcomp_lint.codemod.roles import bindings
from regcomp_lint.codemod.tree import Function, find_all, init_of, key_of, method_named, methods_of, parameter_names
from regcomp_lint.knowledge.accelerate_api import WRAPPED_ENTRY
from regcomp_lint.knowledge.torch_api import DATA_PARALLEL_API, MODULE_API, NO_GRAD

if TYPE_CHECKING:
    from regcomp_lint.codemod.plain import PlainPlanner


@dataclass
class MethodLoss:
    """The model ``owner`` whose method ``method`` computes the loss at ``calls``, prepared as
    ``wrapper = accelerator.prepare(cls_name(owner))``."""

    owner: str
    method: str
    wrapper: str
    cls_name: str
    calls: list[cst.Call] = field(default_factory=list)
    #: the model's method calls under ``torch.no_grad()`` whose outputs the loss reads (a PPO
    #: rollout's log-probs): no gradient, so no DDP sync; they stay on the plain model, eager, as
    #: the original ran them (through the compiled wrapper a sampled action could differ)
    without_grad: list[cst.Call] = field(default_factory=list)


def loss_method_calls(
    tree, function: Function, owners: set[str] | None = None, planner: PlainPlanner | None = None
) -> list[tuple[str, str, cst.Call]]:
    """``(owner, method, call)`` for each ``owner.method(...)`` of ``function`` that a backward of
    ``function`` differentiates (with ``planner``: or that ``function`` returns to a caller's
    backward), the method not ``nn.Module``'s own (``parameters()``...)."""
    found = []
    for call in find_all(function, cst.Call, enter_functions=False):
        func = call.func
        if not isinstance(func, cst.Attribute):
            continue
        owner, name = key_of(func.value), func.attr.value
        if owner is None or name in MODULE_API or name in DATA_PARALLEL_API or name == "backward":
            continue
        if makes_fresh_state(tree, name):
            continue  # ``model.init_hidden(bs)``: a fresh state, no parameters in it
        if owners is not None and owner not in owners:
            continue
        if _feeds(tree, function, call) or (planner is not None and _returned_to_loss(planner, function, call)):
            found.append((owner, name, call))
    return found


def plan_method_loss(planner: PlainPlanner) -> MethodLoss | None:
    """The single model method that computes the loss in the training code, if it is one method
    of one model and the model's forward() does not feed the loss too (a loss made of both would
    need the two through one forward()); else None and the refusal in wrapped_access stands."""
    tree = planner.tree
    models = set(planner.models)
    calls: list[tuple[str, str, cst.Call]] = []
    forwards = False
    for function in _places(planner):
        calls += loss_method_calls(tree, function, models, planner)
        forwards = forwards or any(
            key_of(c.func) in models and _feeds(tree, function, c)
            for c in find_all(function, cst.Call, enter_functions=False)
        )
    rollouts = [c for _, _, c in calls if without_grad(tree, c)]
    calls = [c for c in calls if all(c[2] is not r for r in rollouts)]
    if not calls or forwards:
        return None
    methods = {(owner, name) for owner, name, _ in calls}
    if len(methods) != 1 or len(models) != 1 or not all(_in_reach(planner, o, c) for o, _, c in calls):
        return None
    ((owner, method),) = methods
    base = method.lstrip("_") or "method"
    cls_name = _free("_" + "".join(p.capitalize() for p in base.split("_") if p), _names_in(tree.module, False))
    prefix = "self." if owner.startswith("self.") else ""
    holder = tree.class_of(tree.function_of(calls[0][2])) if prefix else None
    wrapper = prefix + _free(base, _names_in(holder or tree.module, bool(prefix)))
    return MethodLoss(owner, method, wrapper, cls_name, [c for _, _, c in calls], rollouts)


def not_wrapped(planner: PlainPlanner) -> str:
    """Why the loss-bearing method calls were not given a wrapper (see plan_method_loss), for the
    refusal: several methods, several models, or forward() feeding the loss beside the method."""
    tree = planner.tree
    models = set(planner.models)
    calls = [
        c for f in _places(planner) for c in loss_method_calls(tree, f, models, planner) if not without_grad(tree, c[2])
    ]
    if not calls:
        return "a wrapper module stands for a method called where the training code prepares the model"
    shown = ", ".join(dict.fromkeys(f"{owner}.{name} (line {tree.line(call)})" for owner, name, call in calls))
    if len({name for _, name, _ in calls}) > 1 or len({owner for owner, _, _ in calls}) > 1:
        return (
            f"the loss comes from several {'methods of the models' if len({o for o, _, _ in calls}) > 1 else 'of its methods'} "
            f"({shown}), and one wrapper's forward() stands for one method"
        )
    if len(models) > 1:
        return f"it trains several models ({', '.join(sorted(models))}), and a wrapper stands for one"
    away = [(o, c) for o, _, c in calls if not _in_reach(planner, o, c)]
    if away:
        owner, call = away[0]
        where = function_name(tree.function_of(call))
        return (
            f"it is called in {where} (line {tree.line(call)}), where a wrapper prepared "
            f"{'at' if isinstance(planner.scope, cst.Module) else 'in'} {function_name(planner.scope)} is not in reach"
        )
    return f"the model's forward() feeds the same loss as {shown}, and one wrapper's forward() stands for one of them"


def _places(planner: PlainPlanner) -> list[Function]:
    """Where the prepared model is used (wrapped_access reads the same places)."""
    from regcomp_lint.codemod.wrapped_access import places_using_prepared

    return places_using_prepared(planner)


def _returned_to_loss(planner: PlainPlanner, function: Function, call: cst.Call) -> bool:
    from regcomp_lint.codemod.wrapped_access import feeds_the_loss

    return feeds_the_loss(planner, function, call)


def _in_reach(planner: PlainPlanner, owner: str, call: cst.Call) -> bool:
    """Can the wrapper prepared where the model is prepared be named at ``call``? In the function
    that prepares, in a method of the same class (``self.x``), or, for a module-level script, in a
    function that reads the global model."""
    tree = planner.tree
    function = tree.function_of(call)
    if function is planner.scope:
        return True
    if owner.startswith("self."):
        return planner.owner is not None and tree.class_of(function) is planner.owner
    if isinstance(planner.scope, cst.Module) and isinstance(function, cst.FunctionDef):
        root = owner.split(".")[0]
        return root not in parameter_names(function) and not bindings(function, root)
    return False


def _feeds(tree, function: Function, call: cst.Call) -> bool:
    """wrapped_access's reading of what a backward differentiates (imported here: it builds on this module)."""
    from regcomp_lint.codemod.wrapped_access import _feeds_the_loss

    return _feeds_the_loss(tree, function, call)


def _names_in(module: cst.Module | cst.ClassDef, attributes: bool) -> set[str]:
    """The names a new name must not clash with: the class's attribute and method names for
    ``self.x``, the script's other names (a method's name or ``obj.x`` does not clash with a global ``x``)."""
    attrs = {n.attr.value for n in find_all(module, cst.Attribute)}
    defs = {f.name.value for f in find_all(module, cst.FunctionDef)}
    if attributes:
        own = {
            n.attr.value
            for n in find_all(module, cst.Attribute)
            if isinstance(n.value, cst.Name) and n.value.value == "self"
        }
        return own | defs
    spelled = {n.value for n in find_all(module, cst.Name)}
    tops = module.body if isinstance(module, cst.Module) else []
    return (spelled - attrs - defs) | {n.name.value for n in tops if isinstance(n, (cst.FunctionDef, cst.ClassDef))}


def _free(name: str, taken: set[str]) -> str:
    candidate, n = name, 2
    while candidate in taken:
        candidate, n = f"{name}_{n}", n + 1
    return candidate


def class_statement(planner: PlainPlanner, found: MethodLoss) -> cst.BaseStatement:
    """The wrapper module's definition (``torch`` is imported for it)."""
    nl, unit = planner.module.default_newline, planner.module.default_indent
    lines = [
        f"class {found.cls_name}(torch.nn.Module):",
        f'{unit}"""Runs model.{found.method} through what prepare() wraps it in: DDP\'s gradient sync',
        f'{unit}and the compile only go through forward()."""',
        "",
        f"{unit}def __init__(self, model):",
        f"{unit}{unit}super().__init__()",
        f"{unit}{unit}self.model = model",
        "",
        f"{unit}def {WRAPPED_ENTRY}(self, *args, **kwargs):",
        f"{unit}{unit}return self.model.{found.method}(*args, **kwargs)",
    ]
    return statement(nl.join(lines), planner.module)


def add_wrapper_class(planner: PlainPlanner, found: MethodLoss) -> None:
    """Define the wrapper at module level, before the first function or class (the script's own
    code that builds and trains comes after it), and note what changed."""
    module = planner.tree.module
    body = list(module.body)
    index = next((i for i, s in enumerate(body) if isinstance(s, (cst.FunctionDef, cst.ClassDef))), None)
    if index is None:
        index = next((i for i, s in enumerate(body) if planner.tree.contains(s, found.calls[0])), len(body))
    defined = class_statement(planner, found)
    assert isinstance(defined, cst.ClassDef)
    defined = defined.with_changes(leading_lines=[cst.EmptyLine(), cst.EmptyLine()])
    planner.edits.add_statements(module, index, [defined], after=True)
    if index < len(body):
        nxt = body[index]
        blank = 0
        for line in getattr(nxt, "leading_lines", []):
            if line.comment is not None:
                break
            blank += 1
        if blank < 2 and hasattr(nxt, "leading_lines"):
            planner.edits.on(
                nxt, lambda u: u.with_changes(leading_lines=[cst.EmptyLine()] * (2 - blank) + list(u.leading_lines))
            )
    planner.imports.append(("torch", None))
    planner.notes.append(
        f"{found.owner}.{found.method}(...) computes the loss: it runs through {found.wrapper} = "
        f"{found.cls_name}({found.owner}), a module whose forward() calls the method, which prepare() wraps in "
        f"{found.owner}'s place (DDP's gradient sync and the compile only see forward()); {found.owner} stays the plain "
        "model with the same parameters, for evaluation, its other methods and its saves"
    )


def prepared_as(found: MethodLoss | None, keys: list[str]) -> tuple[list[str], list[str]]:
    """(targets, arguments) of the prepare call for ``keys``: the wrapper in the model's place."""
    if found is None:
        return keys, keys
    targets = [found.wrapper if k == found.owner else k for k in keys]
    args = [f"{found.cls_name}({k})" if k == found.owner else k for k in keys]
    return targets, args


def regional_left_off(found: MethodLoss, reason: str) -> str:
    """The note for a model with repeated blocks whose loss runs through the wrapper: regional
    compilation would find the blocks through it, but copies the modules on the way to them
    (the model among them), so the script's own ``model.train()``/``eval()`` would no longer reach
    the copy's ``training`` flag that the method reads (see ``accelerate_api.WRAPPED_ENTRY``)."""
    return (
        f"{reason}, but regional compilation is left off: it copies {found.owner} inside {found.cls_name}, and the "
        f"script's own {found.owner}.train()/eval() would no longer reach that copy's training flag; the plugin "
        f"compiles {found.cls_name} whole"
    )


def without_grad(tree, node: cst.CSTNode) -> bool:
    """``node`` runs under ``with torch.no_grad():`` (or ``inference_mode``) of its own function,
    or in a function decorated with one."""
    for anc in tree.ancestors(node):
        if isinstance(anc, cst.With) and any(
            tree.resolves_to(item.item.func if isinstance(item.item, cst.Call) else item.item, *NO_GRAD)
            for item in anc.items
        ):
            return True
        if isinstance(anc, cst.FunctionDef):
            return any(
                tree.resolves_to(d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator, *NO_GRAD)
                for d in anc.decorators
            )
    return False


def left_plain(planner: PlainPlanner, call: cst.Call) -> bool:
    """A loss-feeding call of the model's own method made without grad, next to the wrapped one."""
    found = planner.method_loss
    return found is not None and any(call is c for c in found.without_grad)


def through_wrapper(planner: PlainPlanner, call: cst.Call) -> bool:
    """Rewrite a loss-bearing ``model.method(...)`` to ``wrapper(...)``; False when it is not one."""
    found = planner.method_loss
    if found is None or all(call is not c for c in found.calls):
        return False
    planner.replace(call.func, found.wrapper)
    return True


def unused_by_method(planner: PlainPlanner) -> list[str]:
    """Why the wrapped method may leave some of the model's parameters without a gradient, for
    ``find_unused_parameters=True`` (DDP fails at the second step otherwise): the submodules
    ``__init__`` builds that the method never reaches (through ``self(...)``/``forward`` and the
    class's other methods it calls), or the class itself when it cannot be read (a method of a
    library's model, several classes defining it). The handler costs a graph walk per step only."""
    found = planner.method_loss
    if found is None:
        return []
    classes = [c for c in find_all(planner.tree.module, cst.ClassDef) if method_named(c, found.method) is not None]
    if len(classes) != 1:
        return [f"{found.owner}.{found.method}() is not read here (its class is not the script's own)"]
    cls = classes[0]
    methods = {s.name.value: s for s in methods_of(cls)}
    reached, pending, seen = set(), [found.method], set()
    while pending:
        name = pending.pop()
        if name in seen or name not in methods:
            continue
        seen.add(name)
        body = methods[name]
        for node in find_all(body, (cst.Attribute, cst.Call)):
            if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "self":
                pending.append("forward")
            elif isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == "self":
                reached.add(node.attr.value)
                pending.append(node.attr.value)
        if any(_detaches(n) for n in find_all(body, (cst.Call, cst.With))):
            return [f"{cls.name.value}.{name} (line {planner.tree.line(body)}) cuts part of the model off the loss"]
    built = [s for s in _built_submodules(cls) if s not in reached]
    if built:
        shown = ", ".join(f"self.{s}" for s in built)
        return [f"{cls.name.value}.{found.method} (the loss) does not use {shown}"]
    return []


def _detaches(node: cst.CSTNode) -> bool:
    """``x.detach()`` or ``with torch.no_grad():`` in a method the loss runs through."""
    if isinstance(node, cst.Call):
        return isinstance(node.func, cst.Attribute) and node.func.attr.value == "detach"
    assert isinstance(node, cst.With)
    return any("no_grad" in cst.Module([]).code_for_node(item.item) for item in node.items)


def _built_submodules(cls: cst.ClassDef) -> list[str]:
    """``body`` of ``self.body = nn.Sequential(...)`` in ``__init__`` (what holds parameters)."""
    names: list[str] = []
    init = init_of(cls)
    if init is not None:
        for assign in find_all(init, cst.Assign):
            if not isinstance(assign.value, cst.Call):
                continue
            for target in assign.targets:
                t = target.target
                if isinstance(t, cst.Attribute) and isinstance(t.value, cst.Name) and t.value.value == "self":
                    if t.attr.value not in names:
                        names.append(t.attr.value)
    return names
