"""Helpers of the script that ask the user (``input()``), run by the main process alone.

Survey 23e cpc_libri: ``save_dir = make_save_dir()``, where ``make_save_dir()`` tests whether the
folder exists, then asks ``input("... Overwrite? [yes/no]")`` (and ``quit()`` on "no") or makes
it. The script ran as one process and asked once. Converted and launched on two, every process
ran it: the main process made the folder, the other found it and asked (a replica: 6 of 6 runs
ended in EOFError with stdin closed; on a terminal both processes wait for one answer). Now the
main process alone runs the call, and the others take its result:
``x = helper() if accelerator.is_main_process else None`` then
``x = broadcast_object_list([x])[0]`` (one process: the list as it is); a call whose result is
unused goes under ``if accelerator.is_main_process:``, followed by
``accelerator.wait_for_everyone()``. Any other shape, or a helper that also calls the prepared
model or a collective (which every process must call together), is named in a note. An
``input()`` written in a function that trains (or the conversion's scope) is taken the same way as
such a helper's call (``answer = input(...)``, a bare ``input(...)``); one in a helper is handled
through the helper's call.

A helper that may quit (``quit()`` on a "no", ``sys.exit()``, ``raise SystemExit``) quit the main
process alone, and the others failed in the broadcast (a 2-process replica, "no" piped in: rank 1
``RuntimeError: Connection closed by peer``, exit 1; the original exited 0). Its call now runs in
``try: ... except SystemExit as quitting: save_dir = quitting``; the broadcast hands the
SystemExit round and every process raises it (``if isinstance(save_dir, SystemExit): raise
save_dir``): exit 0 on both processes, under accelerate launch and torchrun.

Session 26: ``os._exit(code)`` in such a helper (or a local function it calls) ends the process
raising nothing, so the ``except SystemExit`` never saw it: the main process ended alone and the
others failed in the broadcast (the same replica with ``os._exit(0)``: rank 1 "Connection closed
by peer", exit 1). It becomes ``sys.exit(code)``, the same exit status, handed round as above;
what differs is that the main process's ``finally`` blocks and ``atexit`` handlers now run, as
the note says.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

import libcst as cst

from regcomp_lint.codemod.builders import expression, guarded, statement
from regcomp_lint.codemod.checkpoint_writes import runs_with_others, under_rank_test
from regcomp_lint.codemod.tree import Function, code, find_all
from regcomp_lint.knowledge.accelerate_api import BROADCAST_OBJECT_LIST_IMPORT
from regcomp_lint.knowledge.torch_api import HARD_PROCESS_EXITS, PROCESS_EXITS

if TYPE_CHECKING:
    from regcomp_lint.codemod.rewrites import Planner

#: How many calls deep an ``input()`` is looked for (``make_save_dir`` -> ``ask``).
_MAX_DEPTH = 3


def ask_once(planner: Planner, places: list[Function], training: set[Function]) -> None:
    """Run each call in ``places`` of a local function that asks with ``input()`` on the main
    process alone (see the module docstring); not a call of a function that trains (its own call
    of the helper is the one handled)."""
    tree = planner.tree
    for place in places:
        trains = place in training or place is planner.scope
        for call in find_all(place, cst.Call, enter_functions=False):
            direct = trains and tree.resolves_to(call.func, "builtins.input")
            helper = None if direct else tree.function_named(call)
            prompt = call if direct else _prompt(planner, helper, training, 0) if helper is not None else None
            if prompt is None or under_rank_test(planner, call):
                continue
            what = f"input() at line {tree.line(call)} asks"
            if helper is not None:
                what = f"{helper.name.value}() at line {tree.line(call)} asks with input() (line {tree.line(prompt)})"
            if not planner.can_reach_accelerator(place) or (
                helper is not None and _runs_with_others(planner, helper, 0)
            ):
                planner.notes.append(
                    f"{what} in every process: under a launch of several, each asks (and one may find what another "
                    "made, such as a folder); run it on the main process and hand its result to the others by hand"
                )
                continue
            acc = planner.accelerator_in(place)
            line = tree.line_of(call)
            block = tree.block_of(line)
            index = planner.project(block, line) if block is not None else None
            target = _assigned_name(line, call)
            if block is None or index is None or (target is None and tree.call_line(call) is None):
                planner.notes.append(
                    f"{what} in every process, and its result is used where the conversion cannot hand it round: "
                    f"call it under `if {acc}.is_main_process:` and hand its result to the others by hand"
                )
                continue
            quits = helper is not None and _quits(planner, helper, 0)
            if target is not None:
                planner.edits.on(call, partial(_on_main_process, acc, planner.module))
                after = [statement(f"{target} = broadcast_object_list([{target}])[0]", planner.module)]
                planner.imports.append(BROADCAST_OBJECT_LIST_IMPORT)
                done = f"the other processes take its result, {target}, from the main process (broadcast_object_list)"
            else:
                planner.edits.on(line, guarded(expression(f"{acc}.is_main_process", planner.module)))
                after = [statement(f"{acc}.wait_for_everyone()", planner.module)]
                done = f"the others wait for it ({acc}.wait_for_everyone())"
            if quits:
                _raise_hard_exits(planner, helper)
                target = _quit_for_all(planner, line, target)
                after = [
                    statement(f"{target} = broadcast_object_list([{target}])[0]", planner.module),
                    statement(f"if isinstance({target}, SystemExit):\n    raise {target}", planner.module),
                ]
                planner.imports.append(BROADCAST_OBJECT_LIST_IMPORT)
                done += (
                    "; when it quits (SystemExit, a 'no' to its prompt), the main process hands the SystemExit round "
                    "and every process quits with it, where the others were left waiting for the main one"
                )
            planner.edits.add_statements(block, index + 1, after, after=True)
            planner.uses.append(call)
            planner.notes.append(
                f"{what}: it runs on the main process alone (launched on several, each process asked, and one found "
                f"what another had made), and {done}"
            )


def _on_main_process(acc: str, module: cst.Module, updated: cst.Call) -> cst.CSTNode:
    """``helper()`` -> ``helper() if accelerator.is_main_process else None`` (its own edits kept)."""
    return expression(f"{code(updated)} if {acc}.is_main_process else None", module)


def _quit_for_all(planner: Planner, line: cst.CSTNode, target: str | None) -> str:
    """Wrap ``line`` (already run on the main process alone) in ``try: ... except SystemExit as
    quitting: target = quitting``; without a target, ``quit_signal`` (bound None first, in the
    ``try``) carries it. The name the exception travels in, for the broadcast after it."""
    names = {n.value for n in find_all(planner.tree.module, cst.Name)}
    caught = _free(names, "quitting")
    carrier = target if target is not None else _free(names, "quit_signal")
    first = [] if target is not None else [f"{carrier} = None"]
    nl, unit = planner.module.default_newline, planner.module.default_indent

    def wrap(updated: cst.CSTNode) -> cst.CSTNode:
        assert isinstance(updated, (cst.SimpleStatementLine, cst.BaseCompoundStatement))
        body = [statement(s, planner.module) for s in first] + [updated.with_changes(leading_lines=[])]
        template = statement(
            f"try:{nl}{unit}pass{nl}except SystemExit as {caught}:  # the main process quits: the others quit "
            f"with it, below{nl}{unit}{carrier} = {caught}",
            planner.module,
        )
        assert isinstance(template, cst.Try)
        return template.with_changes(body=template.body.with_changes(body=body), leading_lines=updated.leading_lines)

    planner.edits.on(line, wrap)
    return carrier


def _free(names: set[str], name: str) -> str:
    while name in names:
        name += "_"
    return name


def _quits(planner: Planner, function: cst.FunctionDef, depth: int) -> bool:
    """``function`` may end the process (``quit()``, ``sys.exit()``, ``raise SystemExit``), itself or
    through a local function it calls."""
    tree = planner.tree
    if any(tree.resolves_to(call.func, *PROCESS_EXITS, *HARD_PROCESS_EXITS) for call in find_all(function, cst.Call)):
        return True
    if any(r.exc is not None and "SystemExit" in code(r.exc) for r in find_all(function, cst.Raise)):
        return True
    return depth < _MAX_DEPTH and any(
        _quits(planner, callee, depth + 1) for callee, _ in planner.graph.calls_from(function)
    )


def _raise_hard_exits(planner: Planner, helper: cst.FunctionDef | None) -> None:
    """``os._exit(code)`` -> ``sys.exit(code)`` in ``helper`` and the local functions it calls
    (those of this file), so that the ``except SystemExit`` round its call sees it."""
    tree = planner.tree
    seen: set[cst.FunctionDef] = set()
    todo = [helper] if helper is not None else []
    for _ in range(_MAX_DEPTH + 1):
        todo = [f for f in todo if f not in seen and tree.parent(f) is not None]
        seen.update(todo)
        for function in todo:
            for call in find_all(function, cst.Call):
                if tree.resolves_to(call.func, *HARD_PROCESS_EXITS) and call not in planner.edits.replace:
                    planner.edits.on(call, partial(_soft_exit, planner.module))
                    planner.imports.append(("sys", None))
                    raised = code(_soft_exit(planner.module, call)).strip()
                    planner.notes.append(
                        f"{code(call).strip()} at line {tree.line(call)} ends the process raising nothing, so the "
                        f"other processes never heard of it: it is now {raised} (the same exit status), handed "
                        "round to them; unlike os._exit, the main process's finally blocks and atexit handlers run"
                    )
        todo = [callee for function in todo for callee, _ in planner.graph.calls_from(function)]


def _soft_exit(module: cst.Module, updated: cst.Call) -> cst.Call:
    """``os._exit(code)`` -> ``sys.exit(code)``."""
    return updated.with_changes(func=expression("sys.exit", module))


def _prompt(planner: Planner, function: cst.FunctionDef, training: set[Function], depth: int) -> cst.Call | None:
    """The first ``input(...)`` (the builtin, resolved by qualified name) ``function`` makes,
    itself or through a local function it calls; None for a function in ``training``."""
    tree = planner.tree
    if function in training:
        return None
    for call in find_all(function, cst.Call):
        if tree.resolves_to(call.func, "builtins.input"):
            return call
    if depth >= _MAX_DEPTH:
        return None
    return next(
        (
            found
            for callee, _ in planner.graph.calls_from(function)
            if (found := _prompt(planner, callee, training, depth + 1))
        ),
        None,
    )


def _runs_with_others(planner: Planner, function: cst.FunctionDef, depth: int) -> bool:
    """``function`` calls the prepared model or a collective, itself or through a local function:
    run by one process, it would wait for the others forever."""
    models = set(planner.models)
    if any(runs_with_others(call, models) for call in find_all(function, cst.Call)):
        return True
    return depth < _MAX_DEPTH and any(
        _runs_with_others(planner, callee, depth + 1) for callee, _ in planner.graph.calls_from(function)
    )


def _assigned_name(line: cst.CSTNode, call: cst.Call) -> str | None:
    """``save_dir`` of a line that is just ``save_dir = <call>``."""
    if not (isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1):
        return None
    assign = line.body[0]
    if not (isinstance(assign, cst.Assign) and assign.value is call and len(assign.targets) == 1):
        return None
    target = assign.targets[0].target
    return target.value if isinstance(target, cst.Name) else None
