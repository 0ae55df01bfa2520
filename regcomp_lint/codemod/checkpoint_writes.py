"""Checkpoints the converted script writes from the main process only.

A local helper that writes a checkpoint (the ImageNet example's ``save_checkpoint(state,
is_best)``: ``torch.save`` then ``shutil.copyfile``) ran in one process; launched on several,
every process would write the same files at once. Its call goes under
``if accelerator.is_main_process:``, unless the script already calls it under a rank test. So
does a method of the model's own class that writes one (``model_to_save.save_checkpoint(path)``,
survey 23b mird_phase2; ``model_methods.own_method``).

``accelerator.save`` writes on the main process alone. A script that saves and then reads the
file back (the quickstart's ``torch.save(...)`` then ``model.load_state_dict(torch.load(...))``)
ran as one process; converted and launched on several, the other ranks would read the file before
rank 0 has written it (or read a half-written one). A barrier goes between the two.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from functools import partial
from typing import TYPE_CHECKING

import libcst as cst
from libcst.metadata import Assignment

from regcomp_lint.analysis.main_process import Scope, main_process_condition, sends_others_away
from regcomp_lint.codemod.accelerator_edits import accelerator_edit, on_main_process
from regcomp_lint.codemod.builders import expression, statement
from regcomp_lint.codemod.edits import replaced_by
from regcomp_lint.codemod.lint_view import lint_view
from regcomp_lint.codemod.local_modules import FunctionNode, imported_function
from regcomp_lint.codemod.model_methods import own_method
from regcomp_lint.codemod.per_process import per_process_path
from regcomp_lint.codemod.settings import Refusal
from regcomp_lint.codemod.tree import Block, Function, Tree, code, find_all, key_of, single_target
from regcomp_lint.codemod.uneven_guards import decided_apart
from regcomp_lint.knowledge.accelerate_api import SAVE_PARAMETERS
from regcomp_lint.knowledge.torch_api import (
    COMPILE_WRAPPER_ATTRIBUTE,
    DESTROY_PROCESS_GROUP,
    FILE_MOVERS,
    MODULE_STATE_CHANGERS,
    TORCH_SAVE,
)

if TYPE_CHECKING:
    from regcomp_lint.codemod.rewrites import Planner

_READS = ("torch.load",)
#: How many calls deep a helper's write is looked for (``save_checkpoint`` -> ``_write``).
_MAX_DEPTH = 3
#: Calls every process must make together: a helper making one is never run on one process only.
COLLECTIVE_WORDS = ("barrier", "wait_for_everyone", "all_reduce", "all_gather", "gather", "broadcast", "reduce")


def guard_helper_saves(
    planner: Planner, places: list[Function], training: set[Function]
) -> list[tuple[Function, cst.Call]]:
    """Put each call of a checkpoint-writing helper in ``places`` under
    ``if accelerator.is_main_process:``; the guarded calls are returned (main-process writes)."""
    tree = planner.tree
    writers = _checkpoint_writers(planner, training)
    guarded_calls: list[tuple[Function, cst.Call]] = []
    for place in places:
        for call in find_all(place, cst.Call, enter_functions=False):
            method = own_method(planner, place, call) if isinstance(call.func, cst.Attribute) else None
            helper = method or tree.function_named(call)
            elsewhere = None if helper is not None else _writer_elsewhere(tree, call)
            if (helper is None or helper not in writers) and elsewhere is None:
                continue
            if under_rank_test(planner, call):
                continue
            name = helper.name.value if helper is not None and method is None else f"{code(call.func)}"
            if method is not None:
                helper = None  # (what it is handed is not unwrapped: its parameters start with self)
            expr = tree.parent(call)
            if isinstance(expr, cst.If) and expr.test is call and _only_logs(tree, expr):
                # `if atomic_save(...): print("saved")`: the main process writes and logs, the others skip both
                acc = planner.accelerator_in(place)
                if helper is not None:
                    _unwrap_handed_models(planner, helper, call, acc)
                accelerator_edit(
                    planner,
                    call,
                    partial(_main_process_and, acc, planner.module),
                    call,
                    f"{name}() at line {tree.line(call)} writes a checkpoint and its result only decides what is "
                    f"logged: the test is now `{acc}.is_main_process and {name}(...)`, so one process writes and logs",
                )
                guarded_calls.append((place, call))
                continue
            line = tree.call_line(call)
            if line is None:
                planner.notes.append(
                    f"{name}() at line {tree.line(call)} writes a checkpoint but its result is used: "
                    "every process runs it; call it under `if accelerator.is_main_process:` by hand"
                )
                continue
            acc = planner.accelerator_in(place)
            if helper is not None:
                _unwrap_handed_models(planner, helper, call, acc)
            elif elsewhere is not None:
                _unwrap_models_pickled_elsewhere(planner, elsewhere, call, acc)
            on_main_process(
                planner,
                line,
                acc,
                call,
                f"{name}() at line {tree.line(call)} writes a checkpoint: it runs under "
                f"`if {acc}.is_main_process:`, so one process writes the files",
            )
            guarded_calls.append((place, call))
    return guarded_calls


def _main_process_and(acc: str, module: cst.Module, updated: cst.CSTNode) -> cst.CSTNode:
    """``helper(...)`` -> ``accelerator.is_main_process and helper(...)`` (its own edits kept)."""
    return expression(f"{acc}.is_main_process and {code(updated)}", module)


#: Methods of a logger a branch may call and still only log.
_LOG_METHODS = ("debug", "info", "warning", "error", "log")


def _only_logs(tree: Tree, test_of: cst.If) -> bool:
    """Every statement of the ``if``'s branches prints or logs (``print(...)``,
    ``logger.info(...)``): skipping them on the other processes changes nothing they compute."""
    blocks = [test_of.body]
    if test_of.orelse is not None:
        if not isinstance(test_of.orelse, cst.Else):
            return False  # an elif tests more than the result
        blocks.append(test_of.orelse.body)
    for block in blocks:
        if not isinstance(block, cst.IndentedBlock):
            return False
        for line in block.body:
            if not isinstance(line, cst.SimpleStatementLine):
                return False
            for small in line.body:
                if not (isinstance(small, cst.Expr) and isinstance(small.value, cst.Call)):
                    return False
                if not _shows_only(tree, small.value):
                    return False
    return True


def _shows_only(tree: Tree, call: cst.Call) -> bool:
    """``print(...)`` or ``logger.info(...)``: the call shows its arguments and reads no file."""
    func = call.func
    if isinstance(func, cst.Name):
        return func.value == "print" and tree.imported_names(func) <= {"builtins.print"}
    return isinstance(func, cst.Attribute) and func.attr.value in _LOG_METHODS


def save_the_rest_once(
    planner: Planner, places: list[Function], written: list[tuple[Function, cst.Call]]
) -> list[tuple[Function, cst.Call]]:
    """``torch.save(swa_model.state_dict(), "swa.pt")``: a save of nothing prepared (an EMA or SWA
    copy, metrics, a config) in the code that trains ran in one process; launched on several,
    every process writes the same file at once. It becomes ``accelerator.save`` (the main
    process writes) unless it already runs under a rank test or its path names the rank (one file
    per process). Returns the rewritten calls (main-process writes)."""
    tree = planner.tree
    done = {id(call) for _, call in written}
    rewritten: list[tuple[Function, cst.Call]] = []
    for place in places:
        for call in find_all(place, cst.Call, enter_functions=False):
            if id(call) in done or not tree.resolves_to(call.func, *TORCH_SAVE) or planner.is_removed(call):
                continue
            if under_rank_test(planner, call) or (len(call.args) > 1 and per_process_path(place, call.args[1].value)):
                continue
            if saves_into_memory(planner, call):
                continue
            if not planner.can_reach_accelerator(place):
                continue
            rewritten.append(save_once(planner, place, call))
    return rewritten


def save_once(planner: Planner, place: Function, call: cst.Call) -> tuple[Function, cst.Call]:
    """``torch.save(...)`` -> ``accelerator.save(...)``, noted: the main process writes the file."""
    planner.uses.append(call)
    if write_on_main_process(planner, place, call):
        acc = planner.accelerator_in(place)
        planner.notes.append(
            f"torch.save() at line {planner.tree.line(call)} -> {acc}.save(): the main process writes the file, once"
        )
    return place, call


def write_on_main_process(planner: Planner, place: Function, call: cst.Call) -> bool:
    """Make ``torch.save(...)`` write on the main process alone; True when it became ``accelerator.save``.

    It becomes ``accelerator.save(...)``, unless it passes options ``accelerator.save()`` does not
    take (:data:`~regcomp_lint.knowledge.accelerate_api.SAVE_PARAMETERS`: survey21c's
    ``_use_new_zipfile_serialization=False`` raised ``TypeError``): then it stays ``torch.save``,
    its statement under ``if accelerator.is_main_process:``."""
    tree = planner.tree
    acc = planner.accelerator_in(place)
    options = [
        code(arg).strip().rstrip(",")
        for index, arg in enumerate(call.args)
        if arg.star or (arg.keyword.value not in SAVE_PARAMETERS if arg.keyword is not None else index > 1)
    ]
    if not options:
        planner.replace(call.func, f"{acc}.save")
        return True
    line = tree.call_line(call)
    if line is None:
        raise Refusal(
            f"torch.save() at line {tree.line(call)} passes {', '.join(options)}, which {acc}.save() does not take, "
            "and is not a statement of its own to run on the main process; convert by hand"
        )
    on_main_process(
        planner,
        line,
        acc,
        None,
        f"torch.save() at line {tree.line(call)} keeps {', '.join(options)}, which {acc}.save() does not take: it "
        f"stays torch.save, under `if {acc}.is_main_process:`",
    )
    return False


def state_saves(tree: Tree, place: Function, state_dict: cst.Call) -> list[cst.Call]:
    """The ``torch.save`` calls in ``place`` that write this ``state_dict()`` call's result, alone or
    in the dict it is put in, as the lint's checkpoints see them
    (:mod:`~regcomp_lint.analysis.checkpoints`)."""
    view = lint_view(tree)
    read = view.roles.checkpoints.read_at(view.expression_at(state_dict)) if view.roles is not None else None
    if read is None or view.roles is None:
        return []
    writes = {id(save.call) for save in view.roles.checkpoints.saves_of(read) if save.torch_save}
    return [c for c in find_all(place, cst.Call, enter_functions=False) if id(view.expression_at(c)) in writes]


def saves_into_memory(planner: Planner, call: cst.Call) -> bool:
    """``torch.save(state, buf)`` into an ``io.BytesIO()`` or an anonymous temporary file (the
    lint's :meth:`~regcomp_lint.analysis.checkpoints.Checkpoints.in_memory`): it stays
    ``torch.save``, since every process must fill its own buffer (``accelerator.save`` writes on
    the main process only: the other ranks' buffers stayed empty). Noted once per call."""
    view = lint_view(planner.tree)
    if view.roles is None:
        return False
    save = view.roles.checkpoints.save_at(view.expression_at(call))
    if save is None or not save.torch_save or not view.roles.checkpoints.in_memory(save):
        return False
    note = (
        f"torch.save() at line {planner.tree.line(call)} writes into memory (a buffer of its own process): "
        "it stays torch.save, so every process fills its own buffer"
    )
    if note not in planner.notes:
        planner.notes.append(note)
    return True


def _writer_elsewhere(tree: Tree, call: cst.Call) -> FunctionNode | None:
    """A checkpoint helper of another module of the project (the SSD tutorial's
    ``utils.save_checkpoint(epoch, model, optimizer)``): it calls ``torch.save``, and does no
    more than write (no loop, no collective, no call of what it is handed)."""
    found = imported_function(tree, call.func)
    if found is None:
        return None
    parsed, function = found
    params = {a.arg for a in [*function.args.posonlyargs, *function.args.args, *function.args.kwonlyargs]}
    saves = False
    for node in ast.walk(function):
        if isinstance(node, (ast.For, ast.While)):
            return None
        if not isinstance(node, ast.Call):
            continue
        qualname = parsed.imports.qualname(node.func) or ""
        if qualname == "torch.save":
            saves = True
        text = ast.unparse(node.func).lower()
        if any(word in text for word in COLLECTIVE_WORDS) or (
            isinstance(node.func, ast.Name) and node.func.id in params
        ):
            return None
    return function if saves else None


def _unwrap_models_pickled_elsewhere(planner: Planner, helper: FunctionNode, call: cst.Call, acc: str) -> None:
    """The other module's helper pickles a handed model whole (in its saved dict) or saves its
    state: it is handed the unwrapped model."""
    positional = [a.arg for a in [*helper.args.posonlyargs, *helper.args.args]]
    for arg, model, parameter in _handed_models(planner, call, positional):
        if not _ast_saves(helper, parameter):
            continue
        _hand_unwrapped(planner, arg, model, acc)
        planner.notes.append(
            f"{code(call.func)}() gets accelerator.unwrap_model({model}, keep_torch_compile=False) at line "
            f"{planner.tree.line(call)}: it saves {parameter} (its state or the whole model), which must be the plain model"
        )


def _handed_models(planner: Planner, call: cst.Call, positional: list[str]) -> Iterator[tuple[cst.Arg, str, str]]:
    """(argument, prepared model, the helper's parameter it fills) for each model ``call`` hands over."""
    models = set(planner.models)
    for index, arg in enumerate(call.args):
        model = key_of(arg.value)
        if model is None or model not in models or arg.star:
            continue
        parameter = (
            arg.keyword.value if arg.keyword is not None else positional[index] if index < len(positional) else None
        )
        if parameter is not None:
            yield arg, model, parameter


def _hand_unwrapped(planner: Planner, arg: cst.Arg, model: str, acc: str) -> None:
    unwrapped = expression(f"{acc}.unwrap_model({model}, keep_torch_compile=False)", planner.module)
    planner.edits.on(arg.value, replaced_by(unwrapped))


def _ast_saves(helper: FunctionNode, parameter: str) -> bool:
    """``parameter.state_dict()``, or ``parameter`` as a value of a dict literal (saved whole)."""
    for node in ast.walk(helper):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "state_dict"
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == parameter
        ):
            return True
        if isinstance(node, ast.Dict) and any(isinstance(v, ast.Name) and v.id == parameter for v in node.values):
            return True
        if isinstance(node, ast.Call) and ast.unparse(node.func).endswith("save") and node.args:
            first = node.args[0]
            if isinstance(first, ast.Name) and first.id == parameter:
                return True
    return False


def _unwrap_handed_models(planner: Planner, helper: cst.FunctionDef, call: cst.Call, acc: str) -> None:
    """``save_weights(model, path)`` where the helper saves ``net.state_dict()``: the prepared
    model goes in unwrapped, so the file holds the plain model's keys (no ``module.`` or
    ``_orig_mod.``). A parameter named like the model is rewritten inside the helper instead."""
    positional = [p.name.value for p in [*helper.params.posonly_params, *helper.params.params]]
    for arg, model, parameter in _handed_models(planner, call, positional):
        if not _saves_state_of(helper, parameter):
            continue
        if parameter == model and not _pickles_in_a_dict(helper, parameter) and not _unwraps_by_hand(helper, parameter):
            continue  # rewritten inside the helper (state_dict(), a whole-model save)
        _hand_unwrapped(planner, arg, model, acc)
        why = (
            f"it pickles {parameter} whole in the checkpoint, which must hold the plain model (not the DDP or "
            "compile wrapper, which does not load in one process)"
            if _pickles_in_a_dict(helper, parameter)
            else f"it saves {parameter}'s state, which must carry the plain model's keys"
        )
        planner.notes.append(
            f"{helper.name.value}() gets accelerator.unwrap_model({model}, keep_torch_compile=False) at line "
            f"{planner.tree.line(call)}: {why}"
        )


def _saves_state_of(helper: cst.FunctionDef, parameter: str) -> bool:
    """The helper reads ``parameter.state_dict()`` (also through its own compile unwrap,
    :func:`_unwraps_by_hand`) or saves ``parameter`` whole, alone or as a value of the dict it saves
    (the SSD tutorial's ``torch.save({'epoch': epoch, 'model': model, ...}, filename)``, which would
    pickle the DDP or compile wrapper)."""
    for call in find_all(helper, cst.Call):
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value == "state_dict" and code(func.value) == parameter:
            return True
        if code(func).endswith("save") and call.args and code(call.args[0].value) == parameter:
            return True
    return _unwraps_by_hand(helper, parameter) or _pickles_in_a_dict(helper, parameter)


def _unwraps_by_hand(helper: cst.FunctionDef, parameter: str) -> bool:
    """``getattr(parameter, "_orig_mod", parameter).state_dict()``: the helper strips the compile the
    original made, not the DDP wrapper prepare() adds on several processes (``module.`` keys, survey
    20c's gan_yolo), and nothing inside the helper rewrites it: the plain model is handed in."""
    for call in find_all(helper, cst.Call):
        func = call.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "state_dict"):
            continue
        receiver = func.value
        if (
            isinstance(receiver, cst.Call)
            and code(receiver.func) == "getattr"
            and len(receiver.args) == 3
            and code(receiver.args[0].value) == parameter
            and code(receiver.args[2].value) == parameter
            and isinstance(receiver.args[1].value, cst.SimpleString)
            and receiver.args[1].value.evaluated_value == COMPILE_WRAPPER_ATTRIBUTE
        ):
            return True
    return False


