"""A backward that runs on some processes only: under an ``if`` on a value each process has its own.

Under DDP every ``X.backward()`` all-reduces the gradients: a process that skips one leaves the
others waiting in that all-reduce. A GAN that trains its discriminator only in some epochs decides
it from the process's own loss and a random draw (gan_yolo: ``disc_train_next =
should_train_discriminator(loss_disc, ...)``, handed as ``train`` two calls down to ``if train:``
around the discriminator's backward): converted, the processes decide differently once their
losses differ, and a 2-process run aborted in gloo at the third epoch. The ``if`` is read where
the backward is; a name in its test that is a parameter is followed to what each caller hands
in, up to :data:`_MAX_CALLER_DEPTH` callers; a value counts as its own to each process as
:class:`~regcomp_lint.codemod.per_process.PerProcess` says, when it is computed in a loop around
the ``if`` or the call. An ``if`` whose other branch runs a backward too (``if use_amp:``
``scaler.scale(loss).backward()`` ``else: loss.backward()``) steps every process alike.

A ``continue`` or ``return`` under an ``if`` before the backward skips it as surely as an ``if``
around it (``if not batch_ok: continue``, ``if not torch.isfinite(loss): return``): a replica
converted and launched on 2 gloo processes skipped every backward on one rank, which finished
while the other failed in its first backward. A trainer's ``self.flag`` counts as its own to each
process when another method that runs in a loop (``end_epoch()``) sets it from such a value.
"""

from __future__ import annotations

import libcst as cst

from regcomp_lint.codemod.per_process import (
    ASSIGNMENTS,
    LOOP_OWN,
    NESTED,
    PerProcess,
    describe_assignment,
    evaluations_in,
    targets_of,
)
from regcomp_lint.codemod.roles import CallGraph, bindings
from regcomp_lint.codemod.tree import (
    Function,
    Tree,
    argument_for,
    code,
    find_all,
    find_own,
    key_of,
    methods_of,
)
from regcomp_lint.knowledge import torch_api

#: How many callers up a flag is followed (d_step(train) <- train_epoch(train_d) <- main()).
_MAX_CALLER_DEPTH = 3


def uneven_guards(tree: Tree, graph: CallGraph, backwards: list[cst.Call], varies: PerProcess) -> str | None:
    """Why a backward may run on some processes and not on others (one line), or None."""
    for backward in backwards:
        for guard, runs, exit_ in _guards(tree, graph, backward):
            if isinstance(guard, cst.ExceptHandler):
                source: str | None = _may_fail(tree, guard)
                try_ = tree.parent(guard)
                under = f"`{code(guard).strip().splitlines()[0]}` (line {tree.line(guard)}) of the `try:` at line "
                under += f"{tree.line(try_) if try_ is not None else '?'}"
            else:
                source = decided_apart(tree, graph, varies, guard)
                under = f"`{code(guard).strip().splitlines()[0]}` (line {tree.line(guard)})"
            if source is None:
                continue
            through = "" if runs is backward else f" (through the call at line {tree.line(runs)})"
            how = "runs under" if exit_ is None else f"is skipped by the `{code(exit_).strip().split()[0]}` under"
            return (
                f"a training step can run on some processes only: the X.backward() at line {tree.line(backward)}"
                f"{through} {how} {under}, where {source}; each process decides from its own "
                "values (its own loss, its own random draws), so one skips a backward the others run and leaves "
                "them waiting in its all-reduce (a 2-process run hangs); convert by hand, deciding once for every "
                "process (reduce the value across processes, or draw it from a generator seeded alike); not done "
                "here, since a reduced skip also drops, on every other process, a batch the original trained"
            )
    return None


def decided_apart(tree: Tree, graph: CallGraph, varies: PerProcess, if_: cst.If) -> str | None:
    """Where the test of ``if_`` gets a value of the process's own, described as in a refusal of
    :func:`uneven_guards`; None when every process decides it alike. A barrier (``wait_for_everyone``)
    under such an ``if`` waits for processes that took the other branch."""
    return _source(tree, graph, varies, if_.test, if_, 0)


