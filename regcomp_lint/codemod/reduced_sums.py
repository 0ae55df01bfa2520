"""Epoch sums an early stop reads, gathered across processes once the batch loop is over.

A one-process script that stops on its training loss (survey 21c siamese_hw:
``running_loss += loss.item()`` in the batch loop, ``losses.append(running_loss /
len(train_loader))``, ``break`` when the last three rose; survey 21e galaxy_diff: patience on
``epoch_loss / len(dataloader)``) sums over every batch of the epoch. Converted, each process
sums only its own share of the prepared loader: the processes stop at different epochs and the
one that goes on waits in its next backward for ever (measured: "Connection closed by peer").
The processes' sums add up to the one-process sum, so the conversion adds them right after the
batch loop, ``S = sum(gather_object([S]))``: ``gather_object`` hands every process the Python
numbers of all (exact; on one process it returns its argument, so ``S`` keeps its value and
type), and every process then reads the same value and stops at the same epoch. A count the
mean divides by is gathered alike; ``len(<prepared loader>)`` counts one process's batches, so
it is multiplied by ``accelerator.num_processes`` (``len(loader.dataset)`` counts every sample).

Only a sum the conversion can follow exactly: reset to a number in the epoch loop before the
batch loop, ``S += <number>`` (``.item()``, a size) in that loop's own statements (a prepared
loader's loop that runs the step), read inside it only by a call on a line of its own (a
print, a progress bar), and divided afterwards only by a number, a length or another such sum.
Anything else (survey 21c moco_pp3's running mean, tested inside the batch loop) stays refused,
the refusal saying which of these it is not.

The most common real style sums in a function of its own, ``def train_one_epoch(model, loader,
optimizer): ... running += loss.item() ... return running / len(loader)``, and its caller stops
(patience, a list of losses) on what it returns. The same checks hold with the function in place of
the epoch loop (:func:`returned_sums`): the sum is reset in the function before its one batch
loop, and the loader that loop iterates is a parameter every call hands a prepared loader; the
gather then goes right after that batch loop, before the ``return``, and the caller reads the
one-process value whatever it does with it (the ending reads it through the function's return,
:meth:`~regcomp_lint.codemod.per_process.PerProcess._returns_alike`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import libcst as cst

from regcomp_lint.codemod.builders import expression, statement
from regcomp_lint.codemod.tree import (
    Tree,
    argument_for,
    code,
    dotted,
    find_all,
    find_own,
    header,
    key_of,
    parameter_names,
    read_keys,
)
from regcomp_lint.knowledge.accelerate_api import GATHER_OBJECT_IMPORT

if TYPE_CHECKING:
    from regcomp_lint.codemod.plain import PlainPlanner
    from regcomp_lint.codemod.roles import CallGraph

#: Where an epoch's sum is reset and read: the epoch loop, or the function that returns it.
Scope = cst.For | cst.While | cst.FunctionDef

#: The statements that give a name a value (as ``per_process.ASSIGNMENTS``).
_ASSIGNMENTS = (cst.Assign, cst.AugAssign, cst.AnnAssign)
#: What a term of a sum is a number by: ``loss.item()``, ``x.size(0)``, ``len(y)``, ``float(t)``.
_NUMBER_METHODS = frozenset({"item", "size", "numel"})
_NUMBER_FUNCTIONS = frozenset({"float", "int", "len"})
#: Statements of a loop that are its own (a ``break`` of a nested loop ends that one).
_OWN = (cst.For, cst.While, cst.FunctionDef, cst.ClassDef, cst.Lambda)
#: What a ``return`` of a function's own is not inside.
_DEFS = (cst.FunctionDef, cst.ClassDef, cst.Lambda)
#: What a sum is reset to.
_NUMBERS = (cst.Integer, cst.Float)


@dataclass(frozen=True)
class EpochSum:
    """``name``, summed over one process's batches in ``batch_loop`` of ``epoch_loop`` (or of the
    function that returns it)."""

    name: str
    epoch_loop: Scope
    batch_loop: cst.For
    additions: tuple[cst.AugAssign, ...]
    #: the line of its first ``+=`` (sums are gathered in this order)
    line: int
    #: ``len(<prepared loader>)`` calls the sum is divided by: one process's batches
    lengths: tuple[cst.Call, ...] = ()
    #: other sums of the same loop it is divided by (gathered with it)
    counts: tuple[str, ...] = ()
    #: what reads it across processes, for the note: ``"stop"``, ``"scheduler"``, ``"save"``
    readers: frozenset[str] = field(default=frozenset(), compare=False)


@dataclass
class EpochSums:
    """The sums of an epoch loop the conversion can gather, and why the others cannot be."""

    sums: dict[str, EpochSum] = field(default_factory=dict)
    why_not: dict[str, str] = field(default_factory=dict)

    def with_counts(self, names: set[str]) -> list[EpochSum]:
        """The sums named and those they are divided by, in source order."""
        found = set(names)
        while True:
            more = {c for n in found for c in self.sums[n].counts} - found
            if not more:
                break
            found |= more
        return sorted((self.sums[n] for n in found), key=lambda s: s.line)


def returned_sums(
    tree: Tree, graph: CallGraph, function: cst.FunctionDef, step: cst.CSTNode, sharded: frozenset[str]
) -> EpochSums:
    """:func:`epoch_sums` of ``function`` (``train_one_epoch``), whose caller may stop on what it
    returns; a parameter counts as a prepared loader where every call hands it one. Why a sum
    the function returns cannot be gathered is told under ``"<function>()"`` (what the caller's
    stop calls), not under the function's own names."""
    calls = [call for _, call in graph.callers_of(function)]
    params = parameter_names(function, keyword_only=False)
    handed = {p for p in params if calls and all(_hands(argument_for(tree, function, c, p), sharded) for c in calls)}
    found = epoch_sums(tree, function, step, frozenset((sharded - set(params)) | handed))
    returned = {n for ret in find_own(function.body, cst.Return, _DEFS) if ret.value for n in read_keys(ret.value)}
    name = function.name.value
    whys = [f"{name}() returns {n}, {_which(why)}" for n, why in found.why_not.items() if n in returned]
    return EpochSums(found.sums, {f"{name}()": "; ".join(whys)} if whys else {})


