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
"""

from __future__ import annotations

import libcst as cst

from regcomp_lint.codemod.per_process import NESTED, PerProcess, describe_assignment
from regcomp_lint.codemod.roles import CallGraph, bindings
from regcomp_lint.codemod.tree import Tree, code, find_all, parameter_names

#: How many callers up a flag is followed (d_step(train) <- train_epoch(train_d) <- main()).
_MAX_CALLER_DEPTH = 3


def uneven_guards(tree: Tree, graph: CallGraph, backwards: list[cst.Call], varies: PerProcess) -> str | None:
    """Why a backward may run on some processes and not on others (one line), or None."""
    for backward in backwards:
        for if_, runs in _guards(tree, graph, backward):
            source = _source(tree, graph, varies, if_.test, if_, 0)
            if source is None:
                continue
            header = code(if_).strip().splitlines()[0]
            through = "" if runs is backward else f" (through the call at line {tree.line(runs)})"
            return (
                f"a training step can run on some processes only: the X.backward() at line {tree.line(backward)}"
                f"{through} runs under `{header}` (line {tree.line(if_)}), where {source}; each process decides from its own "
                "values (its own loss, its own random draws), so one skips a backward the others run and leaves "
                "them waiting in its all-reduce (a 2-process run hangs); convert by hand, deciding once for every "
                "process (reduce the value across processes, or draw it from a generator seeded alike)"
            )
    return None


def _guards(tree: Tree, graph: CallGraph, node: cst.CSTNode, depth: int = 0) -> list[tuple[cst.If, cst.CSTNode]]:
    """The ``if`` statements whose body or ``else`` runs ``node`` (a backward, or a call of the
    function that runs one) while the other branch runs no backward and no such call: in
    ``node``'s function, then around the calls of that function in its callers (``if train_d:
    d_step(real)``), up to :data:`_MAX_CALLER_DEPTH` callers; each with the node it runs."""
    function = tree.function_of(node)
    found: list[tuple[cst.If, cst.CSTNode]] = []
    child: cst.CSTNode = node
    for anc in tree.ancestors(node):
        if anc is function:
            break
        if isinstance(anc, cst.If) and child is not anc.test:
            other = anc.orelse if child is anc.body else anc.body
            if other is None or not any(_runs_like(tree, node, c) for c in find_all(other, cst.Call)):
                found.append((anc, node))
        child = anc
    if depth < _MAX_CALLER_DEPTH and isinstance(function, cst.FunctionDef):
        for _, call in graph.callers_of(function):
            found += _guards(tree, graph, call, depth + 1)
    return found


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
    if _asks_whether_it_exists(expr):
        return None
    call = varies.call_in(expr)
    if call is not None:
        return f"`{code(expr).strip()}` calls {code(call.func).strip()}()"
    function = tree.function_of(at)
    loops = [a for a in tree.ancestors(at) if isinstance(a, (cst.For, cst.While)) and tree.contains(function, a)]
    for name in dict.fromkeys(n.value for n in find_all(expr, cst.Name)):  # source order: one message
        for loop in loops:
            assign = varies.computed_in(loop, name, NESTED)
            if assign is not None:
                return f"`{name}` is computed from {describe_assignment(tree, assign)}"
        if depth >= _MAX_CALLER_DEPTH or not isinstance(function, cst.FunctionDef):
            continue
        if not tree.is_parameter(name, function) or bindings(function, name):
            continue
        for caller, site in graph.callers_of(function):
            arg = _argument_for(tree, function, site, name)
            if arg is None:
                continue
            found = _source(tree, graph, varies, arg, site, depth + 1)
            if found is not None:
                who = f"{caller.name.value}()" if isinstance(caller, cst.FunctionDef) else "the module"
                return (
                    f"`{name}` is handed down by {who} as `{code(arg).strip()}` (line {tree.line(site)}); there {found}"
                )
    return None


def _asks_whether_it_exists(expr: cst.BaseExpression) -> bool:
    """``x is None``, ``x is not None`` (either side)."""
    if not isinstance(expr, cst.Comparison):
        return False
    operands = [expr.left, *(c.comparator for c in expr.comparisons)]
    return all(isinstance(c.operator, (cst.Is, cst.IsNot)) for c in expr.comparisons) and any(
        isinstance(o, cst.Name) and o.value == "None" for o in operands
    )


def _argument_for(tree: Tree, function: cst.FunctionDef, call: cst.Call, name: str) -> cst.BaseExpression | None:
    """What ``call`` passes for ``function``'s parameter ``name`` (None when it leaves the default)."""
    params = parameter_names(function, keyword_only=False)
    if tree.class_of(function) is not None and isinstance(call.func, cst.Attribute) and params:
        params = params[1:]  # self.step(...) binds self
    for index, arg in enumerate(call.args):
        if arg.star:
            return None
        if (arg.keyword.value if arg.keyword is not None else params[index] if index < len(params) else None) == name:
            return arg.value
    return None