def _pickles_in_a_dict(helper: cst.FunctionDef, parameter: str) -> bool:
    """``torch.save({'epoch': epoch, 'model': model, ...}, filename)``: ``parameter`` pickled whole
    as a value of the saved dict (nothing inside the helper rewrites that)."""
    dicts = {  # `state = {...}` then `torch.save(state, filename)`
        target[0]: target[1]
        for assign in find_all(helper, cst.Assign)
        if (target := single_target(assign)) is not None and isinstance(target[1], cst.Dict)
    }
    for call in find_all(helper, cst.Call):
        saved = call.args[0].value if code(call.func).endswith("save") and call.args else None
        if isinstance(saved, cst.Name):
            saved = dicts.get(saved.value, saved)
        if isinstance(saved, cst.Dict) and any(
            isinstance(e, cst.DictElement) and code(e.value) == parameter for e in saved.elements
        ):
            return True
    return False


def _checkpoint_writers(planner: Planner, training: set[Function]) -> set[cst.FunctionDef]:
    """Local functions that write a checkpoint with ``torch.save`` outside a rank test (or call
    one that does, up to :data:`_MAX_DEPTH` calls deep), train nothing and make no collective call."""
    tree = planner.tree
    view = lint_view(tree)
    if view.roles is None:
        return set()
    writing = {
        id(save.where.function) for save in view.roles.checkpoints.saves if save.torch_save and not save.main_process
    }
    functions = [f for f in find_all(tree.module, cst.FunctionDef) if f not in training]
    writers = {f for f in functions if id(view.statement_at(f)) in writing}
    for _ in range(_MAX_DEPTH - 1):
        writers |= {f for f in functions if any(callee in writers for callee, _ in planner.graph.calls_from(f))}
    return {f for f in writers if not _does_more(planner, f, 0)}


