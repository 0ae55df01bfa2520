"""The prepared model handed to a function of the project's other modules that reads the model's
own attributes.

milesial's UNet ``train.py`` calls ``evaluate(model, val_loader, device, amp)`` from
``evaluate.py``, which reads ``net.n_classes``. Prepared on several processes, ``model`` is a
``DistributedDataParallel``, which does not pass the model's own attributes through: "'DistributedDataParallel'
object has no attribute 'n_classes'" on the first evaluation (one process runs, so nothing shows
until the launch). The converter rewrites such reads in the script itself (``wrapped_access.py``);
a function of another file it does not edit. It reads that file (next to the script, as Python
would import it; ``ast`` only): when the function trains nothing (no ``X.backward()``), it is
handed ``accelerator.unwrap_model(model, keep_torch_compile=False)`` (an evaluation needs no DDP;
see :data:`~regcomp_lint.knowledge.accelerate_api.REGIONAL_UNWRAP` for why not the compiled
one); when it trains, the note names the read.

The same for a function that takes the model's state dict (``utils.save_checkpoint(model, ...)``
with ``model.state_dict()``, ``load_checkpoint(model, ...)`` with ``model.load_state_dict(...)``):
handed the prepared model, it writes the compiled wrapper's keys (``blocks.0._orig_mod.fc.weight``),
which no plain model loads strictly, and a resume no longer loads the original's checkpoints
(survey20a, a GradScaler nanoGPT trainer). A function that reads ``model.module`` unwraps DDP
itself and keeps the prepared model, unless it does so only when DDP is there (``model.module if
hasattr(model, "module") else model``): on one process the prepared model is the compile wrapper,
which it would save whole (survey21b).
"""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING

import libcst as cst

from regcomp_lint.analysis.reachability.modules import ParsedModule
from regcomp_lint.codemod.local_modules import (
    FunctionNode,
    imported_function,
    unread_class,
    unread_project_class,
    unread_project_function,
)
from regcomp_lint.codemod.object_classes import class_method, constructions
from regcomp_lint.codemod.settings import Refusal
from regcomp_lint.codemod.tree import Block, Function, Tree, find_all, key_of
from regcomp_lint.codemod.wrapped_access import feeds_the_loss, places_using_prepared
from regcomp_lint.knowledge import accelerate_api
from regcomp_lint.knowledge.torch_api import DATA_PARALLEL_API, EARLY_STOPPER_WORDS, MODULE_API, WRITER_NAME_WORDS

if TYPE_CHECKING:
    from regcomp_lint.codemod.plain import PlainPlanner

_FUNCTION = (ast.FunctionDef, ast.AsyncFunctionDef)


def unwrap_for_other_modules(planner: PlainPlanner, block: Block, prepare_index: int) -> None:
    """Hand the unwrapped model to functions of local modules that read its own attributes or take its
    state dict."""
    tree = planner.tree
    if tree.filename is None:
        return
    models = set(planner.models)
    for function in places_using_prepared(planner):
        for call in find_all(function, cst.Call, enter_functions=False):
            handed = [(i, a) for i, a in enumerate(call.args) if not a.star and key_of(a.value) in models]
            if not handed or planner.is_removed(call):
                continue
            if function is planner.scope:
                index = planner.project(block, call)
                if index is None or all(
                    index < planner.prepared_at.get(key_of(a.value) or "", prepare_index) for _, a in handed
                ):
                    continue  # still the plain model
            method = object_method(planner, function, call)
            found = imported_function(tree, call.func) if method is None else None
            if found is None and method is None:
                _note_unread(planner, function, call, [key_of(a.value) or "" for _, a in handed])
                continue
            shown, definition = method[:2] if method is not None else (None, found[1])  # type: ignore[index]
            skip = 1 if method is not None else 0  # the method's own ``self``
            feeds = feeds_the_loss(planner, function, call)
            for index, arg in handed:
                keyword = arg.keyword.value if arg.keyword is not None else None
                parameter = _parameter(definition, index + skip, keyword)
                reason = _why_unwrapped(definition, parameter) if parameter is not None else None
                if reason is None and parameter is not None and method is not None:
                    reason = _why_unwrapped_in_own_methods(method[1], method[2], parameter)
                if reason is None:
                    continue
                what, which, trained = reason
                model = key_of(arg.value)
                where = shown or f"{definition.name}() of {_shown(found[0])}"  # type: ignore[index]
                if feeds:  # it runs the model for the loss: it needs DDP's wrapper, which syncs the gradients
                    assert parameter is not None
                    if _own_attribute_read(definition, parameter) is not None:
                        raise Refusal(
                            f"{where} {what} of the prepared {model} it is handed at line {tree.line(call)}, and its "
                            "result feeds the loss: handed the unwrapped model its forward would run outside DDP "
                            "(no gradient sync), handed the prepared one the read fails on several processes (DDP "
                            "does not pass the model's own attributes through); convert by hand, reading the "
                            "attribute from accelerator.unwrap_model(...) there and calling the prepared model"
                        )
                    continue
                if _trains(definition):
                    planner.notes.append(
                        f"{where} {what} of the prepared {model} it is handed at line {tree.line(call)}, and trains "
                        f"it: {trained} there by hand"
                    )
                    continue
                if not planner.can_reach_accelerator(function):
                    continue
                acc = planner.accelerator_in(function)
                unwrapped = f"{acc}.unwrap_model({model}, {accelerate_api.REGIONAL_UNWRAP})"
                planner.replace(arg.value, unwrapped)
                planner.uses.append(call)
                planner.notes.append(
                    f"{where} {what}, {which}: it is handed {unwrapped} at line {tree.line(call)} (it trains nothing)"
                )


