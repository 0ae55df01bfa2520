"""An iterator of a prepared training loader drawn a number of times the script fixes.

Survey 23c's YuNet face detector builds a DataLoader each epoch, ``batch_iterator =
iter(DataLoader(...))``, and draws from it ``epoch_size = math.ceil(len(dataset) / batch_size)``
times; ssd.pytorch starts ``batch_iterator = iter(data_loader)`` again every ``epoch_size =
len(dataset) // batch_size`` iterations. The count is the whole data's. Prepared, the loader gives
each of N processes 1/N of the batches, so ``next()`` raises StopIteration part-way through (a
replica on 2 gloo processes stopped after 5 of its 10 steps). No exact mapping: the script's count
would have to become the prepared loader's length. Refused, naming the ``next()``, where the
iterator starts and the loop that counts.

Left to convert: a ``next()`` in a ``try`` that catches StopIteration (the script starts the
iterator again, or stops), one whose loop counts ``len()`` of the prepared loader, one whose
iterator is started again under a test on that length (``if step % len(loader) == 0:``),
``next(it, default)``, and a loop whose count reads no length of the data (``range(10)`` over an
endless stream, survey 20c's LibriSpeech batches).
"""

from __future__ import annotations

import libcst as cst

from regcomp_lint.codemod.iterator_calls import iterator_starts, next_calls
from regcomp_lint.codemod.settings import Refusal
from regcomp_lint.codemod.tree import Function, Tree, code, find_all, key_of, single_target

#: What an ``except`` must catch to see the iterator run out.
_CATCHES_THE_END = ("StopIteration", "Exception", "BaseException")
#: How many assignments deep a loop's count is followed to a ``len()``.
_MAX_DEPTH = 3


def refuse_overdrawn_iterators(tree: Tree, functions: list[Function], named: list[str], inline: list[str]) -> None:
    """Refuse a ``next(it)`` of an iterator of a loader the conversion prepares (``named``:
    prepared by name; ``inline``: ``it = iter(accelerator.prepare(DataLoader(...)))``, bound to
    these names), drawn in a loop whose count is not the prepared loader's (see the module
    docstring)."""
    for function in functions:
        starts = _iterator_starts(tree, function, named, inline)
        for call in next_calls(tree, function, enter_functions=False):
            if len(call.args) != 1:
                continue
            it = key_of(call.args[0].value)
            if it is None or it not in starts:
                continue
            loop = _innermost_loop(tree, call, function)
            if loop is None or _sees_the_end(tree, call, function) or _counts_a_prepared_length(loop, named):
                continue
            if any(_under_a_length_test(tree, start, function, named) for start in starts[it]):
                continue
            header_expr = loop.iter if isinstance(loop, cst.For) else loop.test
            counts = [header_expr, *(t for start in starts[it] for t in _tests_above(tree, start, function))]
            length = next((f for c in counts if (f := _whole_length(tree, c, function, named, 0)) is not None), None)
            if length is None:
                continue  # `range(10)` over a stream: a count the script sets, not the data's length
            start = starts[it][0]
            what = "training DataLoader" if it in inline else f"loader {_iterated(start)}"
            header = code(loop.with_changes(leading_lines=())).strip().splitlines()[0]  # not a comment above it
            raise Refusal(
                f"next({it}) at line {tree.line(call)} draws from an iterator of the prepared {what} "
                f"(`{it} = iter(...)`, line {tree.line(start)}) as many times as `{header}` (line {tree.line(loop)}) "
                f"says, counted from the whole data's {code(length).strip()} (line {tree.line(length)}): on N "
                "processes each process's share holds 1/N of the batches, so next() raises StopIteration part-way "
                "through the count (a 2-process run stops at half of it); count the steps with len() of the prepared "
                "loader, catch StopIteration, or convert by hand"
            )