def _does_more(planner: Planner, function: cst.FunctionDef, depth: int) -> bool:
    """Does the helper do more than write files: a collective call, a loop (an evaluation pass,
    as in kuangliu's CIFAR ``test()``, which saves when accuracy improves), or a call of a
    prepared model (DDP's forward broadcasts buffers: run on one process, it never returns)?"""
    if find_all(function, (cst.For, cst.While)) or _changes_a_module(function):
        return True
    models = set(planner.models)
    if any(runs_with_others(call, models) for call in find_all(function, cst.Call)):
        return True
    return depth < _MAX_DEPTH and any(_does_more(planner, f, depth + 1) for f, _ in planner.graph.calls_from(function))


def runs_with_others(call: cst.Call, models: set[str]) -> bool:
    """``call`` is one every process must make together: a call of a prepared model (one of
    ``models``; DDP's forward broadcasts buffers) or a collective, known by a word of its name
    (``dist.barrier``, ``accelerator.wait_for_everyone``, a script's own ``reduce_mean``: broad on
    purpose, since a helper that makes one must not run on one process alone)."""
    return key_of(call.func) in models or any(word in code(call.func).lower() for word in COLLECTIVE_WORDS)


def _changes_a_module(function: cst.FunctionDef) -> bool:
    """A statement of ``function`` changes a module in place (``model.to(torch.bfloat16)`` after
    saving the float32 weights, llm.c's ``save_model``; ``model.eval()``, ``load_state_dict``): run
    on the main process only, the other ranks' model would differ from the original's afterwards."""
    return any(
        isinstance(expr.value, cst.Call)
        and isinstance(expr.value.func, cst.Attribute)
        and expr.value.func.attr.value in MODULE_STATE_CHANGERS
        for expr in find_all(function, cst.Expr)
    )


