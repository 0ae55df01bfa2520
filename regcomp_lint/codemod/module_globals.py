"""Training objects a helper hands to the training code through module globals, for a refusal.

NNI's CIFAR trainer builds its loaders, model, optimizer and scheduler in ``prepare(args)`` under
``global net`` / ``global optimizer`` and ``train(epoch)`` reads them through its own ``global``
lines. The bindings follow those globals (analysis/bindings.py), so the optimizer is found where
it is built. When the optimizer and all its models are such globals, the conversion prepares them
in that helper, whose assignments rebind the globals, and makes the accelerator a module global as
well (``global accelerator`` before it is made), so every function reads the prepared objects and
the accelerator as the original read its own. Replica (SAM with two backward passes per step,
CosineAnnealingWarmRestarts stepped by fractional epochs, 3 epochs of 4 batches): python identical
to the original; accelerate launch and torchrun on 2 processes the same LR at all 12 steps and the
same weights on both ranks (without shuffling, the mean of the two ranks' losses is the original's
to 1.5e-7, weight sum -4.1957490 against -4.1957478). Only some of them globals: refused, naming them.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

import libcst as cst

from regcomp_lint.codemod.rewrites import function_name
from regcomp_lint.codemod.tree import Function, Tree, find_all


def declared_global(function: Function) -> dict[str, cst.Global]:
    """The names ``function`` declares ``global`` (its own statements, not nested defs'), each with
    its first declaration."""
    found: dict[str, cst.Global] = {}
    for statement in find_all(function, cst.Global, enter_functions=False):
        for item in statement.names:
            found.setdefault(item.name.value, statement)
    return found


def handed_through_globals(
    tree: Tree, scope: Function, keys: Collection[str], training: Iterable[Function], *, every: bool = False
) -> str:
    """``keys`` (the optimizer and its models) that ``scope`` binds as module globals and the
    training functions that declare them ``global`` too, said for a refusal; "" when none (with
    ``every``: unless all of ``keys`` are)."""
    if not isinstance(scope, cst.FunctionDef):
        return ""
    declared = declared_global(scope)
    names = [key for key in keys if key in declared]
    if not names or (every and len(names) < len(keys)):
        return ""
    readers = [
        function_name(function)
        for function in tree.in_source_order(training)
        if isinstance(function, cst.FunctionDef)
        and function is not scope
        and set(names) & set(declared_global(function))
    ]
    if not readers:
        return ""
    first = min((declared[name] for name in names), key=tree.line)
    return (
        f"; it hands {', '.join(names)} to {', '.join(readers)} through module globals (global at line "
        f"{tree.line(first)}): regcomp-fix prepares them only in the function that runs the loop"
    )
