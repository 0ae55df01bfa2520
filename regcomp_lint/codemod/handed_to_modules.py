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
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

import libcst as cst

from regcomp_lint.codemod.local_modules import imported_function
from regcomp_lint.codemod.tree import Block, find_all, key_of
from regcomp_lint.codemod.wrapped_access import places_using_prepared
from regcomp_lint.knowledge import accelerate_api
from regcomp_lint.knowledge.torch_api import DATA_PARALLEL_API, MODULE_API

if TYPE_CHECKING:
    from regcomp_lint.analysis.reachability.modules import ParsedModule
    from regcomp_lint.codemod.plain import PlainPlanner

_FUNCTION = (ast.FunctionDef, ast.AsyncFunctionDef)


def unwrap_for_other_modules(planner: PlainPlanner, block: Block, prepare_index: int) -> None:
    """Hand the unwrapped model to functions of local modules that read its own attributes."""
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
            found = imported_function(tree, call.func)
            if found is None:
                continue
            parsed, definition = found
            for index, arg in handed:
                parameter = _parameter(definition, index, arg.keyword.value if arg.keyword is not None else None)
                read = _own_attribute_read(definition, parameter) if parameter is not None else None
                if read is None:
                    continue
                model = key_of(arg.value)
                where = f"{definition.name}() of {_shown(parsed)}"
                attribute = f"{parameter}.{read.attr}" if isinstance(read, ast.Attribute) else f"{parameter}[...]"
                if _trains(definition):
                    planner.notes.append(
                        f"{where} reads {attribute} (line {read.lineno}) of the prepared {model} it is handed at line "
                        f"{tree.line(call)}, and trains it: DDP does not pass the model's own attributes through; read "
                        "them from accelerator.unwrap_model(...) there by hand"
                    )
                    continue
                if not planner.can_reach_accelerator(function):
                    continue
                acc = planner.accelerator_in(function)
                unwrapped = f"{acc}.unwrap_model({model}, {accelerate_api.REGIONAL_UNWRAP})"
                planner.replace(arg.value, unwrapped)
                planner.uses.append(call)
                planner.notes.append(
                    f"{where} reads {attribute} (line {read.lineno}), which DDP does not pass through: it is handed "
                    f"{unwrapped} at line {tree.line(call)} (it trains nothing)"
                )


def _parameter(definition: ast.FunctionDef | ast.AsyncFunctionDef, index: int, keyword: str | None) -> str | None:
    if keyword is not None:
        return keyword
    positional = [a.arg for a in [*definition.args.posonlyargs, *definition.args.args]]
    return positional[index] if index < len(positional) else None


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