def under_rank_test(planner: Planner, node: cst.CSTNode, depth: int = 0) -> bool:
    """``node`` runs on the main process only: in the body of an ``if`` on the main process
    (``if rank == 0:``, ``if is_main:`` with ``is_main = rank == 0``), after an early exit of
    the others in a block holding it (survey 19e sphere_flow's ``if not is_main: continue``), or
    in a local function every call of which is so."""
    tree = planner.tree
    inner: cst.CSTNode = node
    for anc in tree.ancestors(node):
        if isinstance(anc, cst.FunctionDef):
            callers = planner.graph.callers_of(anc) if depth < _MAX_DEPTH else []
            return bool(callers) and all(under_rank_test(planner, call, depth + 1) for _, call in callers)
        if isinstance(anc, (cst.Lambda, cst.ClassDef)):
            return False
        if (
            isinstance(anc, (cst.If, cst.IfExp))  # `SummaryWriter(...) if is_main_process() else None` too
            and tree.contains(anc.body, node)
            and main_process_test(planner, anc.test)
            and not _fixed_rank(planner, anc.test)
        ):
            return True
        if isinstance(anc, (cst.IndentedBlock, cst.Module)) and _others_left_before(planner, anc, inner):
            return True
        inner = anc
    return False


def main_process_test(planner: Planner, test: cst.BaseExpression) -> bool:
    """``test`` holds on the main process only: the lint's
    :func:`~regcomp_lint.analysis.main_process.main_process_condition` (a rank test, a conjunction
    with one, a name its function binds only to such tests: ``is_main = rank == 0``)."""
    view = lint_view(planner.tree)
    expr = view.any_expression_at(test)
    return expr is not None and main_process_condition(expr, _scope_of(planner, test), view.parsed)


