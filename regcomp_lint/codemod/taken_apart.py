"""A helper's result held by a name and taken apart beside it (issue 12): ``parts = setup(cfg)``
then ``model = parts["model"]``, ``optimizer = parts[1]``, ``model, optimizer = parts`` or
``model, optimizer = parts["model"], parts["optimizer"]``.

The converter prepares the pieces, not the holder: each piece the caller takes out is bound to a
key, and ``accelerator.prepare(...)`` rebinds those keys after the last statement that takes one
out. That is only right when nothing else reads the holder: a later ``parts["optimizer"].step()``
or a ``log_lr(parts)`` would reach the unprepared objects. Such reads are kept as ``stray`` so the
converter can refuse, naming them. Which piece is an optimizer (and of which model) or a scheduler
is not decided here: the lint's roles read the helper's returned dict or tuple
(:meth:`~regcomp_lint.analysis.optimizer_sources.OptimizerSources.element_sources`,
:meth:`~regcomp_lint.analysis.training_roles.TrainingRoles.origin`).
"""

from __future__ import annotations

import ast
import weakref
from dataclasses import dataclass, field

import libcst as cst

from regcomp_lint.codemod.lint_view import lint_view
from regcomp_lint.codemod.roles import bindings, unpacked_keys
from regcomp_lint.codemod.tree import Function, Tree, code, find_all, single_target


@dataclass
class Piece:
    """One slot of the holder, bound to ``key`` by ``stmt``."""

    key: str
    stmt: cst.Assign


@dataclass
class Holder:
    """``name = helper(...)`` whose result the function takes apart."""

    name: str
    bound: cst.Assign
    call: ast.Call  # the helper call, as the lint's roles see it
    pieces: dict[int | str, Piece] = field(default_factory=dict)
    stray: list[cst.CSTNode] = field(default_factory=list)  # statements that read the holder otherwise


def held_results(tree: Tree, function: Function) -> list[Holder]:
    """Every name ``function`` binds once to a call and takes apart (constant subscripts or
    unpacking); ``stray`` lists the statements that read it in any other way. Worked out once
    per function of a tree (the planner asks from several places)."""
    known = _HELD.get(tree)
    if known is None:
        known = _HELD[tree] = {}
    found = known.get(function)
    if found is None:
        found = known[function] = _held_results(tree, function)
    return found


_HELD: weakref.WeakKeyDictionary[Tree, dict[Function, list[Holder]]] = weakref.WeakKeyDictionary()


def _held_results(tree: Tree, function: Function) -> list[Holder]:
    view = lint_view(tree)
    candidates: dict[str, cst.Assign] = {}
    for assign in find_all(function, cst.Assign, enter_functions=False):
        target = single_target(assign)
        if target is not None and "." not in target[0] and isinstance(assign.value, cst.Call):
            candidates[target[0]] = assign
    if not candidates:
        return []
    reads: dict[str, list[cst.Name]] = {}
    for node in find_all(function, cst.Name):  # one walk for all the candidates
        if node.value in candidates:
            reads.setdefault(node.value, []).append(node)
    found: list[Holder] = []
    for name, assign in candidates.items():
        taken = [r for r in reads.get(name, []) if _takes_apart(tree, r)]
        if not taken:
            continue
        call = view.expression_at(assign.value)
        if not isinstance(call, ast.Call) or len(bindings(function, name)) != 1:
            continue
        holder = Holder(name, assign, call)
        for read in reads[name]:
            if _is_target(tree, read, assign):
                continue
            if not _take_apart(tree, holder, read):
                holder.stray.append(tree.line_of(read))
        if holder.pieces:
            found.append(holder)
    return found


def _takes_apart(tree: Tree, read: cst.Name) -> bool:
    """A cheap first look: ``read`` is subscripted or is the value of an assignment."""
    parent = tree.parent(read)
    kind = type(parent)  # (``type(x) is``: see tree.key_of)
    return (kind is cst.Subscript or kind is cst.Assign) and parent.value is read  # type: ignore[union-attr]


def stray_refusal(tree: Tree, holder: Holder) -> str:
    """Why a holder with stray reads cannot be converted: the holder, its line, and the first
    statement that reads it otherwise."""
    stray = holder.stray[0]
    return (
        f"{holder.name} (bound at line {tree.line(holder.bound)}) holds the model and optimizer "
        f"{code(holder.bound.value).strip()} returns, and line {tree.line(stray)} reads it other than to take them "
        f"apart ({code(stray).strip().splitlines()[0]!r}): prepare() rebinds the pieces, not {holder.name}, so that line would reach "
        f"the unprepared objects; read the pieces there (model, optimizer, ...) instead, or convert by hand"
    )


def _is_target(tree: Tree, read: cst.Name, assign: cst.Assign) -> bool:
    return any(t.target is read for t in assign.targets)


def _take_apart(tree: Tree, holder: Holder, read: cst.Name) -> bool:
    """Record the pieces the statement around ``read`` takes out; False when it reads the holder
    in any other way."""
    parent = tree.parent(read)
    if isinstance(parent, cst.Assign) and parent.value is read:  # `model, optimizer = parts`
        keys = unpacked_keys(parent)
        if keys is None or any(k is None for k in keys):
            return False
        for index, key in enumerate(keys):
            assert key is not None
            holder.pieces[index] = Piece(key, parent)
        return True
    slot = _slot(parent) if isinstance(parent, cst.Subscript) and parent.value is read else None
    if slot is None:
        return False
    assert isinstance(parent, cst.Subscript)
    above = tree.parent(parent)
    if isinstance(above, cst.Assign) and above.value is parent:  # `optimizer = parts["optimizer"]`
        target = single_target(above)
        if target is None:
            return False
        holder.pieces[slot] = Piece(target[0], above)
        return True
    element = above if isinstance(above, cst.Element) else None
    display = tree.parent(element) if element is not None else None
    assign = tree.parent(display) if isinstance(display, cst.Tuple) else None
    if isinstance(assign, cst.Assign) and assign.value is display:  # `model, opt = parts["m"], parts["o"]`
        assert isinstance(display, cst.Tuple)
        keys = unpacked_keys(assign)
        position = next(i for i, e in enumerate(display.elements) if e is element)
        if keys is None or len(keys) != len(display.elements) or keys[position] is None:
            return False
        key = keys[position]
        assert key is not None
        holder.pieces[slot] = Piece(key, assign)
        return True
    return False


def _slot(subscript: cst.Subscript) -> int | str | None:
    """The constant position or key of ``x[1]`` / ``x["optimizer"]``."""
    if len(subscript.slice) != 1 or not isinstance(subscript.slice[0].slice, cst.Index):
        return None
    value = subscript.slice[0].slice.value
    if isinstance(value, cst.Integer):
        return int(value.evaluated_value)
    if isinstance(value, cst.SimpleString):
        text = value.evaluated_value
        return text if isinstance(text, str) else None
    return None


def piece_keys(tree: Tree, function: Function) -> dict[str, cst.Assign]:
    """Key -> the statement that takes it out of a holder nothing else reads."""
    return {
        piece.key: piece.stmt
        for holder in held_results(tree, function)
        if not holder.stray
        for piece in holder.pieces.values()
    }
