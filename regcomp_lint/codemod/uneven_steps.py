"""Training steps whose number can differ between processes, and batches drawn without a seed.

Under DDP every ``X.backward()`` all-reduces the gradients: a process that takes fewer steps
leaves the others waiting in that all-reduce for ever. The PyTorch DQN tutorial plays episodes
``for t in count(): ... if done: break`` where ``done`` comes from the environment and from
``random.random()``: each process plays its own episodes, steps a different number of times, and
a converted 2-process run hangs. A loop around the step counts here when it ends on a value the
loop computes by a call (``done = ...env.step(...)``, ``random.random()``, ``loss.item()``);
counters (``it += 1``, ``step == n``), flags and builtins (``len``, ``min``) end every process's
loop at the same iteration and do not count, nor does an epoch sum of the training loss that the
conversion gathers across processes after the batch loop (:mod:`~regcomp_lint.codemod.reduced_sums`),
in the loop that ends or in the function whose return it ends on (``train_one_epoch``).
"""

from __future__ import annotations

from dataclasses import replace

import libcst as cst

from regcomp_lint.codemod.per_process import (
    LOOP_OWN,
    NESTED,
    Alike,
    PerProcess,
    describe_assignment,
    evaluations_in,
    read_as_values,
    targets_of,
)
from regcomp_lint.codemod.reduced_sums import EpochSum, EpochSums, epoch_sums, returned_sums
from regcomp_lint.codemod.roles import CallGraph
from regcomp_lint.codemod.tree import Function, Tree, code, find_all, find_own, key_of, read_keys
from regcomp_lint.knowledge import torch_api

#: How many callers up the step is followed to the loop that runs it (step() <- train() <- main()).
_MAX_CALLER_DEPTH = 3


def uneven_steps(
    tree: Tree,
    graph: CallGraph,
    backwards: list[cst.Call],
    alike: Alike = lambda call: False,
    sharded: frozenset[str] = frozenset(),
    gathered: list[EpochSum] | None = None,
) -> str | None:
    """Why the number of training steps may differ between processes (one line), or None.
    ``sharded``: the loaders the conversion prepares (an evaluation loop over any other is read
    as the same on every process, :func:`~regcomp_lint.codemod.synced_values.loop_evaluates_alike`).
    ``gathered`` receives the epoch sums a loop ends on that the conversion must gather across
    processes for every process to stop alike."""
    varies = PerProcess(tree, alike)
    found: list[EpochSum] = [] if gathered is None else gathered
    for backward in backwards:
        loop = _run_time_loop(tree, graph, backward, 0, varies, sharded, found)
        if loop is None:
            continue
        step = tree.function_of(backward)
        guard = _early_return(tree, step, backward)
        extra = ""
        if guard is not None and isinstance(step, cst.FunctionDef):
            extra = (
                f"; {step.name.value}() also returns before its X.backward() when "
                f"`{code(guard.test).strip()}` (line {tree.line(guard)})"
            )
        return (
            f"the number of training steps can differ between processes: {loop}{extra}; every X.backward() "
            "all-reduces gradients across processes, so one that steps fewer times leaves the others waiting "
            "(a 2-process run hangs); convert by hand, giving every process the same number of steps"
        )
    return None


def unseeded_draws(tree: Tree, backwards: list[cst.Call]) -> str | None:
    """The first random draw that feeds a training step of a script that never seeds Python's,
    NumPy's or torch's CPU generator (each process then draws its own values), as ``random.sample (line 19)``;
    None otherwise. Feeding: in the step's function before its backward, or in the functions of
    the file that code calls, three calls down (``memory.sample(BATCH_SIZE)`` -> ``ReplayMemory.sample``;
    ``get_data()`` -> the generator it returns)."""
    if seed_calls(tree):
        return None
    functions = {f.name.value: f for f in find_all(tree.module, cst.FunctionDef)}
    for backward in backwards:
        step = tree.function_of(backward)
        before = [c for c in find_all(step, cst.Call, enter_functions=False) if tree.line(c) < tree.line(backward)]
        called = _reached(functions, before)
        for call in before + [c for f in called for c in find_all(f, cst.Call)]:
            name = tree.resolves_under(call.func, *torch_api.UNSEEDED_RANDOM_MODULES) or _cpu_default_draw(tree, call)
            if name is not None:
                return f"{name} (line {tree.line(call)})"
    return None


def _reached(functions: dict[str, cst.FunctionDef], calls: list[cst.Call], depth: int = 3) -> list[cst.FunctionDef]:
    """The functions of the file ``calls`` call, and those they call, ``depth`` calls down
    (``get_data()`` -> ``_endless()``, the generator that draws each epoch's order)."""
    found: list[cst.FunctionDef] = []
    pending = calls
    for _ in range(depth):
        new = [functions[n] for n in (_called_name(c) for c in pending) if n in functions]
        new = [f for f in dict.fromkeys(new) if f not in found]
        found += new
        pending = [c for f in new for c in find_all(f, cst.Call)]
    return found