def _hands(argument: cst.BaseExpression | None, sharded: frozenset[str]) -> bool:
    return argument is not None and key_of(argument) in sharded


def _which(why: str) -> str:
    """``it is ...`` as ``which is ...``, ``its batch loop ...`` as ``whose batch loop ...``."""
    return f"whose {why[4:]}" if why.startswith("its ") else f"which {why[3:]}"


def epoch_sums(tree: Tree, loop: Scope, step: cst.CSTNode, sharded: frozenset[str]) -> EpochSums:
    """The sums of ``loop`` taken in the one loop between it and ``step`` (a prepared loader's)."""
    result = EpochSums()
    between = []
    for anc in tree.ancestors(step):
        if anc is loop:
            break
        if isinstance(anc, (cst.For, cst.While, cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            between.append(anc)
    else:
        return result
    if len(between) != 1 or not isinstance(between[0], cst.For):
        return result
    batch = between[0]
    writes = find_all(loop.body, _ASSIGNMENTS, enter_functions=False)
    names = dict.fromkeys(n for w in writes if tree.contains(batch.body, w) for n in _values_of(w))
    for name in names:
        mine = [w for w in writes if name in _values_of(w)]
        found = _sum_of(tree, loop, batch, name, mine, sharded)
        if isinstance(found, str):
            result.why_not[name] = found
        else:
            result.sums[name] = found
    source = _loader_of(tree, loop, batch.iter)
    stops = find_own(batch.body, (cst.Break, cst.Return), _OWN)
    if source not in sharded or stops:  # each process runs whole data, draws its own batches, or stops
        why = (
            f"it is summed in the loop at line {tree.line(batch)} (`{header(batch)}`), which iterates no loader the "
            "conversion prepares"
            if source not in sharded
            else f"its batch loop (line {tree.line(batch)}) can end before the loader does (line {tree.line(stops[0])})"
        )
        for name in list(result.sums):
            del result.sums[name]
            result.why_not[name] = why
    changed = True
    while changed:  # a sum divided by a count that is none cannot be gathered either
        changed = False
        for name, found in list(result.sums.items()):
            bad = next((c for c in found.counts if c not in result.sums), None)
            if bad is not None:
                del result.sums[name]
                why = result.why_not.get(bad, "it is no sum of the batch loop")
                result.why_not[name] = f"it is divided by {bad}, {_which(why)}"
                changed = True
    return result


def _sum_of(
    tree: Tree,
    loop: Scope,
    batch: cst.For,
    name: str,
    writes: Sequence[cst.CSTNode],
    sharded: frozenset[str],
) -> EpochSum | str:
    """``name``'s sum in ``batch``, or why it is none the conversion can gather (``it is ...``)."""
    start, end = tree.line(batch), _last_line(tree, batch)
    additions: list[cst.AugAssign] = []
    resets = []
    divisions: list[cst.BaseExpression] = []
    # A read inside the batch loop rules out any gather after it, whatever form the value has
    # (moco_pp3's running mean equals sum / count at the epoch's end): told first, a test
    # (``if best_loss > train_loss_moco:``, what decides there) before any other read.
    inside = [w for w in writes if tree.contains(batch.body, w)]
    early = [
        (node, statement)
        for node in _read_nodes(batch.body, name)
        if not any(tree.contains(w, node) for w in inside) and not _a_call_of_its_own(statement := tree.line_of(node))
    ]
    if early:
        node, statement = next(((n, s) for n, s in early if isinstance(s, (cst.If, cst.While))), early[0])
        return (
            f"it is read inside the batch loop at line {tree.line(node)} (`{header(statement)}`), before every "
            "process's share is in"
        )
    for write in writes:
        line = tree.line(write)
        first = code(write).strip().splitlines()[0]
        if tree.contains(batch.body, write):
            if not (isinstance(write, cst.AugAssign) and isinstance(write.operator, cst.AddAssign)):
                return f"it is set anew in the batch loop (line {line}), not summed (`name += <number>`)"
            if not _is_number(write.value) or name in read_keys(write.value):
                return f"it adds `{code(write.value).strip()}`, not a number (`.item()`, a size), at line {line}"
            guard = _guard(tree, batch, write)
            if guard is not None:
                return f"it is added under `{header(guard)}` (line {tree.line(guard)}), not once per batch"
            additions.append(write)
        elif line < start and isinstance(write, cst.Assign) and isinstance(_values_of(write)[name], _NUMBERS):
            resets.append(write)
        elif line > end and isinstance(write, cst.AugAssign) and isinstance(write.operator, cst.DivideAssign):
            divisions.append(write.value)
        else:
            return f"it is also set by `{first}` (line {line})"
    if not resets:
        each = (
            f"call of {loop.name.value}() (line {tree.line(loop)})"
            if isinstance(loop, cst.FunctionDef)
            else f"pass of the loop at line {tree.line(loop)}"
        )
        return f"it is not reset before the batch loop (line {start}) in each {each}"
    for division in find_all(loop.body, cst.BinaryOperation, enter_functions=False):
        if isinstance(division.operator, cst.Divide) and tree.line(division) > end and name in read_keys(division.left):
            divisions.append(division.right)
    lengths: list[cst.Call] = []
    counts: list[str] = []
    for divisor in divisions:
        kind = _divisor(divisor, sharded)
        if kind == "length":
            assert isinstance(divisor, cst.Call)
            lengths.append(divisor)
        elif kind == "count":
            counts.append(code(divisor).strip())
        elif kind is None:
            return (
                f"it is divided by `{code(divisor).strip()}` (line {tree.line(divisor)}), which the conversion cannot "
                "tell counts every process's batches"
            )
    return EpochSum(
        name, loop, batch, tuple(additions), tree.line(additions[0]), tuple(lengths), tuple(dict.fromkeys(counts))
    )


def _divisor(divisor: cst.BaseExpression, sharded: frozenset[str]) -> str | None:
    """``"same"`` (a number, a length the conversion leaves as it was), ``"length"``
    (``len(<prepared loader>)``), ``"count"`` (a name: another sum, checked by the caller), or None."""
    if isinstance(divisor, (cst.Integer, cst.Float)):
        return "same"
    if isinstance(divisor, cst.Name):
        return "count"
    if isinstance(divisor, cst.Call) and isinstance(divisor.func, cst.Name) and divisor.func.value == "len":
        if len(divisor.args) != 1:
            return None
        key = dotted(divisor.args[0].value)
        if key is None:
            return None
        return "length" if key in sharded else "same"
    return None


def _is_number(value: cst.BaseExpression) -> bool:
    """``loss.item()``, ``loss.item() * x.size(0)``, ``1``: a Python number, not a tensor."""
    if isinstance(value, (cst.Integer, cst.Float)):
        return True
    for call in find_all(value, cst.Call):
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value in _NUMBER_METHODS:
            return True
        if isinstance(func, cst.Name) and func.value in _NUMBER_FUNCTIONS:
            return True
    return any(
        isinstance(s.value, cst.Attribute) and s.value.attr.value == "shape" for s in find_all(value, cst.Subscript)
    )


def _guard(tree: Tree, batch: cst.For, write: cst.CSTNode) -> cst.CSTNode | None:
    """The compound statement between ``write`` and ``batch`` that may skip it (``if``, ``try``, a loop)."""
    for anc in tree.ancestors(write):
        if anc is batch.body:
            return None
        if isinstance(anc, cst.BaseCompoundStatement) and not isinstance(anc, cst.With):
            return anc
    return None


def _read_nodes(root: cst.CSTNode, name: str) -> list[cst.Name]:
    """The ``Name`` nodes under ``root`` that read ``name`` (not attribute or keyword names)."""
    skip = {id(a.attr) for a in find_all(root, cst.Attribute)}
    skip |= {id(a.keyword) for a in find_all(root, cst.Arg) if a.keyword is not None}
    return [n for n in find_all(root, cst.Name) if n.value == name and id(n) not in skip]


def _a_call_of_its_own(line: cst.CSTNode) -> bool:
    """``print(...)``, ``bar.set_postfix(loss=s)``: a line whose value nothing reads."""
    return isinstance(line, cst.SimpleStatementLine) and all(
        isinstance(s, cst.Expr) and isinstance(s.value, cst.Call) for s in line.body
    )


def _last_line(tree: Tree, node: cst.CSTNode) -> int:
    return max([tree.line(n) for n in find_all(node, cst.SimpleStatementLine)] or [tree.line(node)])


def _values_of(write: cst.CSTNode) -> dict[str, cst.BaseExpression | None]:
    """The plain names an assignment binds and what it gives each, where it can tell:
    ``a, b = 0.0, 0`` gives ``a`` 0.0; ``x, y = batch`` gives both None."""
    if isinstance(write, cst.Assign) and len(write.targets) == 1:
        target, value = write.targets[0].target, write.value
        if isinstance(target, cst.Tuple):
            names = [e.value.value if isinstance(e.value, cst.Name) else None for e in target.elements]
            values = (
                [e.value for e in value.elements]
                if isinstance(value, cst.Tuple) and len(value.elements) == len(names)
                else [None] * len(names)
            )
            return {n: v for n, v in zip(names, values) if n is not None}
    name = _target(write)
    return {} if name is None else {name: getattr(write, "value", None)}


def _target(write: cst.CSTNode) -> str | None:
    """The one plain name an assignment binds, ``+=`` and annotated ones included (``running +=
    x``): unlike ``tree.single_target``, which reads ``=`` alone, with any key (``self.x``)."""
    if isinstance(write, cst.Assign):
        targets = [t.target for t in write.targets]
        return targets[0].value if len(targets) == 1 and isinstance(targets[0], cst.Name) else None
    target = getattr(write, "target", None)
    return target.value if isinstance(target, cst.Name) else None


def _loader_of(tree: Tree, loop: Scope, source: cst.BaseExpression) -> str | None:
    """The loader a batch loop iterates: through ``enumerate(...)``/``tqdm(...)``, and through a
    name the epoch loop binds to such a call (``progress_bar = tqdm(dataloader)``)."""
    for _ in range(3):
        while isinstance(source, cst.Call) and source.args and not source.args[0].star:
            source = source.args[0].value
        if not isinstance(source, cst.Name):
            return key_of(source)
        bound = [
            w.value
            for w in find_all(loop.body, cst.Assign, enter_functions=False)
            if _target(w) == source.value and isinstance(w.value, cst.Call)
        ]
        if len(bound) != 1:
            return source.value
        source = bound[0]
    return None


def _gathering(name: str) -> str:
    return f"{name} = sum(gather_object([{name}]))"


def gather_sums(planner: PlainPlanner, found: list[EpochSum]) -> None:
    """Gather each sum after its batch loop, count ``len(<prepared loader>)`` on every process,
    and say so in a note."""
    tree = planner.tree
    acc = planner.acc_key
    by_loop: dict[cst.For, list[EpochSum]] = {}
    for one in found:
        by_loop.setdefault(one.batch_loop, []).append(one)
    for batch, sums in by_loop.items():
        block = tree.block_of(batch)
        index = tree.statement_in(block, batch) if block is not None else None
        if block is None or index is None:
            continue
        gathered = [statement(_gathering(s.name), planner.module) for s in sums]
        # with the lines below it: the blank line after the batch loop stays above the sum
        planner.edits.add_statements(block, index + 1, gathered, after=index + 1 >= len(block.body))
        planner.uses.append(batch)
        at: dict[str, list[str]] = {}
        for length in (length for one in sums for length in one.lengths):
            planner.edits.on(length, lambda u: expression(f"({code(u).strip()} * {acc}.num_processes)", planner.module))
            planner.uses.append(tree.line_of(length))
            at.setdefault(f"len({dotted(length.args[0].value)})", []).append(str(tree.line(length)))
        counted = "".join(
            f"; {length} (line{'s' if len(rows) > 1 else ''} {', '.join(rows)}) counts one process's batches: "
            f"multiplied by {acc}.num_processes"
            for length, rows in at.items()
        )
        names = " and ".join(f"{one.name} (line {one.line})" for one in sums)
        scope = sums[0].epoch_loop
        readers = {reader for one in sums for reader in one.readers} or {"stop"}
        returned = isinstance(scope, cst.FunctionDef)
        if isinstance(scope, cst.FunctionDef):
            ends = f"{scope.name.value}() (line {tree.line(scope)}) returns"
        else:
            ends = f"the loop at line {tree.line(scope)} {'ends on' if 'stop' in readers else 'reads'}"
        decides = [
            phrase
            for reader, phrase in (
                ("stop", "the loop that calls it stops at the same epoch" if returned else "stops at the same epoch"),
                ("scheduler", "steps its scheduler on the same value"),
                ("save", "saves at the same epochs"),
            )
            if reader in readers
        ]
        planner.notes.append(
            f"{ends} {names}, summed over each process's own batches "
            f"in the loop at line {tree.line(batch)}: {'; '.join(f'`{_gathering(one.name)}`' for one in sums)} after "
            f"that loop {'adds' if len(sums) == 1 else 'add'} the processes' sums, so every process reads the "
            f"one-process value and {' and '.join(decides)} (up to float rounding and the batches even_batches "
            f"repeats){counted}"
        )
    if by_loop:
        planner.imports.append(GATHER_OBJECT_IMPORT)