def holds_a_main_process_test(planner: Planner, test: cst.BaseExpression) -> bool:
    """A part of ``test`` is a main-process test (:func:`main_process_test`, read part by part):
    llm.c's ``if args.write_tensors and (not ddp or master_process):``, ``if is_rank0():`` with a
    helper of the module returning a rank-0 test, ``if gpu == 0:`` in a spawned worker."""
    view = lint_view(planner.tree)
    expr = view.any_expression_at(test)
    if expr is None:
        return False
    scope = _scope_of(planner, test)
    return any(
        isinstance(part, ast.expr) and main_process_condition(part, scope, view.parsed) for part in ast.walk(expr)
    )


def _others_left_before(planner: Planner, block: Block, inner: cst.CSTNode) -> bool:
    """A statement of ``block`` before ``inner`` sends every process but the main one away
    (the lint's :func:`~regcomp_lint.analysis.main_process.sends_others_away`:
    ``if not is_main: continue``)."""
    view = lint_view(planner.tree)
    scope = _scope_of(planner, block)
    for stmt in block.body:
        if stmt is inner:
            return False
        found = view.statement_at(stmt) if isinstance(stmt, cst.If) else None
        if found is not None and sends_others_away(found, scope, view.parsed):
            return True
    return False


def _scope_of(planner: Planner, node: cst.CSTNode) -> Scope | None:
    """The ``ast`` function (or module) ``node`` is in: where a flag it reads is bound."""
    view = lint_view(planner.tree)
    function = next((a for a in planner.tree.ancestors(node) if isinstance(a, cst.FunctionDef)), None)
    found = view.statement_at(function) if function is not None else view.parsed
    return found if isinstance(found, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef)) else None