def _cpu_default_draw(tree: Tree, call: cst.Call) -> str | None:
    """``torch.randint(n, (b,))``: a draw from torch's default CPU generator, which starts from OS
    entropy in every process (:data:`~regcomp_lint.knowledge.torch_api.CPU_DEFAULT_DRAWS`); one
    given ``generator=`` or ``device=`` is not counted."""
    if any(a.keyword is not None and a.keyword.value in ("generator", "device") for a in call.args):
        return None
    return next((name for name in torch_api.CPU_DEFAULT_DRAWS if tree.resolves_to(call.func, name)), None)


def seed_calls(tree: Tree) -> list[cst.Call]:
    """The calls of the file that seed a generator: torch's, Python's and NumPy's own, or a
    project's seeding helper."""
    return [
        c for c in find_all(tree.module, cst.Call) if tree.resolves_to(c.func, *torch_api.SEEDS) or _names_a_seed(c)
    ]


def _called_name(call: cst.Call) -> str:
    func = call.func
    return func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""


def _names_a_seed(call: cst.Call) -> bool:
    """``set_seed(args.seed)``, ``utils.seed_everything(0)``: a project's own seeding helper."""
    name = call.func.attr.value if isinstance(call.func, cst.Attribute) else getattr(call.func, "value", "")
    return isinstance(name, str) and "seed" in name.lower() and name != "initial_seed"


def _run_time_loop(
    tree: Tree,
    graph: CallGraph,
    node: cst.CSTNode,
    depth: int,
    varies: PerProcess,
    sharded: frozenset[str],
    gathered: list[EpochSum],
    returned: tuple[EpochSums, ...] = (),
) -> str | None:
    """The loop around ``node`` (in its function, or around a call of that function) that ends on
    a value computed while it runs, described; None when every enclosing loop ends uniformly.
    ``returned``: the sums of the functions between that loop and the step, which it may end on
    through what they return."""
    function = tree.function_of(node)
    for anc in tree.ancestors(node):
        if anc is function:
            break
        if isinstance(anc, (cst.While, cst.For)):
            sums = (epoch_sums(tree, anc, node, sharded), *returned)
            ending = _gathered_ending(tree, anc, varies, evaluations_in(tree, anc, node, sharded), sums, gathered)
            if ending is not None:
                header = code(anc).strip().splitlines()[0]
                return f"the loop at line {tree.line(anc)} (`{header}`) that runs the step ends on {ending}"
    if depth >= _MAX_CALLER_DEPTH or not isinstance(function, cst.FunctionDef):
        return None
    returned = (*returned, returned_sums(tree, graph, function, node, sharded))
    for _, call in graph.callers_of(function):
        found = _run_time_loop(tree, graph, call, depth + 1, varies, sharded, gathered, returned)
        if found is not None:
            return found
    return None


def _gathered_ending(
    tree: Tree,
    loop: cst.While | cst.For,
    varies: PerProcess,
    evaluations: tuple[cst.For, ...],
    sums: tuple[EpochSums, ...],
    gathered: list[EpochSum],
) -> str | None:
    """:func:`_run_time_ending` with the epoch sums of ``loop`` (and of the functions it calls
    that return theirs) gathered across processes; None when that makes the ending the same
    everywhere, the sums it needs then added to ``gathered`` (and kept in ``varies.summed`` for
    the loops around it)."""
    before = set(varies.summed)
    every = {a for found in sums for one in found.sums.values() for a in one.additions}
    varies.summed = before | every
    why_not = {name: why for found in sums for name, why in found.why_not.items()}
    ending = _run_time_ending(tree, loop, varies, evaluations, why_not)
    if ending is not None or not every:
        varies.summed = before
        return ending
    chosen: list[EpochSum] = []
    for found in sums:
        needed: dict[str, frozenset[str]] = {}
        for name, one in found.sums.items():  # only what the ending reads: a printed sum stays each process's
            varies.summed = before | (every - set(one.additions))
            readers = frozenset(
                reader
                for reader, reads in (
                    ("stop", lambda: _run_time_ending(tree, loop, varies, evaluations) is not None),
                    ("scheduler", lambda: _steps_on_own_values(loop, varies, evaluations)),
                    ("save", lambda: _saves_on_own_values(loop, varies, evaluations)),
                )
                if reads()
            )
            if readers:
                needed[name] = readers
        chosen += [replace(one, readers=needed.get(one.name, frozenset())) for one in found.with_counts(set(needed))]
    varies.summed = before | {a for one in chosen for a in one.additions}
    gathered.extend(one for one in chosen if one not in gathered)
    return None


def _steps_on_own_values(loop: cst.While | cst.For, varies: PerProcess, evaluations: tuple[cst.For, ...]) -> bool:
    """A scheduler stepped on a metric in ``loop``'s own statements (``scheduler.step(train_loss)``,
    ReduceLROnPlateau) with a value that may differ between processes: each process would lower
    its own LR and the replicas part (measured, session 22c). Read where a sum the conversion can
    gather is involved, so that it is gathered too; no refusal of its own."""
    for call in find_own(loop.body, cst.Call, LOOP_OWN):
        func = call.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "step" and len(call.args) == 1):
            continue
        if _differs(loop, varies, evaluations, call.args[0].value):
            return True
    return False