def _guards(
    tree: Tree, graph: CallGraph, node: cst.CSTNode, depth: int = 0
) -> list[tuple[cst.If | cst.ExceptHandler, cst.CSTNode, cst.Continue | cst.Return | None]]:
    """The ``if`` statements that decide whether ``node`` (a backward, or a call of the function
    that runs one) runs: those whose body or ``else`` runs it while the other branch runs no
    backward and no such call, and those before it that ``continue`` its loop or ``return`` from
    its function without one (see :func:`skips`); in ``node``'s function, then around the calls of
    that function in its callers (``if train_d: d_step(real)``), up to :data:`_MAX_CALLER_DEPTH`
    callers; each with the node it runs and the ``continue``/``return`` (None for an ``if`` around it)."""
    function = tree.function_of(node)
    found: list[tuple[cst.If | cst.ExceptHandler, cst.CSTNode, cst.Continue | cst.Return | None]] = []
    child: cst.CSTNode = node
    for anc in tree.ancestors(node):
        if anc is function:
            break
        if isinstance(anc, cst.If) and child is not anc.test:
            other = anc.orelse if child is anc.body else anc.body
            if other is None or not any(_runs_like(tree, node, c) for c in find_all(other, cst.Call)):
                found.append((anc, node, None))
        child = anc
    found += [(if_, node, exit_) for if_, exit_ in skips(tree, node)]
    found += [(handler, node, exit_) for handler, exit_ in _caught(tree, node)]
    if depth < _MAX_CALLER_DEPTH and isinstance(function, cst.FunctionDef):
        for _, call in graph.callers_of(function):
            found += _guards(tree, graph, call, depth + 1)
    return found


def skips(tree: Tree, node: cst.CSTNode) -> list[tuple[cst.If, cst.Continue | cst.Return]]:
    """The ``if`` statements ahead of ``node`` in its function that decide a ``continue`` of a
    loop around ``node`` or a ``return`` from its function (``if not batch_ok: continue``), where
    the branch that leaves runs no backward and no call like ``node`` first; each with its exit."""
    found: list[tuple[cst.If, cst.Continue | cst.Return]] = []
    for stmt, exit_ in _exits_ahead(tree, node):
        branch: cst.CSTNode = exit_
        for anc in tree.ancestors(exit_):
            if isinstance(anc, cst.If) and branch is not anc.test:
                if not any(_runs_like(tree, node, c) for c in find_all(branch, cst.Call)):
                    found.append((anc, exit_))
            if anc is stmt:
                break
            branch = anc
    return found


def _exits_ahead(tree: Tree, node: cst.CSTNode) -> list[tuple[cst.BaseStatement, cst.Continue | cst.Return]]:
    """The ``continue`` of a loop around ``node`` and the ``return`` from its function that stand in
    the statements ahead of ``node``, each with its statement. A ``def`` or ``class`` ahead runs none
    of its body (eeg_lpft's ``def log_fn(d): if not is_main(rank): return`` in ``main()``): its
    ``return`` leaves that function, not ``node``'s."""
    function = tree.function_of(node)
    before: list[cst.BaseStatement] = []
    child: cst.CSTNode = node
    for anc in tree.ancestors(node):
        if anc is function:
            break
        if isinstance(anc, cst.IndentedBlock) and child in anc.body:
            before += anc.body[: anc.body.index(child)]
        child = anc
    return [
        (stmt, exit_)
        for stmt in before
        if not isinstance(stmt, (cst.FunctionDef, cst.ClassDef))
        for exit_ in [*find_own(stmt, cst.Continue, LOOP_OWN), *find_own(stmt, cst.Return, NESTED)]
    ]


