"""Checkpoints a method of the script's own object writes, called from the code that trains.

pytorchtools' ``EarlyStopping`` (copied into countless scripts) is called once per epoch as
``early_stopping(val_loss, model)``; when the loss improves its ``save_checkpoint`` writes
``torch.save(model.state_dict(), self.path)``. Launched on several processes every process
writes that file at once, and a read-back after training (``model.load_state_dict(
torch.load("checkpoint.pt"))``) can meet a file another process is still rewriting: a replica on
2 gloo processes (64 MB state, an improvement in the last epoch) crashed on rank 1 in 1 of 3 runs
(``Cannot use weights_only=True with files saved in the legacy .tar format``: a torn file).

The call itself cannot go under ``if accelerator.is_main_process:``: it also keeps the counter
that decides the early stop every process must take. So the write inside the method goes there
instead, as ``if PartialState().is_main_process:`` (the class holds no accelerator; accelerate's
``PartialState`` is the process state the Accelerator set up), and the call counts as a
main-process write for the barrier before a later read (:func:`~regcomp_lint.codemod.
checkpoint_writes.wait_before_reading_back`). Only classes of this file are edited; a write
already under a rank test, or to a path that names the process, is left alone.

Most copies import the class (``from pytorchtools import EarlyStopping``). The fixer writes the
script only, so a write in a module beside it is named in a note (file, line, method) to guard by
hand, and the call still counts as a write for the barrier: a read-back then waits until every
process has finished writing (survey26b: it wrote from every process with no note). A class of a
project module that is not found, handed the model, gets a note that it may write from every
process.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import TYPE_CHECKING

import libcst as cst

from regcomp_lint.codemod.builders import expression, guarded
from regcomp_lint.codemod.checkpoint_writes import under_rank_test
from regcomp_lint.codemod.local_modules import FunctionNode, beside
from regcomp_lint.codemod.object_classes import class_method, constructions
from regcomp_lint.codemod.per_process import per_process_path
from regcomp_lint.codemod.tree import Function, Tree, find_all, methods_of
from regcomp_lint.knowledge.torch_api import TORCH_SAVE

if TYPE_CHECKING:
    from regcomp_lint.codemod.rewrites import Planner

#: How many ``self.<method>()`` calls deep a write is looked for (``__call__`` -> ``save_checkpoint``).
_MAX_DEPTH = 2
#: The test a write in such a method goes under, and what it needs imported.
_MAIN_PROCESS = "PartialState().is_main_process"
_IMPORT = ("accelerate", "PartialState")


def guard_object_saves(planner: Planner, places: list[Function]) -> list[tuple[Function, cst.Call]]:
    """Guard the checkpoint writes of the methods that the calls in ``places`` run on objects of
    this file's classes (see the module docstring); the calls that reach a guarded write are
    returned, as main-process writes where they stand."""
    tree = planner.tree
    classes = {c.name.value: c for c in tree.module.body if isinstance(c, cst.ClassDef)}
    done: set[int] = set()
    writes: list[tuple[Function, cst.Call]] = []
    for place in places:
        for call in find_all(place, cst.Call, enter_functions=False):
            method = _called_method(tree, classes, place, call)
            if method is None:
                if _note_module_saves(planner, place, call):
                    writes.append((place, call))
                continue
            if any(method is p for p in places):
                continue  # a method the conversion already reaches with an accelerator is its own
            saves = [s for s in _saves(tree, method[0], method[1], _MAX_DEPTH) if _shared_write(planner, s)]
            if not saves:
                continue
            for save in saves:
                if id(save) in done:
                    continue
                done.add(id(save))
                line = tree.call_line(save)
                assert line is not None  # _shared_write keeps only writes on a line of their own
                planner.edits.on(line, guarded(expression(_MAIN_PROCESS, planner.module)))
                if _IMPORT not in planner.imports:
                    planner.imports.append(_IMPORT)
                planner.notes.append(
                    f"torch.save() at line {tree.line(save)}, in {method[0].name.value}.{_name(tree, save)}() "
                    f"(reached from the call at line {tree.line(call)}), runs under `if {_MAIN_PROCESS}:`: every process calls the "
                    "object (it decides what each does next), but only the main process writes the file"
                )
            writes.append((place, call))
    return writes


def _called_method(
    tree: Tree, classes: dict[str, cst.ClassDef], place: Function, call: cst.Call
) -> tuple[cst.ClassDef, cst.FunctionDef] | None:
    """The class of this file and its method that ``call`` runs: ``obj(...)`` (``__call__``) or
    ``obj.method(...)``, with ``obj`` built from the class in ``place``, at the top level or up
    the callers that hand it down."""
    func = call.func
    if isinstance(func, cst.Name):
        receiver, called = func.value, "__call__"
    elif isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name):
        receiver, called = func.value.value, func.attr.value
    else:
        return None
    built = constructions(tree, place, receiver)
    if not built or not isinstance(built[0].func, cst.Name) or tree.imported_names(built[0].func):
        return None
    cls = classes.get(built[0].func.value)
    if cls is None:
        return None
    method = next((m for m in methods_of(cls) if m.name.value == called), None)
    return (cls, method) if method is not None else None


def _saves(tree: Tree, cls: cst.ClassDef, method: cst.FunctionDef, depth: int) -> list[cst.Call]:
    """The ``torch.save`` calls of ``method`` and of the methods of ``cls`` it calls on ``self``."""
    found: list[cst.Call] = []
    own = {m.name.value: m for m in methods_of(cls)}
    for call in find_all(method, cst.Call, enter_functions=False):
        if tree.resolves_to(call.func, *TORCH_SAVE):
            found.append(call)
            continue
        func = call.func
        if (
            depth > 0
            and isinstance(func, cst.Attribute)
            and isinstance(func.value, cst.Name)
            and func.value.value == "self"
            and func.attr.value in own
            and own[func.attr.value] is not method
        ):
            found += _saves(tree, cls, own[func.attr.value], depth - 1)
    return found


def _name(tree: Tree, node: cst.CSTNode) -> str:
    function = tree.function_of(node)
    return function.name.value if isinstance(function, cst.FunctionDef) else "?"


def _shared_write(planner: Planner, save: cst.Call) -> bool:
    """``torch.save(obj, path)`` on a line of its own, every process writing the same file: not
    under a rank test, not to a path that names the process."""
    tree = planner.tree
    if tree.call_line(save) is None or under_rank_test(planner, save) or planner.is_removed(save):
        return False
    path = save.args[1].value if len(save.args) > 1 else None
    return path is None or not per_process_path(tree.function_of(save), path)


#: Words of a test that already keeps a write to one process (``if rank == 0:``).
_RANK_WORDS = ("rank", "main_process", "is_master", "local_master")


def _note_module_saves(planner: Planner, place: Function, call: cst.Call) -> bool:
    """``call`` runs a method of a class of a project module: note the ``torch.save`` calls it
    reaches there (True: it writes, a main-process write for the barrier)."""
    tree = planner.tree
    found = class_method(tree, place, call)
    cls = found[1] if found is not None else None
    if found is None or cls is None or found[0].path in (None, tree.filename):
        return False  # (a class of this file is guarded by guard_object_saves)
    parsed, method = found[0], found[2]
    methods = {m.name: m for m in cls.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))}
    saves = list(
        {
            id(save): (save, owner)
            for save, owner in _module_saves(parsed.imports.qualname, methods, method, _MAX_DEPTH)
        }.values()
    )
    for save, owner in saves:
        planner.notes.append(
            f"torch.save() at {beside(tree, parsed.path)} line {save.lineno}, in {cls.name}.{owner}() (reached "
            f"from the call at line {tree.line(call)}), runs on every process and writes the same file: the fixer "
            f"edits the script only, so put it under `if {_MAIN_PROCESS}:` there (from accelerate import "
            "PartialState); the call stays on every process (it decides what each does next), and a read-back "
            "after it waits for every process"
        )
    return bool(saves)


def _module_saves(
    qualname: Callable[[ast.AST], str | None], methods: dict[str, FunctionNode], method: FunctionNode, depth: int
) -> list[tuple[ast.Call, str]]:
    """The ``torch.save`` calls (with the method holding each) of ``method`` and of the methods of
    its class it calls on ``self``, outside a rank test."""
    found: list[tuple[ast.Call, str]] = []
    for node, guarded_ in _calls(method.body, False):
        if qualname(node.func) == "torch.save":
            if not guarded_:
                found.append((node, method.name))
            continue
        func = node.func
        if (
            depth > 0
            and isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id == "self"
            and func.attr in methods
            and methods[func.attr] is not method
        ):
            found += _module_saves(qualname, methods, methods[func.attr], depth - 1)
    return found


def _calls(body: list[ast.stmt], guarded_: bool) -> list[tuple[ast.Call, bool]]:
    """Each call in ``body`` (not in nested functions), with whether an ``if`` on a rank holds it."""
    found: list[tuple[ast.Call, bool]] = []
    for stmt in body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        if isinstance(stmt, ast.If):
            ranked = guarded_ or any(w in ast.unparse(stmt.test) for w in _RANK_WORDS)
            found += [(c, guarded_) for c in _expr_calls(stmt.test)]
            found += _calls(stmt.body, ranked) + _calls(stmt.orelse, guarded_)
            continue
        inner = [getattr(stmt, f) for f in ("body", "orelse", "finalbody") if isinstance(getattr(stmt, f, None), list)]
        for block in inner:
            found += _calls(block, guarded_)
        for handler in getattr(stmt, "handlers", []):
            found += _calls(handler.body, guarded_)
        for field_ in ast.iter_fields(stmt):
            value = field_[1]
            if isinstance(value, ast.expr):
                found += [(c, guarded_) for c in _expr_calls(value)]
            elif isinstance(value, list):
                for item in value:
                    if isinstance(item, ast.expr):
                        found += [(c, guarded_) for c in _expr_calls(item)]
                    elif isinstance(item, ast.withitem):
                        found += [(c, guarded_) for c in _expr_calls(item.context_expr)]
    return found


def _expr_calls(expr: ast.expr) -> list[ast.Call]:
    return [n for n in ast.walk(expr) if isinstance(n, ast.Call)]