def _iterator_starts(
    tree: Tree, function: Function, named: list[str], inline: list[str]
) -> dict[str, list[cst.Assign]]:
    """``{it: [it = iter(loader), ...]}`` for the iterators ``function`` starts over a prepared loader."""
    starts: dict[str, list[cst.Assign]] = {}
    for key, assign, iterated in iterator_starts(tree, function, enter_functions=False):
        if key in inline or (key_of(iterated) or "") in named:
            starts.setdefault(key, []).append(assign)
    return starts


def _iterated(start: cst.Assign) -> str:
    """``loader`` of ``it = iter(loader)``."""
    assert isinstance(start.value, cst.Call)
    return code(start.value.args[0].value).strip()


def _innermost_loop(tree: Tree, node: cst.CSTNode, function: Function) -> cst.For | cst.While | None:
    for anc in tree.ancestors(node):
        if anc is function:
            return None
        if isinstance(anc, (cst.For, cst.While)):
            return anc
    return None


def _sees_the_end(tree: Tree, node: cst.CSTNode, function: Function) -> bool:
    """``node`` is in a ``try`` (its body or a handler) one of whose handlers catches StopIteration."""
    for anc in tree.ancestors(node):
        if anc is function:
            return False
        if isinstance(anc, cst.Try) and any(_catches_the_end(h) for h in anc.handlers):
            return True
    return False


def _catches_the_end(handler: cst.ExceptHandler) -> bool:
    if handler.type is None:
        return True
    names = handler.type.elements if isinstance(handler.type, cst.Tuple) else [handler.type]
    shown = [code(n.value if isinstance(n, cst.Element) else n).strip() for n in names]
    return any(name.split(".")[-1] in _CATCHES_THE_END for name in shown)


def _reads_a_prepared_length(node: cst.CSTNode, named: list[str]) -> bool:
    """``len(loader)`` of a loader prepared by name, anywhere in ``node``."""
    return any(
        isinstance(c.func, cst.Name) and c.func.value == "len" and c.args and key_of(c.args[0].value) in named
        for c in find_all(node, cst.Call)
    )


def _counts_a_prepared_length(loop: cst.For | cst.While, named: list[str]) -> bool:
    header = loop.iter if isinstance(loop, cst.For) else loop.test
    return _reads_a_prepared_length(header, named)


def _whole_length(tree: Tree, expr: cst.CSTNode, function: Function, named: list[str], depth: int) -> cst.Call | None:
    """A ``len()`` of anything but a prepared loader that ``expr`` reads, itself or through the
    names it reads (``epoch_size = math.ceil(len(dataset) / batch_size)``, ``max_iter = 3 *
    epoch_size``), bound in ``function`` or at the top of the module."""
    for call in find_all(expr, cst.Call):
        if isinstance(call.func, cst.Name) and call.func.value == "len" and call.args:
            if key_of(call.args[0].value) not in named:
                return call
    if depth >= _MAX_DEPTH:
        return None
    read = {n.value for n in find_all(expr, cst.Name)}
    places = [function] if isinstance(function, cst.Module) else [function, tree.module]
    for place in places:
        for assign in find_all(place, cst.Assign, enter_functions=False):
            target = single_target(assign)
            if target is not None and target[0] in read:
                found = _whole_length(tree, target[1], function, named, depth + 1)
                if found is not None:
                    return found
    return None


def _tests_above(tree: Tree, node: cst.CSTNode, function: Function) -> list[cst.BaseExpression]:
    """The tests of the ``if``s ``node`` sits under in ``function`` (ssd.pytorch's
    ``if iteration % epoch_size == 0:`` over ``batch_iterator = iter(data_loader)``)."""
    tests: list[cst.BaseExpression] = []
    for anc in tree.ancestors(node):
        if anc is function:
            break
        if isinstance(anc, cst.If):
            tests.append(anc.test)
    return tests


def _under_a_length_test(tree: Tree, start: cst.Assign, function: Function, named: list[str]) -> bool:
    """The iterator is started again under ``if step % len(loader) == 0:`` (the prepared length)."""
    for anc in tree.ancestors(start):
        if anc is function:
            return False
        if isinstance(anc, cst.If) and _reads_a_prepared_length(anc.test, named):
            return True
    return False
