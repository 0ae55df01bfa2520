"""Models loaded with ``from_pretrained(device_map=...)`` are refused.

A device map spreads the model over the visible devices by hand (naive model parallelism), one
process driving them all. accelerate's ``prepare()`` refuses to train such a model on several
processes, and on one the conversion would add nothing but the compile. Dropping ``device_map``
makes it an ordinary model DDP copies to each process; which to do is the user's call. A map
naming one CUDA device (``device_map="cuda"``, survey 20d dsg_distill) spreads nothing, and
prepare() trains it: in the function that creates the Accelerator it becomes
``{"": accelerator.device}``, each process loading the model onto its own device. Elsewhere it is
refused, for what it does: every process would load the whole model onto that one device first.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

import libcst as cst

from regcomp_lint.codemod.local_modules import beside, imported_function
from regcomp_lint.codemod.settings import Refusal
from regcomp_lint.codemod.tree import Function, Tree, code, find_all, single_target
from regcomp_lint.knowledge.model_classes import DISPATCH_KEYWORD, SPREADING_DEVICE_MAPS

if TYPE_CHECKING:
    from regcomp_lint.codemod.plain import PlainPlanner


def refuse_dispatched_models(planner: PlainPlanner) -> None:
    """Refuse when a prepared model is built by ``X.from_pretrained(..., device_map=<not None>)``."""
    tree = planner.tree
    models = set(planner.models)
    reach = planner.reach()
    for assign in find_all(tree.module, cst.Assign):
        target = single_target(assign)
        if target is None or target[0] not in models or _never_runs(planner, tree.function_of(assign), reach):
            continue
        for call in find_all(assign.value, cst.Call):
            func = call.func
            if not (isinstance(func, cst.Attribute) and func.attr.value == "from_pretrained"):
                continue
            for arg in call.args:
                if arg.keyword is None or arg.keyword.value != DISPATCH_KEYWORD:
                    continue
                if isinstance(arg.value, cst.Name) and arg.value.value == "None":
                    continue
                where = (
                    f"{code(func).strip()}(..., {DISPATCH_KEYWORD}={code(arg.value).strip()}) at line {tree.line(call)}"
                )
                if _one_device(arg.value) and _names_cuda(arg.value) and tree.function_of(call) is planner.scope:
                    acc = planner.accelerator_in(planner.scope)
                    planner.replace(arg.value, f'{{"": {acc}.device}}')
                    planner.uses.append(call)  # the Accelerator comes before the load
                    planner.notes.append(
                        f'{where} -> {DISPATCH_KEYWORD}={{"": {acc}.device}}: each process loads {target[0]} whole '
                        "onto its own device (the one CUDA device the map named would have held every process's "
                        "copy), and prepare() trains it data-parallel"
                    )
                    continue
                raise Refusal(_why(where, target[0], arg.value))
        for call in find_all(assign.value, cst.Call):
            handed = handed_on(tree, call)
            if handed is not None:
                raise Refusal(_why(handed[0], target[0], handed[1]))


def _why(where: str, model: str, value: cst.BaseExpression) -> str:
    """What a load ``where`` of ``model`` with ``device_map=value`` (not None) does that prepare() cannot train."""
    if _one_device(value):
        return (
            f"{where} loads {model} whole onto the one device it names, in every process: on several "
            "processes they would all load it there before prepare() moves each copy to its own device; "
            "drop device_map (the conversion moves the model to accelerator.device), or convert by hand"
        )
    computed = _computed_device(value)
    if computed is not None:
        return (
            f"{where} loads {model} whole onto the device `{computed}` names, placed by the script: "
            "whether that is each process's own device is not known here; drop device_map (the "
            "conversion moves the model to accelerator.device), or convert by hand"
        )
    return (
        f"{where} spreads {model} over the devices by hand (one process driving them all), "
        "and accelerate's prepare() refuses to train such a model on several processes; drop device_map "
        "to train it data-parallel (each process holds a whole copy), or convert by hand"
    )


def handed_on(tree: Tree, call: cst.Call) -> tuple[str, cst.BaseExpression] | None:
    """A function of another module of the project that loads with ``from_pretrained(...,
    device_map=...)`` (kd_topk's ``load_draft_with_lora(..., device_map="auto")`` of
    src/models/load.py, which hands its parameter on): how to name that load, and the map it gets
    (the script's argument, else the parameter's default, else the module's own value); None when
    there is none, or it is None. The module is read, not edited: such a load is refused."""
    found = imported_function(tree, call.func)
    if found is None:
        return None
    parsed, function = found
    for node in ast.walk(function):
        if not (
            isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "from_pretrained"
        ):
            continue
        keyword = next((k for k in node.keywords if k.arg == DISPATCH_KEYWORD), None)
        if keyword is None:
            continue
        given = _given(call, function, keyword.value)
        if given is None:
            continue
        value, whose = given
        if isinstance(value, cst.Name) and value.value == "None":
            continue
        load = f"{ast.unparse(node.func)}(..., {DISPATCH_KEYWORD}={ast.unparse(keyword.value)})"
        where = (
            f"{code(call.func).strip()}(...) at line {tree.line(call)} ({DISPATCH_KEYWORD}={code(value).strip()}{whose}), "
            f"through {load} at {beside(tree, parsed.path)}:{node.lineno},"
        )
        return where, value
    return None


def _given(
    call: cst.Call, function: ast.FunctionDef | ast.AsyncFunctionDef, value: ast.expr
) -> tuple[cst.BaseExpression, str] | None:
    """The value ``value`` (an expression of ``function``) has when ``call`` calls it, as the
    script's code (``", its default"`` when the parameter's default gives it), else None."""
    if not isinstance(value, ast.Name):
        return cst.parse_expression(ast.unparse(value)), " in that module"
    arguments = function.args
    positional = [*arguments.posonlyargs, *arguments.args]
    names = [a.arg for a in positional]
    kwonly = [a.arg for a in arguments.kwonlyargs]
    if value.id not in names and value.id not in kwonly:
        return None  # a name bound in the function: not followed
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == value.id:
            return arg.value, ""
    if any(arg.star for arg in call.args):
        return None
    if value.id in names:
        index = names.index(value.id)
        passed = [a for a in call.args if a.keyword is None]
        if index < len(passed):
            return passed[index].value, ""
        defaults = arguments.defaults
        offset = index - (len(positional) - len(defaults))
        default = defaults[offset] if offset >= 0 else None
    else:
        default = arguments.kw_defaults[kwonly.index(value.id)]
    if default is None:
        return None
    return cst.parse_expression(ast.unparse(default)), ", its default"


def _never_runs(planner: PlainPlanner, function: Function, reach: list[Function]) -> bool:
    """``function`` is a def of the file that nothing in it calls and that does not train: a
    loader the script keeps beside the one it uses (memz's ``load_base_model()`` beside
    ``load_lora_model()``, survey 21f) builds no model the training sees."""
    return (
        isinstance(function, cst.FunctionDef)
        and function is not planner.scope
        and all(function is not r for r in reach)
        and not planner.graph.callers_of(function)
    )


def _one_device(value: cst.BaseExpression) -> bool:
    """``device_map`` names one device by a literal: ``"cuda"``, ``0``, ``torch.device("cuda")``, ``{"": 0}``."""
    if isinstance(value, cst.SimpleString):
        return value.evaluated_value not in SPREADING_DEVICE_MAPS
    if isinstance(value, cst.Integer):
        return True
    if isinstance(value, cst.Call):
        return code(value.func).strip() == "torch.device" and all(
            isinstance(arg.value, (cst.SimpleString, cst.Integer)) for arg in value.args
        )
    entry = _whole_model_entry(value)
    return entry is not None and _one_device(entry)


def _names_cuda(value: cst.BaseExpression) -> bool:
    """The one device of ``value`` (:func:`_one_device`) is a CUDA device: ``"cuda"``, ``"cuda:1"``, an
    index, ``torch.device("cuda")``; not ``"cpu"``, ``"mps"`` or ``"meta"``, which accelerator.device
    would change."""
    entry = _whole_model_entry(value)
    if entry is not None:
        return _names_cuda(entry)
    if isinstance(value, cst.Call):
        return bool(value.args) and _names_cuda(value.args[0].value)
    if isinstance(value, cst.SimpleString):
        device = value.evaluated_value
        return isinstance(device, str) and device.strip().lower().startswith("cuda")
    return isinstance(value, cst.Integer)


def _computed_device(value: cst.BaseExpression) -> str | None:
    """``{"": local_rank}``: the whole model on a device the script computes (its text), else None."""
    entry = _whole_model_entry(value)
    if entry is None or _one_device(entry):
        return None
    return code(entry).strip()


def _whole_model_entry(value: cst.BaseExpression) -> cst.BaseExpression | None:
    """The ``d`` of ``{"": d}`` (the whole model, module path ``""``), else None."""
    if isinstance(value, cst.Dict) and len(value.elements) == 1:
        element = value.elements[0]
        if isinstance(element, cst.DictElement):
            key = element.key
            if isinstance(key, cst.SimpleString) and key.evaluated_value == "":
                return element.value
    return None