def _caught(tree: Tree, node: cst.CSTNode) -> list[tuple[cst.ExceptHandler, cst.Continue | cst.Return]]:
    """The ``except`` handlers ahead of ``node`` that ``continue`` its loop or ``return`` (dpo_video's
    ``except Exception as e: print(...); continue`` around the loading of an example): the process
    whose own data raised skips the step. A handler of ``StopIteration`` only is left out: a
    prepared loader runs out at the same step on every process."""
    found: list[tuple[cst.ExceptHandler, cst.Continue | cst.Return]] = []
    for stmt, exit_ in _exits_ahead(tree, node):
        for anc in tree.ancestors(exit_):
            if isinstance(anc, cst.ExceptHandler):
                if not (isinstance(anc.type, cst.Name) and anc.type.value == "StopIteration"):
                    found.append((anc, exit_))
                break
            if anc is stmt:
                break
    return found


def _may_fail(tree: Tree, handler: cst.ExceptHandler) -> str:
    """What in the ``try`` of ``handler`` may raise on one process's own data, described."""
    try_ = tree.parent(handler)
    body = try_.body if isinstance(try_, cst.Try) else handler.body
    call = next(iter(find_all(body, cst.Call)), None)
    what = code(call).strip() if call is not None else code(body).strip().splitlines()[0]
    return f"`{what}` may raise on the process's own data"


def _runs_like(tree: Tree, node: cst.CSTNode, call: cst.Call) -> bool:
    """``call`` is a backward, or calls what ``node`` calls: either branch then steps."""
    if _is_backward(call):
        return True
    return isinstance(node, cst.Call) and not _is_backward(node) and code(call.func) == code(node.func)


def _is_backward(call: cst.Call) -> bool:
    return isinstance(call.func, cst.Attribute) and call.func.attr.value == "backward"


def _source(
    tree: Tree, graph: CallGraph, varies: PerProcess, expr: cst.BaseExpression, at: cst.CSTNode, depth: int
) -> str | None:
    """Where ``expr`` (read at ``at``) gets a value of the process's own, described; None when
    every process computes it alike. The parts of ``a and b`` and ``not a`` are read one by one,
    and ``x is None`` / ``x is not None`` not at all: whether a value exists is decided by the
    script's control flow, alike on every process (``if loss is not None: loss.backward()``)."""
    if isinstance(expr, cst.BooleanOperation):
        return _source(tree, graph, varies, expr.left, at, depth) or _source(tree, graph, varies, expr.right, at, depth)
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Not):
        return _source(tree, graph, varies, expr.expression, at, depth)
    if _asks_whether_it_exists(expr) or _structural(expr):
        return None
    call = varies.call_in(expr)
    if call is not None:
        return f"`{code(expr).strip()}` calls {code(call.func).strip()}()"
    function = tree.function_of(at)
    set_elsewhere = _set_by_a_method(tree, graph, varies, expr, function, depth)
    if set_elsewhere is not None:
        return set_elsewhere
    loops = [a for a in tree.ancestors(at) if isinstance(a, (cst.For, cst.While)) and tree.contains(function, a)]
    for name in dict.fromkeys(n.value for n in find_all(expr, cst.Name)):  # source order: one message
        for loop in loops:
            if _rebound_by_the_loop(tree, loop, name, at):
                continue
            evaluations = evaluations_in(tree, loop, at, varies.sharded)
            assign = varies.computed_in(loop, name, NESTED, leave_out=evaluations)
            if assign is not None:
                return f"`{name}` is computed from {describe_assignment(tree, assign)}"
        if depth >= _MAX_CALLER_DEPTH or not isinstance(function, cst.FunctionDef):
            continue
        if not tree.is_parameter(name, function) or bindings(function, name):
            continue
        for caller, site in graph.callers_of(function):
            arg = argument_for(tree, function, site, name)
            if arg is None:
                continue
            found = _source(tree, graph, varies, arg, site, depth + 1)
            if found is not None:
                who = f"{caller.name.value}()" if isinstance(caller, cst.FunctionDef) else "the module"
                return (
                    f"`{name}` is handed down by {who} as `{code(arg).strip()}` (line {tree.line(site)}); there {found}"
                )
    return None


