"""A training loop that takes its DataLoader out of a dict or list: not converted.

The classic fine-tuning loop builds ``dataloaders = {"train": train_loader, "val": val_loader}``
and trains over ``for inputs, labels in dataloaders[phase]``. ``prepare()`` hands back new
objects and the conversion rebinds their names; the dict keeps the loaders it was built with, so
the training loop would go on iterating the whole, unsharded loader in every process (N
processes each training on all the data). Until the conversion can prepare the loaders where the
container is built, it refuses, naming the loop, the container and the loaders.
"""

from __future__ import annotations

import ast

from regcomp_lint.analysis.training_objects import Kind
from regcomp_lint.analysis.training_roles import Origin
from regcomp_lint.codemod.lint_view import LintView
from regcomp_lint.files.parsing import walk
from regcomp_lint.knowledge.training_libraries import LOOP_PASS_THROUGH


def container_loader_refusal(view: LintView, prepared: list[str]) -> str | None:
    """Why the script is not converted, when a training loop iterates ``D[k]`` and ``D`` is
    bound to a dict or list display holding a DataLoader that is not sharded nor prepared."""
    roles, parsed = view.roles, view.parsed
    if roles is None or parsed is None:
        return None
    for loop in walk(parsed):  # (ast.walk's order: the first loop found is named)
        if not isinstance(loop, (ast.For, ast.AsyncFor)):
            continue
        it = loop.iter
        while (
            isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id in LOOP_PASS_THROUGH and it.args
        ):
            it = it.args[0]
        if not (isinstance(it, ast.Subscript) and isinstance(it.value, ast.Name)):
            continue
        if not roles.script.training_loops.loop_trains(loop):
            continue
        container = it.value.id
        for built in _displays(parsed, container):
            loaders = [
                element.id
                for element in _elements(built)
                if isinstance(element, ast.Name)
                and element.id not in prepared
                and isinstance(found := roles.origin(element, roles.bindings.here(element)), Origin)
                and found.kind is Kind.DATALOADER
                and roles.shard_reason(found) is None
            ]
            if loaders:
                return (
                    f"the training loop at line {loop.lineno} iterates {ast.unparse(it)}, and the "
                    f"DataLoader{'s' if len(loaders) > 1 else ''} {', '.join(loaders)} "
                    f"reach{'' if len(loaders) > 1 else 'es'} it through {container} (built at line {built.lineno}): prepare() "
                    "hands back new loaders, which the container would not hold, so every process would train on "
                    f"all the data; convert by hand, preparing the loaders before {container} is built"
                )
    return None


def _displays(parsed: ast.Module, name: str) -> list[ast.expr]:
    """The dict and list displays ``name`` is assigned anywhere in the file."""
    return [
        node.value
        for node in ast.walk(parsed)
        if isinstance(node, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == name for t in node.targets)
        and isinstance(node.value, (ast.Dict, ast.List, ast.Tuple))
    ]


def _elements(display: ast.expr) -> list[ast.expr]:
    if isinstance(display, ast.Dict):
        return list(display.values)
    return list(display.elts) if isinstance(display, (ast.List, ast.Tuple)) else []
