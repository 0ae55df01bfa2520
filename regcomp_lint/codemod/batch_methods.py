"""Methods of a module-level script's own plain classes that its module code calls through a
module-level instance (modded-nanogpt's ``train_loader.next_batch()``, survey 22a modded_flex).

Their ``.to(device="cuda")`` and ``.cuda()`` meant the process's own GPU once the original's
``torch.cuda.set_device(local_rank)`` had run; the conversion removes that call (Accelerate makes
each process's GPU the current one itself), and left in place they are what regcomp-lint's RC403
reports on the converted script, with an unsafe fix that failed the regcomp-fix hook on every
later run. Like the training code's, their placements follow ``accelerator.device``; the module
calls that run them count as uses of the Accelerator, so it is created before the first one.

Only classes with no base class (``nn.Module`` subclasses run compiled, datasets have
:meth:`PlainPlanner._dataset_item_methods`), and only methods whose every call is module code
through an instance the module binds to ``Class(...)``: a call from a function may run anywhere."""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from regcomp_lint.codemod.roles import bound_keys
from regcomp_lint.codemod.tree import code, find_all, methods_of

if TYPE_CHECKING:
    from regcomp_lint.codemod.tree import Tree


def own_batch_methods(tree: Tree) -> list[tuple[cst.FunctionDef, list[cst.Call]]]:
    """Each such method with the module-level calls that run it."""
    module = tree.module
    classes = {
        stmt.name.value: stmt
        for stmt in module.body
        if isinstance(stmt, cst.ClassDef) and all(code(base.value) == "object" for base in stmt.bases)
    }
    if not classes:
        return []
    instances = module_instances(tree, set(classes))
    if not instances:
        return []
    calls: dict[tuple[str, str], list[cst.Call]] = {}
    for call in find_all(module, cst.Call):
        func = call.func
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value in instances:
            calls.setdefault((instances[func.value.value], func.attr.value), []).append(call)
    found: list[tuple[cst.FunctionDef, list[cst.Call]]] = []
    for name, cls in classes.items():
        for method in methods_of(cls):
            runs = calls.get((name, method.name.value), [])
            if method.name.value.startswith("__") or not runs:
                continue
            if all(tree.function_of(call) is module for call in runs):
                found.append((method, runs))
    return found


def module_instances(tree: Tree, class_names: set[str]) -> dict[str, str]:
    """``{instance key: class name}`` for each module-level ``x = Cls(...)`` of one of
    ``class_names`` (the instances module code can reach; one inside a function may not exist yet)."""
    instances: dict[str, str] = {}
    for stmt in tree.module.body:
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            if (
                isinstance(small, cst.Assign)
                and isinstance(small.value, cst.Call)
                and isinstance(small.value.func, cst.Name)
                and small.value.func.value in class_names
            ):
                for key in bound_keys(small):
                    instances[key] = small.value.func.value
    return instances