def _note_unread(planner: PlainPlanner, function: Function, call: cst.Call, models: list[str]) -> None:
    """The prepared model handed to a function of a module that is not found (lmforge_trainer's
    ``save_checkpoint(path, self.model, ...)``, survey 21b): whether it takes the state dict is
    unknown, so the note names the call instead of unwrapping."""
    qualname = unread_project_function(planner.tree, call.func)
    method = unread_project_class(planner.tree, call.func) if qualname is None else None
    if method is None and qualname is None and isinstance(call.func, cst.Name):
        method = _unread_callable_class(planner.tree, function, call.func.value)
    if qualname is not None:
        module, name = qualname.rsplit(".", 1)
    elif method is not None and isinstance(call.func, cst.Attribute):
        module, name = method[0], f"{method[1]}.{call.func.attr.value}"
    elif method is not None:
        module, name = method[0], f"{method[1]}.__call__"
    else:
        return
    acc = planner.accelerator_in(function) if planner.can_reach_accelerator(function) else "accelerator"
    # a writer of an unread class is no function file_writes names: say here that every process runs it
    words = set(name.rsplit(".", 1)[-1].lower().split("_"))
    if name.endswith(".__call__"):  # the class names what its call does: ``SaveBestModel``
        words = {w.lower() for w in re.findall(r"[A-Z]?[a-z]+", name.rsplit(".", 1)[0])}
    writes = (
        f"; it runs in every process: if it writes a file, put the call under `if {acc}.is_main_process:`"
        if method is not None and WRITER_NAME_WORDS & words
        else ""
    )
    if method is not None and EARLY_STOPPER_WORDS & words:  # (its call decides the stop of every process)
        writes = (
            "; it runs in every process: if it saves a checkpoint, put that torch.save under `if "
            "PartialState().is_main_process:` in its module (from accelerate import PartialState), not the call"
        )
    for model in models:
        planner.notes.append(
            f"{name}() at line {planner.tree.line(call)}, of {module} (not found beside the script, so not read), is "
            f"handed the prepared {model}: a state_dict() saved or loaded there has the compiled wrapper's "
            f"`_orig_mod.` keys; hand it {acc}.unwrap_model({model}, {accelerate_api.REGIONAL_UNWRAP}) if it trains "
            f"nothing{writes}"
        )


def _unread_callable_class(tree: Tree, function: Function, name: str) -> tuple[str, str] | None:
    """``("src.io_utils", "SaveBestModel")`` for ``save_best_model(loss, epoch, net, ...)`` where
    ``save_best_model`` is built (here or up the callers, :func:`constructions`) from a class of a
    project module whose file is not found."""
    built = constructions(tree, function, name)
    return unread_class(tree, built[0].func) if built else None


def object_method(
    planner: PlainPlanner, function: Function, call: cst.Call
) -> tuple[str, FunctionNode, ast.ClassDef | None] | None:
    """``ema.update(model)`` where ``ema = ModelEMA(model)`` in ``function`` (or at the top level)
    and ``ModelEMA`` is a class of the script or of a project module that defines ``update``
    itself: how the method is shown (``ModelEMA.update() of train.py``), its definition and its
    class. An EMA
    class reads the model it is handed by name (YOLO's ``ModelEMA``, survey 21f), as a helper
    function of another module does."""
    found = class_method(planner.tree, function, call)
    if found is None:
        return None
    parsed, cls, method = found
    return f"{cls.name if cls is not None else '?'}.{method.name}() of {_shown(parsed)}", method, cls


