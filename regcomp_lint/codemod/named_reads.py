"""Name-keyed reads of a prepared model in a script that already uses Accelerate.

An Accelerate script's helpers match the prepared model's parameters by name, knowing only
DDP's prefix: DiT's ``update_ema(ema, model)`` strips ``"module."`` from
``model.named_parameters()`` and indexes the EMA's parameters with the rest. Once the conversion
adds a compiling plugin, ``prepare()`` returns the compile wrapper and every name starts with
``_orig_mod.``: the EMA update raises ``KeyError`` on the first step. Such a helper is handed
``accelerator.unwrap_model(model, keep_torch_compile=False)``, the plain module whose parameters
are the same tensors under their own names, on one process and on several. Where the training
function hands the prepared model to a helper that passes it on (``train_one_epoch(model, ...)``
calling ``update_ema(ema, model)``), the inner call gets ``getattr(model, "_orig_mod", model)``:
the module the compile wraps, DDP's wrapper included, exactly what the original handed on (it
raised ``KeyError: '_orig_mod.0.weight'`` on the first step, survey 15).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from regcomp_lint.codemod.tree import find_all, key_of, parameter_names

if TYPE_CHECKING:
    from regcomp_lint.codemod.rewrites import Planner

#: nn.Module methods whose results are keyed by the names a wrapper prefixes.
NAMED_READS = frozenset({"named_parameters", "named_buffers", "named_modules", "named_children", "state_dict"})


def unwrap_for_named_reads(planner: Planner, models: list[tuple[str, int]]) -> None:
    """Hand the unwrapped model to the file's functions that read the prepared one by name,
    whether the training function calls them or a helper it hands the prepared model to does."""
    tree = planner.tree
    prepared_at = dict(models)
    functions = {f.name.value: f for f in find_all(tree.module, cst.FunctionDef)}
    handed: list[str] = []
    done: set[int] = set()  # calls inside helpers already rewritten (a helper called in several places)
    for call, callee, name, model in _handed(planner.scope, functions, set(prepared_at)):
        if tree.line(call) <= prepared_at[model]:
            continue
        arg = next(a for a in call.args if key_of(a.value) == model)
        if _reads_by_name(callee, name):
            acc = planner.accelerator_in(planner.scope)
            planner.replace(arg.value, f"{acc}.unwrap_model({model}, keep_torch_compile=False)")
            handed.append(f"{callee.name.value}({name}=...) at line {tree.line(call)}")
            continue
        for inner, helper, inner_name, param in _passed_on(callee, name, functions):
            # a helper (train_one_epoch(model, ...)) passes it on: the module the compile wraps, DDP's
            # wrapper included, is what the original handed on
            if id(inner) in done:
                continue
            done.add(id(inner))
            target = next(a for a in inner.args if key_of(a.value) == param)
            planner.replace(target.value, f'getattr({param}, "_orig_mod", {param})')
            handed.append(f"{helper.name.value}({inner_name}=...) at line {tree.line(inner)}")
    if handed:
        planner.notes.append(
            f"{', '.join(handed)} reads the prepared model's parameters by name: it is handed "
            "the module the compile wraps (accelerator.unwrap_model(..., keep_torch_compile=False), or the "
            "prepared model's _orig_mod in a helper), as the compiled model's names start with _orig_mod."
        )


def _handed(
    function: cst.CSTNode, functions: dict[str, cst.FunctionDef], keys: set[str]
) -> list[tuple[cst.Call, cst.FunctionDef, str, str]]:
    """Calls in ``function`` of the file's functions that pass one of ``keys``: (call, callee,
    the parameter it lands in, the key)."""
    found = []
    for call in find_all(function, cst.Call):
        callee = functions.get(call.func.value) if isinstance(call.func, cst.Name) else None
        if callee is None or callee is function:
            continue
        params = parameter_names(callee, keyword_only=False)
        for index, arg in enumerate(call.args):
            key = key_of(arg.value)
            if arg.star or key not in keys:
                continue
            name = arg.keyword.value if arg.keyword is not None else (params[index] if index < len(params) else None)
            if name is not None:
                found.append((call, callee, name, key))
    return found


def _passed_on(
    helper: cst.FunctionDef, parameter: str, functions: dict[str, cst.FunctionDef], depth: int = 3
) -> list[tuple[cst.Call, cst.FunctionDef, str, str]]:
    """Calls inside ``helper`` (and the helpers it passes ``parameter`` on to) that hand it to a
    function reading it by name."""
    out = []
    for call, callee, name, key in _handed(helper, functions, {parameter}):
        if _reads_by_name(callee, name):
            out.append((call, callee, name, key))
        elif depth > 1:
            out += _passed_on(callee, name, functions, depth - 1)
    return out


def _reads_by_name(function: cst.FunctionDef, parameter: str) -> bool:
    return any(
        isinstance(call.func, cst.Attribute)
        and call.func.attr.value in NAMED_READS
        and isinstance(call.func.value, cst.Name)
        and call.func.value.value == parameter
        for call in find_all(function, cst.Call)
    )