def _fixed_rank(planner: Planner, test: cst.BaseExpression) -> bool:
    """``if local_rank == 0:`` where every binding of ``local_rank`` that runs is ``local_rank = 0``:
    yolov3's ``milti_gpus = False`` script gets its rank from ``get_rank()`` only under
    ``if milti_gpus:`` (dead code). Its one process passed the test; converted and launched on
    several, every process passes it, so it guards nothing."""
    tree, view = planner.tree, lint_view(planner.tree)
    names = [n for n in find_all(test, cst.Name) if "rank" in n.value.lower()]
    if len(names) != 1:
        return False
    assignments = tree.assignments_of(names[0])
    if not assignments or not all(isinstance(a, Assignment) for a in assignments):
        return False  # a builtin, or bound where no node says how
    live = [a.node for a in assignments if isinstance(a, Assignment) and not view.is_dead(a.node)]
    if not live:
        return False
    for node in live:
        target = tree.parent(node)
        assign = tree.parent(target) if isinstance(target, cst.AssignTarget) else None
        if not (isinstance(assign, cst.Assign) and len(assign.targets) == 1 and isinstance(assign.value, cst.Integer)):
            return False
    return True


def _written_paths(written: list[cst.Call]) -> set[str]:
    """Where the writes put their file: ``accelerator.save(obj, path)``'s path and a move's
    destination (``os.replace(tmp, path)``); a helper's arguments say nothing."""
    return {code(w.args[1].value).strip() for w in written if len(w.args) > 1 and w.args[1].keyword is None}


def move_written_files_once(
    planner: Planner, writes: list[tuple[Function, cst.Call]]
) -> list[tuple[Function, cst.Call]]:
    """``os.replace(tmp, path)`` (or a copy, :data:`~regcomp_lint.knowledge.torch_api.FILE_MOVERS`)
    of a file a main-process write just made, in the same function: it finishes that write, so it
    goes under ``if accelerator.is_main_process:`` too. Left to every process, it ran after a
    barrier (taken for a read) and the second rename raised FileNotFoundError (survey 25e
    framediff: 2 of 4 runs on 2 gloo processes); a copy read a file not written yet. Returns the
    guarded moves, themselves main-process writes (of their destination) for the barrier before a
    later read."""
    tree = planner.tree
    moved: list[tuple[Function, cst.Call]] = []
    for place, written in _places_every_process_runs(planner, writes):
        paths = _written_paths([w for w in written if code(w.func).endswith("save")])
        for call in find_all(place, cst.Call, enter_functions=False):
            if not tree.resolves_to(call.func, *FILE_MOVERS) or not call.args or planner.is_removed(call):
                continue
            if code(call.args[0].value).strip() not in paths or under_rank_test(planner, call):
                continue
            if not any(tree.line(w) < tree.line(call) for w in written):
                continue
            line = tree.call_line(call)
            if line is None or not planner.can_reach_accelerator(place):
                continue
            acc = planner.accelerator_in(place)
            on_main_process(
                planner,
                line,
                acc,
                call,
                f"{code(call.func).strip()}() at line {tree.line(call)} runs under `if {acc}.is_main_process:`: it moves "
                "or copies the checkpoint the main process alone writes, so run by every process the second move "
                "would find no file",
            )
            moved.append((place, call))
            paths |= _written_paths([call])
    return moved