def _differs(
    loop: cst.While | cst.For, varies: PerProcess, evaluations: tuple[cst.For, ...], value: cst.BaseExpression
) -> bool:
    """``value`` may differ between processes: it calls such a function, or reads a name ``loop`` computes so."""
    return varies.call_in(value) is not None or any(
        varies.computed_in(loop, name, NESTED, leave_out=evaluations) is not None for name in read_as_values(value)
    )


def _saves_on_own_values(loop: cst.While | cst.For, varies: PerProcess, evaluations: tuple[cst.For, ...]) -> bool:
    """A checkpoint saved under an ``if`` of ``loop``'s own statements whose test reads a value
    that may differ between processes (``if train_loss < best: torch.save(...)``, no stop): the
    main process, which writes it, would pick the epochs to save on its own batches' loss
    (measured, session 23: rank 0 saved at 14 of 25 epochs, the mean over both ranks improved at
    19). Read where a sum the conversion can gather is involved, so that it is gathered too."""
    for if_ in find_own(loop.body, cst.If, LOOP_OWN):
        if not any(_saves(call) for call in find_all(if_.body, cst.Call)):
            continue
        if _differs(loop, varies, evaluations, if_.test):
            return True
    return False


def _saves(call: cst.Call) -> bool:
    """``torch.save``, ``accelerator.save_model``, ``save_checkpoint(...)``: a call that writes a checkpoint."""
    func = call.func
    name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
    return name in torch_api.STATE_WRITERS or name.startswith("save_")


def _run_time_ending(
    tree: Tree,
    loop: cst.While | cst.For,
    varies: PerProcess,
    evaluations: tuple[cst.For, ...] = (),
    why_not: dict[str, str] | None = None,
) -> str | None:
    """What a loop ends on when that is computed inside it: its ``while`` test, or the test of an
    ``if ...: break`` in its body; what ``evaluations`` compute is left out."""
    tests: list[cst.BaseExpression] = []
    if isinstance(loop, cst.While):
        tests.append(loop.test)
    for if_ in find_own(loop.body, cst.If, LOOP_OWN):
        if any(isinstance(s, cst.Break) for s in find_own(if_.body, cst.Break, LOOP_OWN)):
            tests.append(if_.test)
    for test in tests:
        call = varies.call_in(test)
        if call is not None:
            return f"`{code(test).strip()}` (line {tree.line(test)}), which calls {code(call.func).strip()}()"
        # in source order: one message whatever the hash seed
        values = read_as_values(test)
        for name in read_keys(test):
            assign = varies.computed_in(loop, name, NESTED, fills=name in values, leave_out=evaluations)
            if assign is not None:
                why = _why_not(tree, assign, why_not or {})
                cannot = (
                    f", a value of each process's own batches that the conversion cannot gather across processes: {why}"
                    if why
                    else ""
                )
                return f"`{code(test).strip()}`, computed by {describe_assignment(tree, assign)}{cannot}"
    return None


def _why_not(tree: Tree, assign: cst.CSTNode, why_not: dict[str, str]) -> str | None:
    """Why the sum behind ``assign`` cannot be gathered: the name it binds, or a function of the
    file whose return it takes (``train_loss = train_one_epoch(...)``, keyed ``train_one_epoch()``)."""
    why = why_not.get(_bound_name(assign) or "")
    if why is None and isinstance(assign, (cst.Assign, cst.AugAssign, cst.AnnAssign)) and assign.value is not None:
        called = (tree.function_named(c) for c in find_all(assign.value, cst.Call))
        why = next(
            (why_not[f"{f.name.value}()"] for f in called if f is not None and f"{f.name.value}()" in why_not), None
        )
    return why


def _bound_name(assign: cst.CSTNode) -> str | None:
    """The name an assignment binds (its first target), or the container a call fills."""
    if isinstance(assign, cst.Call):
        return key_of(assign.func.value) if isinstance(assign.func, cst.Attribute) else None
    if isinstance(assign, (cst.Assign, cst.AugAssign, cst.AnnAssign)):
        targets = targets_of(assign)
        return key_of(targets[0]) if targets else None
    return None


def _early_return(tree: Tree, step: Function, backward: cst.Call) -> cst.If | None:
    """``if <test>: return`` among the step function's statements before its backward."""
    if not isinstance(step, cst.FunctionDef):
        return None
    body = tree.body_of(step)
    index = tree.statement_in(body, backward)
    for stmt in body.body[: index or 0]:
        if (
            isinstance(stmt, cst.If)
            and stmt.orelse is None
            and all(
                isinstance(line, cst.SimpleStatementLine) and all(isinstance(s, cst.Return) for s in line.body)
                for line in (stmt.body.body if isinstance(stmt.body, cst.IndentedBlock) else [stmt.body])
            )
        ):
            return stmt
    return None