def _why_unwrapped_in_own_methods(
    definition: FunctionNode, cls: ast.ClassDef | None, parameter: str
) -> tuple[str, str, str] | None:
    """:func:`_why_unwrapped` of the class's own methods that ``definition`` hands ``parameter``
    to (``self.reset_parameters(ema_model, model)``, one call deep): IDDM's ``EMA.step_ema``
    copies the model's weights in ``reset_parameters`` with ``ema_model.load_state_dict(
    model.state_dict())``, which fails on the prepared model's keys (survey 22c)."""
    if cls is None:
        return None
    own = {m.name: m for m in cls.body if isinstance(m, _FUNCTION)}
    for node in ast.walk(definition):
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id in ("self", cls.name)
            and node.func.attr in own
        ):
            continue
        callee = own[node.func.attr]
        static = any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in callee.decorator_list)
        skip = 0 if static or node.func.value.id == cls.name else 1
        handed = [
            _parameter(callee, i + skip, None)
            for i, a in enumerate(node.args)
            if isinstance(a, ast.Name) and a.id == parameter
        ] + [k.arg for k in node.keywords if isinstance(k.value, ast.Name) and k.value.id == parameter]
        for name in handed:
            reason = _why_unwrapped(callee, name) if name is not None else None
            if reason is not None:
                return reason
    return None


def _parameter(definition: ast.FunctionDef | ast.AsyncFunctionDef, index: int, keyword: str | None) -> str | None:
    """The name the function knows the argument by: its parameter, or for a keyword that lands in
    ``**kwargs`` the name a loop over them binds each value to (:func:`_kwargs_value`)."""
    positional = [a.arg for a in [*definition.args.posonlyargs, *definition.args.args]]
    if keyword is not None:
        named = {*positional, *(a.arg for a in definition.args.kwonlyargs)}
        if keyword not in named and definition.args.kwarg is not None:
            return _kwargs_value(definition, definition.args.kwarg.arg)
        return keyword
    return positional[index] if index < len(positional) else None


def _kwargs_value(definition: ast.FunctionDef | ast.AsyncFunctionDef, kwargs: str) -> str | None:
    """``value`` in ``for key, value in kwargs.items():`` or ``for value in kwargs.values():``: how
    SwAV's and DINO's ``restart_from_checkpoint(path, run_variables=..., state_dict=model, ...)``
    reaches each object it is handed to load (``value.load_state_dict(checkpoint[key], strict=False)``)."""
    for node in ast.walk(definition):
        if not (
            isinstance(node, ast.For)
            and isinstance(node.iter, ast.Call)
            and isinstance(node.iter.func, ast.Attribute)
            and isinstance(node.iter.func.value, ast.Name)
            and node.iter.func.value.id == kwargs
        ):
            continue
        target = node.target
        if node.iter.func.attr == "items" and isinstance(target, ast.Tuple) and len(target.elts) == 2:
            target = target.elts[1]
        elif node.iter.func.attr != "values":
            continue
        if isinstance(target, ast.Name):
            return target.id
    return None


def _why_unwrapped(definition: ast.FunctionDef | ast.AsyncFunctionDef, parameter: str) -> tuple[str, str, str] | None:
    """What in the function needs the model itself rather than the prepared one, why (a ``which``
    clause), and what to do by hand where the function trains; None when the prepared model serves."""
    read = _own_attribute_read(definition, parameter)
    if read is not None:
        attribute = f"{parameter}.{read.attr}" if isinstance(read, ast.Attribute) else f"{parameter}[...]"
        return (
            f"reads {attribute} (line {read.lineno})",
            "which DDP does not pass through",
            "DDP does not pass the model's own attributes through; read them from accelerator.unwrap_model(...)",
        )
    state = _state_dict_call(definition, parameter) or _unwrapped_state_dict_call(definition, parameter)
    if _unwraps_itself(definition, parameter) and not (
        state is not None and _asks_for_the_wrapper(definition, parameter)
    ):
        return None
    if state is None:
        return None
    trained = "the compiled wrapper's keys carry _orig_mod.; use accelerator.unwrap_model(...)"
    receiver = ast.unparse(state.func.value) if isinstance(state.func, ast.Attribute) else parameter
    if isinstance(state.func, ast.Attribute) and state.func.attr == "state_dict":
        return (
            f"takes {receiver}.state_dict() (line {state.lineno})",
            "which from the prepared model would carry the compiled wrapper's keys (_orig_mod.), not loadable into "
            "a plain model",
            trained,
        )
    return (
        f"calls {receiver}.load_state_dict(...) (line {state.lineno})",
        "which into the prepared model expects the compiled wrapper's keys (_orig_mod.), not the checkpoints' own",
        trained,
    )