def wait_before_reading_back(planner: Planner, writes: list[tuple[Function, cst.Call]]) -> None:
    """``accelerator.wait_for_everyone()`` before the first read that follows a main-process
    write in the same function: a ``torch.load``, or a call handed the written path (cleanrl's
    ``evaluate(model_path, ...)``). It goes in the innermost block holding both, unless that block
    sits under an ``if`` on the rank (``if rank == 0:``), where the other processes would never
    meet it, or in a function that runs on the main process alone (:func:`_main_process_only`)."""
    tree = planner.tree
    for place, written in _places_every_process_runs(planner, writes):
        # where `accelerator.save(obj, path)` and a guarded move write
        paths = _written_paths(
            [w for w in written if code(w.func).endswith("save") or tree.resolves_to(w.func, *FILE_MOVERS)]
        )
        waited: set[tuple[int, int]] = set()
        readers = _checkpoint_readers(planner, place)  # a read through a helper of the file
        reads = sorted(
            (
                c
                for c in find_all(place, cst.Call, enter_functions=False)
                if c not in written
                and (
                    tree.resolves_to(c.func, *_READS)
                    or _handed_a_path(tree, c, paths)
                    or tree.function_named(c) in readers
                )
            ),
            key=tree.line,
        )
        for read in reads:
            before = [w for w in written if tree.line(w) < tree.line(read)]
            if not before or any(tree.line(before[-1]) < tree.line(r) < tree.line(read) for r in reads):
                continue  # nothing written before it, or an earlier read already waits
            write = before[-1]
            block = _common_block(planner, place, write, read)
            if block is None:
                continue
            at_write, at_read = planner.project(block, write), planner.project(block, read)
            if at_write is None or at_read is None or at_write >= at_read or (id(block), at_read) in waited:
                continue
            waited.add((id(block), at_read))
            acc = planner.accelerator_in(place)
            barrier = statement(f"{acc}.wait_for_everyone()", planner.module)
            planner.edits.add_statements(block, at_read, [barrier], after=False)
            planner.notes.append(
                f"{acc}.wait_for_everyone() before the read at line {tree.line(read)}: the checkpoint written at "
                f"line {tree.line(write)} comes from the main process only, so the other processes wait until it is there"
            )


def _places_every_process_runs(
    planner: Planner, writes: list[tuple[Function, cst.Call]]
) -> Iterator[tuple[Function, list[cst.Call]]]:
    """Each function holding main-process ``writes`` that is not itself run by the main process
    alone (:func:`_main_process_only`), in the order of its first write, with its writes in line
    order: where a move of the written file or a read-back runs in every process."""
    guarded = {id(call) for _, call in writes}
    for place in {id(p): p for p, _ in writes}.values():
        if not _main_process_only(planner, place, guarded):
            yield place, sorted((w for p, w in writes if p is place), key=planner.tree.line)


def wait_before_returning(planner: Planner, writes: list[tuple[Function, cst.Call]], training: set[Function]) -> None:
    """``accelerator.wait_for_everyone()`` at the end of a function that writes a checkpoint from
    the main process when, after a call of it, the caller loads checkpoints back (a Kaggle run's
    ``train_one_seed()`` saves ``best_model.pt``, then the caller's ensemble loads every one
    through ``load_local_model(d)``): the other processes return at once and read a file the main
    process has not written yet. A replica on 2 processes failed with FileNotFoundError on rank 1
    (3 of 3 runs under load). Loads before the call (a resume) need no barrier; a helper that only
    saves (called under a rank test) gets none, the processes that skip it would never meet it."""
    tree = planner.tree
    places: list[cst.FunctionDef] = []
    for place, _ in writes:
        # only a function that trains (or drives the training) runs on every process to its end
        if isinstance(place, cst.FunctionDef) and place in training and all(place is not p for p in places):
            places.append(place)
    guarded = {id(call) for _, call in writes}
    for place in places:
        found = None if _main_process_only(planner, place, guarded) else _read_after_a_call(planner, place)
        if found is None:
            continue
        body = tree.body_of(place)
        last = body.body[-1]
        ends_in_return = isinstance(last, cst.SimpleStatementLine) and any(isinstance(s, cst.Return) for s in last.body)
        acc = planner.accelerator_in(place)
        barrier = statement(f"{acc}.wait_for_everyone()", planner.module)
        planner.edits.add_statements(body, len(body.body) - (1 if ends_in_return else 0), [barrier], after=False)
        planner.notes.append(
            f"{acc}.wait_for_everyone() at the end of {place.name.value}(): it writes checkpoints from the main "
            f"process only, and `{code(found).strip()}` at line {tree.line(found)} loads checkpoints after it "
            "returned, so the other processes wait until they are there"
        )