def _rebound_by_the_loop(tree: Tree, loop: cst.For | cst.While, name: str, at: cst.CSTNode) -> bool:
    """``name`` is the target of ``loop`` (``for epoch in pbar:``) and every assignment of it in the
    loop comes after ``at`` in the same pass: the ``for`` rebinds it before ``at`` is read again, so
    ``at`` sees only the loop's own values (survey24b pointnet_ddp: ``epoch = ckpt_dict["epoch"]``
    read back below ``if (epoch + 1) % args.save_period == 0:``, refused on main as decided apart)."""
    if not isinstance(loop, cst.For) or name not in [n.value for n in find_all(loop.target, cst.Name)]:
        return False
    inner = [a for a in tree.ancestors(at) if isinstance(a, (cst.For, cst.While)) and tree.contains(loop.body, a)]
    for assign in find_own(loop.body, ASSIGNMENTS, NESTED):
        if name not in [n.value for t in targets_of(assign) for n in find_all(t, cst.Name)]:
            continue
        if tree.line(assign) <= tree.line(at) or any(tree.contains(a, assign) for a in inner):
            return False
    return True


def _set_by_a_method(
    tree: Tree, graph: CallGraph, varies: PerProcess, expr: cst.BaseExpression, function: Function, depth: int
) -> str | None:
    """``self.flag`` in ``expr`` set from a value of the process's own by a method of the same
    class (not ``__init__``, which runs once) that runs in a loop: its assignment is in one, or it
    is called from one (a trainer's ``end_epoch(d_loss)`` deciding ``self.train_d = d_loss > 1.4``
    from the epoch's loss its caller hands in, read as :func:`_source` reads a test)."""
    owner = tree.class_of(function)
    if owner is None:
        return None
    for attribute in find_all(expr, cst.Attribute):
        key = key_of(attribute)
        if key is None or not key.startswith("self."):
            continue
        for method in methods_of(owner):
            assigns = _assignments_in_a_loop(tree, graph, method, key) if method.name.value != "__init__" else []
            if not assigns:
                continue
            found = varies.computed_in(method, key, NESTED)
            if found is not None:
                return f"`{key}` is set by {method.name.value}() from {describe_assignment(tree, found)}"
            if depth >= _MAX_CALLER_DEPTH:
                continue
            for assign in assigns:
                why = _source(tree, graph, varies, assign.value, assign, depth + 1) if assign.value else None
                if why is not None:
                    return (
                        f"`{key}` is set by {method.name.value}() as {describe_assignment(tree, assign)}, where {why}"
                    )
    return None


def _assignments_in_a_loop(
    tree: Tree, graph: CallGraph, method: cst.FunctionDef, key: str
) -> list[cst.Assign | cst.AugAssign | cst.AnnAssign]:
    """The assignments of ``key`` (``self.flag``) in ``method`` when it runs in a loop: they stand
    in a loop of its own, or one of its calls does; none otherwise."""
    assigns = [
        a
        for a in find_all(method, ASSIGNMENTS, enter_functions=False)
        if isinstance(a, ASSIGNMENTS) and key in map(key_of, targets_of(a))
    ]
    sites = [*assigns, *(call for _, call in graph.callers_of(method))]
    in_a_loop = any(
        isinstance(anc, (cst.For, cst.While)) and tree.contains(tree.function_of(site), anc)
        for site in sites
        for anc in tree.ancestors(site)
    )
    return assigns if in_a_loop else []


def _structural(expr: cst.BaseExpression) -> bool:
    """``loss.requires_grad`` (:data:`~regcomp_lint.knowledge.torch_api.STRUCTURAL_TENSOR_ATTRIBUTES`):
    set by the code that made the tensor, the same on every process."""
    return isinstance(expr, cst.Attribute) and expr.attr.value in torch_api.STRUCTURAL_TENSOR_ATTRIBUTES


def _asks_whether_it_exists(expr: cst.BaseExpression) -> bool:
    """``x is None``, ``x is not None`` (either side)."""
    if not isinstance(expr, cst.Comparison):
        return False
    operands = [expr.left, *(c.comparator for c in expr.comparisons)]
    return all(isinstance(c.operator, (cst.Is, cst.IsNot)) for c in expr.comparisons) and any(
        isinstance(o, cst.Name) and o.value == "None" for o in operands
    )