def _uses_of(definition: ast.FunctionDef | ast.AsyncFunctionDef, parameter: str) -> list[ast.Attribute]:
    """Every ``parameter.attr`` in the function (not in functions nested in it), in source order."""
    found: list[ast.Attribute] = []
    pending: list[ast.AST] = list(definition.body)
    while pending:
        node = pending.pop()
        if isinstance(node, (*_FUNCTION, ast.Lambda, ast.ClassDef)):
            continue
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == parameter:
            found.append(node)
        pending.extend(ast.iter_child_nodes(node))
    return sorted(found, key=lambda n: (n.lineno, n.col_offset))


def _unwraps_itself(definition: ast.FunctionDef | ast.AsyncFunctionDef, parameter: str) -> bool:
    """``model.module`` (or another attribute only DDP has): the function expects the wrapper."""
    return any(use.attr in DATA_PARALLEL_API for use in _uses_of(definition, parameter))


def _asks_for_the_wrapper(definition: ast.FunctionDef | ast.AsyncFunctionDef, parameter: str) -> bool:
    """``hasattr(model, "module")`` / ``isinstance(model, DDP)``: the function unwraps DDP only when
    it is there. Handed the prepared model on one process (a compile wrapper, no DDP) it finds no
    ``module`` and takes the wrapper's state dict, ``_orig_mod.`` keys (lmforge_trainer,
    survey21b); handed the unwrapped model it takes the model's own, as the original did."""
    for node in ast.walk(definition):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("hasattr", "isinstance", "getattr")
            and node.args
            and isinstance(node.args[0], ast.Name)
            and node.args[0].id == parameter
        ):
            return True
    return False


def _unwrapped_state_dict_call(definition: ast.FunctionDef | ast.AsyncFunctionDef, parameter: str) -> ast.Call | None:
    """``raw = model.module if hasattr(model, "module") else model`` then ``raw.state_dict()``: the
    first state-dict call on a name bound from the parameter (or its ``.module``)."""
    names = {
        target.id
        for node in ast.walk(definition)
        if isinstance(node, ast.Assign)
        and any(isinstance(n, ast.Name) and n.id == parameter for n in ast.walk(node.value))
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    for name in sorted(names):
        found = _state_dict_call(definition, name)
        if found is not None:
            return found
    return None


def _state_dict_call(definition: ast.FunctionDef | ast.AsyncFunctionDef, parameter: str) -> ast.Call | None:
    """The first ``parameter.state_dict()`` or ``parameter.load_state_dict(...)`` call."""
    calls = {id(n.func): n for n in ast.walk(definition) if isinstance(n, ast.Call)}
    for use in _uses_of(definition, parameter):
        if use.attr in _STATE_DICT_METHODS and id(use) in calls:
            return calls[id(use)]
    return None


_STATE_DICT_METHODS = frozenset({"state_dict", "load_state_dict"})


def _own_attribute_read(
    definition: ast.FunctionDef | ast.AsyncFunctionDef, parameter: str
) -> ast.Attribute | ast.Subscript | None:
    """The first ``parameter.attr`` that is the model's own (not ``nn.Module``'s API), or
    ``parameter[...]``, in the function (not in functions nested in it)."""
    found: list[ast.Attribute | ast.Subscript] = []
    pending: list[ast.AST] = list(definition.body)
    while pending:
        node = pending.pop()
        if isinstance(node, (*_FUNCTION, ast.Lambda, ast.ClassDef)):
            continue
        if isinstance(node, (ast.Attribute, ast.Subscript)) and isinstance(node.value, ast.Name):
            if node.value.id == parameter and (
                isinstance(node, ast.Subscript) or (node.attr not in MODULE_API and node.attr not in DATA_PARALLEL_API)
            ):
                found.append(node)
        pending.extend(ast.iter_child_nodes(node))
    return min(found, key=lambda n: (n.lineno, n.col_offset)) if found else None


def _trains(definition: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "backward"
        for n in ast.walk(definition)
    )


def _shown(parsed: ParsedModule) -> str:
    import os

    return os.path.basename(parsed.path) if parsed.path else "its module"
