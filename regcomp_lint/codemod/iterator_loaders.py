"""A loader the script reads with ``next(loader)``: its own iterator, which prepare() would drop.

enflows' plane-data trainer (survey23h, enflows_rings) builds nsf's ``InfiniteLoader``, a
``DataLoader`` subclass whose ``__iter__`` returns itself and whose ``__next__`` restarts the
data when it runs out, and reads it with ``x = next(train_loader)``. A plain ``DataLoader`` is no
iterator, so ``next(loader)`` in a script that runs means the loader's class made it one.
``prepare()`` rebuilds any ``DataLoader`` as a ``DataLoaderShard`` from its dataset and sampler:
the subclass's ``__next__`` is gone, and the converted script raised ``TypeError:
'DataLoaderShard' object is not an iterator`` at its first step (replica, 1 process). Leaving the
loader unprepared would give every process the same batches; the fixer refuses instead, naming
the call.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from regcomp_lint.codemod.iterator_calls import iterator_starts, next_calls
from regcomp_lint.codemod.settings import Refusal
from regcomp_lint.codemod.tree import key_of

if TYPE_CHECKING:
    from regcomp_lint.codemod.tree import Tree


def refuse_next_on_loaders(tree: Tree, loaders: list[str]) -> None:
    """Refuse when one of the ``loaders`` to prepare is read with ``next(loader)`` itself (not
    after ``loader = iter(loader)``, which makes the name an iterator of the prepared loader)."""
    rebound = {it for it, _, _ in iterator_starts(tree, tree.module)}
    for call in next_calls(tree, tree.module):
        loader = key_of(call.args[0].value)
        if loader in loaders and loader not in rebound:
            raise Refusal(
                f"next({loader}) at line {tree.line(call)} reads the loader as its own iterator (a DataLoader "
                "subclass with __next__, such as an infinite loader): prepare() would rebuild it as a "
                "DataLoaderShard, which is no iterator (TypeError at the first step) and stops after one pass; "
                "iterate it with `for batch in loader` or convert by hand"
            )
