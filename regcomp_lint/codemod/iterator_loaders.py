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

import libcst as cst

from regcomp_lint.codemod.settings import Refusal
from regcomp_lint.codemod.tree import Tree, find_all, key_of


def refuse_next_on_loaders(tree: Tree, loaders: list[str]) -> None:
    """Refuse when one of the ``loaders`` to prepare is read with ``next(loader)`` itself (not
    after ``loader = iter(loader)``, which makes the name an iterator of the prepared loader)."""
    rebound = {
        key_of(target.target)
        for assign in find_all(tree.module, cst.Assign)
        if isinstance(assign.value, cst.Call)
        and isinstance(assign.value.func, cst.Name)
        and assign.value.func.value == "iter"
        for target in assign.targets
    }
    for call in find_all(tree.module, cst.Call):
        if not (isinstance(call.func, cst.Name) and call.func.value == "next") or not call.args:
            continue
        loader = key_of(call.args[0].value)
        if call.args[0].keyword is None and loader in loaders and loader not in rebound:
            raise Refusal(
                f"next({loader}) at line {tree.line(call)} reads the loader as its own iterator (a DataLoader "
                "subclass with __next__, such as an infinite loader): prepare() would rebuild it as a "
                "DataLoaderShard, which is no iterator (TypeError at the first step) and stops after one pass; "
                "iterate it with `for batch in loader` or convert by hand"
            )
