"""What a name a training loop iterates stands for, when the script binds it first.

``with tqdm(loader) as tepoch: for batch in tepoch`` iterates ``loader``; the phase loop of
classic fine-tuning scripts, ``for phase, loader in zip(["train", "val"], [train_loader,
val_loader])`` (or ``for loader in [a, b]``, ``for phase, loader in [("train", a), ("val", b)]``,
or ``loader = {"train": a, "val": b}[phase]`` in a loop over the phases), iterates each element
in turn. When the training step sits under ``if phase == "train":``, only the element paired
with ``"train"`` trains: the others are evaluation and stay whole. Found by
the roles (module-level loops) and by the training loops (a loader handed to a function), so the
lint and the converter prepare the same loaders.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

#: How many bindings deep a name is followed (``tepoch`` -> ``loader`` -> ``train_loader``).
MAX_HOPS = 4


@dataclass(frozen=True)
class Held:
    """An expression a name stands for; ``phase``/``label``: the name and constant it is paired with."""

    expr: ast.expr
    phase: str | None = None
    label: object = None


def trained_elements(
    scope: Sequence[ast.AST],
    name: str,
    loop: ast.AST,
    walk: Callable[[Sequence[ast.AST]], Iterator[ast.AST]],
    iterated: Callable[[ast.expr], list[ast.expr]],
) -> list[ast.expr]:
    """What ``name``, iterated by ``loop`` in ``scope``, stands for, less the phase-loop
    elements whose phase the loop's training step is not taken in. ``walk`` runs over the nodes
    of a scope (not nested ones); ``iterated`` gives the names a ``for`` header iterates."""
    phases = _training_phases(loop, walk)
    return [
        held.expr
        for held in _held_by(scope, name, walk, iterated, 0)
        if held.phase is None or held.phase not in phases or held.label in phases[held.phase]
    ]


def _held_by(scope, name: str, walk, iterated, hops: int) -> list[Held]:
    if hops > MAX_HOPS:
        return []
    found: list[Held] = []
    for node in walk(scope):
        if isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                bound = item.optional_vars
                if isinstance(bound, ast.Name) and bound.id == name and isinstance(item.context_expr, ast.Call):
                    found += [Held(e) for e in iterated(item.context_expr)]
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            found += _elements(node.target, node.iter, name)
        elif isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            found += _picked(node.value)
    for held in list(found):
        if isinstance(held.expr, ast.Name) and held.expr.id != name:
            deeper = _held_by(scope, held.expr.id, walk, iterated, hops + 1)
            found += [Held(d.expr, d.phase or held.phase, d.label if d.phase else held.label) for d in deeper]
    return found


def _elements(target: ast.expr, values: ast.expr, name: str) -> list[Held]:
    """What ``for target in values`` binds ``name`` to, for a display of values, ``zip`` of
    displays (paired with a display of constants beside it), or a display of tuple displays."""
    if isinstance(target, ast.Name):
        if target.id == name and isinstance(values, (ast.List, ast.Tuple)):
            return [Held(e) for e in values.elts if not isinstance(e, ast.Starred)]
        return []
    if not isinstance(target, ast.Tuple) or not all(isinstance(t, ast.Name) for t in target.elts):
        return []
    names = [t.id for t in target.elts if isinstance(t, ast.Name)]
    if name not in names:
        return []
    index = names.index(name)
    if _is_zip(values) and isinstance(values, ast.Call) and len(values.args) == len(names):
        columns = [a.elts if isinstance(a, (ast.List, ast.Tuple)) else None for a in values.args]
        rows = list(zip(*columns)) if all(c is not None for c in columns) else []
        if not rows and columns[index] is not None:
            return [Held(e) for e in columns[index] or []]
    elif isinstance(values, (ast.List, ast.Tuple)):
        rows = [row.elts for row in values.elts if isinstance(row, ast.Tuple) and len(row.elts) == len(names)]
    else:
        return []
    found = []
    for row in rows:
        element = row[index]
        if isinstance(element, ast.Starred):
            continue
        labels = [(names[i], v.value) for i, v in enumerate(row) if i != index and isinstance(v, ast.Constant)]
        found.append(Held(element, *labels[0]) if len(labels) == 1 else Held(element))
    return found


def _picked(value: ast.expr) -> list[Held]:
    """``{"train": a, "val": b}[phase]``: each value of a dict display with constant keys, paired
    with its key, picked by the name subscripting it. The display is built where the line runs,
    so after prepare() it holds the prepared loaders (unlike a dict built once before)."""
    if not (
        isinstance(value, ast.Subscript) and isinstance(value.value, ast.Dict) and isinstance(value.slice, ast.Name)
    ):
        return []
    phase = value.slice.id
    return [
        Held(v, phase, k.value) if isinstance(k, ast.Constant) else Held(v)
        for k, v in zip(value.value.keys, value.value.values)
        if k is not None
    ]


def _is_zip(node: ast.expr) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "zip"


def _training_phases(loop: ast.AST, walk) -> dict[str, set[object]]:
    """``{"phase": {"train"}}`` when the loop's ``.backward(...)`` runs under ``if phase == "train":``."""
    phases: dict[str, set[object]] = {}
    for node in walk(getattr(loop, "body", [])):
        if not isinstance(node, ast.If) or not _has_backward(node.body, walk):
            continue
        test = node.test
        if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq):
            left, right = test.left, test.comparators[0]
            if isinstance(right, ast.Name) and isinstance(left, ast.Constant):
                left, right = right, left
            if isinstance(left, ast.Name) and isinstance(right, ast.Constant):
                phases.setdefault(left.id, set()).add(right.value)
    return phases


def _has_backward(body: Sequence[ast.AST], walk) -> bool:
    return any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "backward" for n in walk(body)
    )
