"""Name-keyed reads of a prepared model in a script that already uses Accelerate.

An Accelerate script's helpers match the prepared model's parameters by name, knowing only
DDP's prefix: DiT's ``update_ema(ema, model)`` strips ``"module."`` from
``model.named_parameters()`` and indexes the EMA's parameters with the rest. Once the conversion
adds a compiling plugin, ``prepare()`` returns the compile wrapper and every name starts with
``_orig_mod.``: the EMA update raises ``KeyError`` on the first step. Such a helper is handed
``accelerator.unwrap_model(model, keep_torch_compile=False)``, the plain module whose parameters
are the same tensors under their own names, on one process and on several.
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
    """Hand the unwrapped model to the file's functions that read the prepared one by name."""
    tree = planner.tree
    prepared_at = dict(models)
    functions = {f.name.value: f for f in find_all(tree.module, cst.FunctionDef)}
    handed: list[str] = []
    for call in find_all(planner.scope, cst.Call):
        callee = functions.get(call.func.value) if isinstance(call.func, cst.Name) else None
        if callee is None:
            continue
        params = parameter_names(callee, keyword_only=False)
        for index, arg in enumerate(call.args):
            model = key_of(arg.value)
            if arg.star or model not in prepared_at or tree.line(call) <= prepared_at[model]:
                continue
            name = arg.keyword.value if arg.keyword is not None else (params[index] if index < len(params) else None)
            if name is None or not _reads_by_name(callee, name):
                continue
            acc = planner.accelerator_in(planner.scope)
            planner.replace(arg.value, f"{acc}.unwrap_model({model}, keep_torch_compile=False)")
            handed.append(f"{callee.name.value}({name}=...) at line {tree.line(call)}")
    if handed:
        planner.notes.append(
            f"{', '.join(handed)} reads the prepared model's parameters by name: it is handed "
            "accelerator.unwrap_model(..., keep_torch_compile=False), as the compiled model's names start with "
            "_orig_mod."
        )


def _reads_by_name(function: cst.FunctionDef, parameter: str) -> bool:
    return any(
        isinstance(call.func, cst.Attribute)
        and call.func.attr.value in NAMED_READS
        and isinstance(call.func.value, cst.Name)
        and call.func.value.value == parameter
        for call in find_all(function, cst.Call)
    )
