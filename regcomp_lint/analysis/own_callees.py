"""Which function of this file a call runs: one rule for the lint's analyses and the converter.

Four readers ask it: whether a call's result is never a loader (``codemod.never_loaders``:
``sampler.sample()``, a method of the script's own class), whether a factory builds the optimizer
(``analysis.optimizer_sources``: ``self._build_optimizer()``), whether an evaluation runs in eval
mode (``codemod.synced_values``: ``valid_one_epoch(...)``) and whether a prepared model's own
method writes a checkpoint (``codemod.model_methods``: ``model_to_save.save_checkpoint(path)``).
Each finds the names its own way (the bindings, a prepared model's key) and on its own tree
(``ast`` for the lint, libcst for the converter), and each had its own copy of the pick; the pick
is kept here once so that they cannot drift apart:

- a call by name runs the one function of that name among those the reader can see (none when
  there are several: which one runs depends on the order the script takes);
- a method call runs the method of that name of the receiver's class or, when the class does not
  define it, of its first base class the file defines, up to :data:`MAX_BASES` classes up (a
  single-inheritance reading of Python's lookup: the other bases are not searched).

A tree is read through a :class:`Spelling`: :data:`AST` here, the converter's libcst one is
:data:`regcomp_lint.codemod.tree.CST` (analysis/ does not import libcst).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

#: How many base classes of the file a method is looked for in.
MAX_BASES = 3

F = TypeVar("F")
C = TypeVar("C")


@dataclass(frozen=True)
class Spelling(Generic[F, C]):
    """How one kind of tree spells a class: the functions its body defines directly (in source
    order), a function's name, and the names of its bases written as plain names."""

    methods: Callable[[C], Iterable[F]]
    name: Callable[[F], str]
    base_names: Callable[[C], Iterable[str]]


def function_called(candidates: Sequence[F]) -> F | None:
    """The function a call by name runs, of the ``candidates`` of that name: the one, or None."""
    return candidates[0] if len(candidates) == 1 else None


def method_called(spelling: Spelling[F, C], cls: C | None, name: str, classes: Mapping[str, C]) -> F | None:
    """The method ``name`` a call on an instance of ``cls`` runs: ``cls``'s own, else that of its
    first base in ``classes`` (the file's classes by name), up to :data:`MAX_BASES` classes up."""
    for _ in range(MAX_BASES + 1):
        if cls is None:
            return None
        method = next((m for m in spelling.methods(cls) if spelling.name(m) == name), None)
        if method is not None:
            return method
        cls = next((classes[b] for b in spelling.base_names(cls) if b in classes), None)
    return None


#: The lint's spelling (``async def`` methods are not followed).
AST: Spelling[ast.FunctionDef, ast.ClassDef] = Spelling(
    methods=lambda cls: [m for m in cls.body if isinstance(m, ast.FunctionDef)],
    name=lambda function: function.name,
    base_names=lambda cls: [b.id for b in cls.bases if isinstance(b, ast.Name)],
)