def _read_after_a_call(planner: Planner, place: cst.FunctionDef) -> cst.Call | None:
    """A call that follows a call of ``place`` in the same caller and loads a checkpoint: a
    ``torch.load``, or a call into a module-level function that (through its callees) has one."""
    tree, graph = planner.tree, planner.graph
    if any(tree.resolves_to(c.func, *DESTROY_PROCESS_GROUP) for c in find_all(place, cst.Call)):
        return None  # the process group is gone at its end: no barrier can follow
    reaching = _checkpoint_readers(planner, place)
    for caller, call in graph.callers_of(place):
        for later in find_all(caller, cst.Call, enter_functions=False):
            if tree.line(later) <= tree.line(call):
                continue
            if tree.resolves_to(later.func, *_READS):
                return later
            callee = tree.function_named(later)
            if callee is not None and callee is not place and callee in reaching:
                return later
    return None


def _checkpoint_readers(planner: Planner, place: Function) -> set[Function]:
    """The module-level functions other than ``place`` that load a checkpoint, themselves or through
    their callees (``load_checkpoint(path, model)`` around a torch.load); a class's loader runs where
    the class is built, so methods do not count. Those that load one themselves are listed once per
    conversion (``Planner.checkpoint_loaders``), each place asks."""
    if planner.checkpoint_loaders is None:
        tree = planner.tree
        planner.checkpoint_loaders = [
            f
            for f in planner.module.body
            if isinstance(f, cst.FunctionDef)
            and any(tree.resolves_to(c.func, *_READS) for c in find_all(f, cst.Call, enter_functions=False))
        ]
    loaders: set[Function] = {f for f in planner.checkpoint_loaders if f is not place}
    return {f for f in planner.graph.closure_of_callers(loaders) if f is not place} if loaders else set()


def _main_process_only(planner: Planner, place: Function, guarded: set[int]) -> bool:
    """``place`` is a function every call of which runs on the main process alone: under a test on
    the rank, or put under ``if accelerator.is_main_process:`` by this conversion (``guarded``:
    :func:`guard_helper_saves`). Its write and read-back (``torch.save(state, tmp)`` then
    ``os.replace(tmp, path)``) happen in that one process, in order; a barrier between them would
    wait for processes that never call it (survey 23c: a 2-process run hung at the first save)."""
    if not isinstance(place, cst.FunctionDef):
        return False
    callers = planner.graph.callers_of(place)
    return bool(callers) and all(id(call) in guarded or under_rank_test(planner, call) for _, call in callers)


def _handed_a_path(tree: Tree, call: cst.Call, paths: set[str]) -> bool:
    """A call given one of the written paths as a plain argument, other than one that only shows it
    (``print("saved on", path)``, ``logger.info(...)``: no read, and a barrier before it would sit
    wherever the script reports the save, often under an ``if`` on each process's own metric)."""
    return not _shows_only(tree, call) and any(
        isinstance(arg.value, (cst.Name, cst.Attribute)) and code(arg.value).strip() in paths for arg in call.args
    )


def _common_block(planner: Planner, place: Function, write: cst.CSTNode, read: cst.CSTNode) -> Block | None:
    """The innermost block holding both, when every process runs through it: None when an ``if``
    on the rank (or on the main process) holds it; a refusal when an ``if`` on a value each process
    has its own does (``if epoch_loss < best:`` save, then load back: a replica hung there)."""
    tree = planner.tree
    block: Block | None = None
    for anc in tree.ancestors(write):
        if isinstance(anc, (cst.IndentedBlock, cst.Module)) and tree.contains(anc, read):
            block = anc
            break
    if block is None:
        return None
    for anc in [block, *tree.ancestors(block)]:
        if anc is place:
            break
        if isinstance(anc, cst.If) and _names_the_rank(planner, anc.test):
            return None
    for anc in [block, *tree.ancestors(block)]:
        if anc is place:
            break
        why = decided_apart(tree, planner.graph, planner.varies, anc) if isinstance(anc, cst.If) else None
        if why is not None:
            header = code(anc).strip().splitlines()[0]
            raise Refusal(
                f"the read at line {tree.line(read)} of the checkpoint the main process writes at line "
                f"{tree.line(write)} would wait for it under `{header}` (line {tree.line(anc)}), where {why}; each "
                "process decides that branch from its own values, so one waits in accelerator.wait_for_everyone() "
                "for processes that never come (a 2-process run hangs); convert by hand, deciding once for every "
                "process (reduce the value across processes) or keeping the state in memory instead of reading it back"
            )
    return block


def _names_the_rank(planner: Planner, test: cst.BaseExpression) -> bool:
    if main_process_test(planner, test):
        return True
    text = code(test).lower()
    return any(word in text for word in ("rank", "master", "main_process", "local_process"))
