"""Loops whose number of training steps a counter fixes, whatever share of the data a process gets.

``while global_step < total_steps:`` around ``for batch in loader: ... global_step += 1`` (or
``while True:`` left by ``if global_step >= total_steps: break``, or ``while not done:`` left by
``if global_step >= total_steps: done = True``), and ``for step in
range(max_steps):`` drawing ``next(data_iter)``: on N processes each one still takes the
original's ``total_steps`` optimizer steps, over its shard of the data. A scheduler stepped once per
such step must stay unprepared: prepared, it steps once per process at each call, and its schedule
runs out after 1/N of the run while the loop goes on. In ``for epoch in range(E): for batch in
loader:`` the loader's length decides the steps, which shrink with the shard: there the prepared
scheduler is the right one.

The path of a step (the loops that run it, outermost first) is *counted* when each of its loops is

- a ``for`` over ``range(n)`` / ``itertools.count()`` / ``trange(n)`` (``enumerate``/``tqdm``
  around one too) whose bounds read no ``len(...)`` (the length of a prepared loader shrinks);
- a ``while`` bounded by a counter: its test compares a name or attribute with a bound that reads
  no ``len(...)`` (``while step < max_steps``), or it is ``while True`` with an ``if`` on such a
  comparison that breaks or returns, or ``while not done`` (``while running``) with an ``if`` on
  such a comparison that sets the flag to the value ending it, and its body adds to that counter;
- any other loop (over a loader, ``while not done``) only inside such a ``while`` whose counter it
  adds to in its own body: the counter, not the data, ends it.

``fixed(expr, where)`` (from the roles: the expression's value reads no ``len()``) judges bounds.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from regcomp_lint.analysis.bindings import Where, binding_key
from regcomp_lint.files.parsing import walk

#: Calls whose iteration counts: a loop over one runs as many times as its bound says.
COUNTING_CALLS = ("range", "trange")
#: Calls handing on what they wrap (``enumerate(range(n))``, ``tqdm(range(n))``).
PASSING_CALLS = ("enumerate", "tqdm")
COUNT_FOREVER = "count"  # itertools.count(): ended by a counter test, like `while True`

Fixed = Callable[[ast.expr, Where], bool]
#: The loops that run a step, outermost first: each with where it sits and the functions its body
#: reaches the step through (``fit()``'s loop calling ``self.train_step()``).
LoopPath = list[tuple[ast.stmt, Where, tuple[ast.AST, ...]]]


def counting_loop(path: LoopPath, fixed: Fixed) -> ast.stmt | None:
    """The outermost loop of ``path`` (outermost first, each with where it sits) when the path is
    counted (see the module docstring), else None."""
    if not path:
        return None
    counters = [_counter(loop, where, inner, fixed) for loop, where, inner in path]
    for index, (loop, where, inner) in enumerate(path):
        if counters[index] is not None or _fixed_range(loop, where, fixed):
            continue
        # a loop over the data: a counter of an enclosing `while` must end it, adding up in its body
        if not any(counter is not None and _adds_to(loop, inner, counter) for counter in counters[:index]):
            return None
    return path[0][0]


def _counter(loop: ast.AST, where: Where, inner: tuple[ast.AST, ...], fixed: Fixed) -> str | None:
    """The counter a ``while`` (or ``for _ in itertools.count()``) is bounded by, if it is."""
    flag: tuple[str, bool] | None = None  # `while not done:`: the flag and the value that ends the loop
    if isinstance(loop, ast.While):
        flag = _flag_test(loop.test)
        if flag is None and not (isinstance(loop.test, ast.Constant) and loop.test.value):
            return next((key for key in _compared(loop.test, where, fixed) if _adds_to(loop, inner, key)), None)
    elif not (isinstance(loop, (ast.For, ast.AsyncFor)) and _calls(loop.iter, COUNT_FOREVER)):
        return None
    # `while True:` / `for it in count():` left by `if step >= max_steps: break`; `while not done:`
    # left by `if step >= max_steps: done = True`
    for node in walk(loop):
        if isinstance(node, ast.If) and _ends(node.body, flag):
            for key in _compared(node.test, where.at(node.test), fixed):
                if _adds_to(loop, inner, key):
                    return key
    return None


def _flag_test(test: ast.expr) -> tuple[str, bool] | None:
    """``while not done:`` -> (``done``, True), ``while running:`` -> (``running``, False): the
    flag a ``while`` tests and the value that ends it; None for any other test."""
    negated = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
    key = binding_key(test.operand if isinstance(test, ast.UnaryOp) and negated else test)
    return None if key is None else (key, negated)


def _ends(body: list[ast.stmt], flag: tuple[str, bool] | None) -> bool:
    """The body of an ``if`` leaves the loop: it breaks or returns (a ``while True``), or it sets
    the loop's flag to the value that ends it (``done = True`` of a ``while not done``)."""
    if flag is None:
        return any(isinstance(s, (ast.Break, ast.Return)) for s in body)
    key, ending = flag
    return any(
        isinstance(s, ast.Assign)
        and any(binding_key(target) == key for target in s.targets)
        and isinstance(s.value, ast.Constant)
        and s.value.value is ending
        for s in body
    )


def _compared(test: ast.expr, where: Where, fixed: Fixed) -> list[str]:
    """``step < max_steps`` / ``max_steps > step`` / ``step >= n`` (inside ``and``/``or``/``not``):
    the keys of the sides that are a name or attribute compared with a fixed bound (the caller
    keeps the one the loop adds to)."""
    found: list[str] = []
    for node in walk(test):
        if not (isinstance(node, ast.Compare) and len(node.ops) == 1):
            continue
        if not isinstance(node.ops[0], (ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Eq, ast.NotEq)):
            continue
        left, right = node.left, node.comparators[0]
        for counter, bound in ((left, right), (right, left)):
            key = binding_key(counter)
            if key is not None and binding_key(bound) != key and fixed(bound, where):
                found.append(key)
    return found


def _adds_to(loop: ast.AST, inner: tuple[ast.AST, ...], key: str) -> bool:
    """The body of ``loop``, or a function it reaches the step through (``inner``), adds to
    ``key``: ``key += n`` or ``key = key + n``."""
    for node in (n for body in (loop, *inner) for n in walk(body)):
        if isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Add) and binding_key(node.target) == key:
            return True
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and binding_key(node.targets[0]) == key
            and isinstance(node.value, ast.BinOp)
            and isinstance(node.value.op, ast.Add)
            and key in (binding_key(node.value.left), binding_key(node.value.right))
        ):
            return True
    return False


def _fixed_range(loop: ast.AST, where: Where, fixed: Fixed) -> bool:
    """``for i in range(n)`` (or ``enumerate``/``tqdm`` of one, ``trange(n)``) with bounds that
    read no ``len(...)``."""
    if not isinstance(loop, (ast.For, ast.AsyncFor)):
        return False
    iterated = _named_bar(loop.iter, where) or loop.iter
    while isinstance(iterated, ast.Call) and _name(iterated.func) in PASSING_CALLS and iterated.args:
        iterated = iterated.args[0]
    if not (isinstance(iterated, ast.Call) and _name(iterated.func) in COUNTING_CALLS):
        return False
    at = where.at(iterated)
    return all(fixed(arg, at) for arg in [*iterated.args, *(kw.value for kw in iterated.keywords)])


def _named_bar(iterated: ast.expr, where: Where) -> ast.expr | None:
    """``pbar = trange(max_steps)`` then ``for step in pbar:`` (survey 26e vit_pydantic): the
    call a name the loop iterates is bound to, when its function binds it once, to a counting
    (or passing) call, before the loop; None otherwise."""
    function = where.function
    if not isinstance(iterated, ast.Name) or not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    found: list[ast.expr] = []
    for node in walk(function):
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(n.id == iterated.id for t in targets for n in walk(t) if isinstance(n, ast.Name)):
                found.append(node.value if node.value is not None else node.target)
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.With, ast.NamedExpr, ast.Global, ast.Nonlocal)):
            bound = [node.target] if isinstance(node, (ast.For, ast.AsyncFor, ast.NamedExpr)) else []
            bound += [i.optional_vars for i in node.items if i.optional_vars] if isinstance(node, ast.With) else []
            names = node.names if isinstance(node, (ast.Global, ast.Nonlocal)) else []
            if iterated.id in names or any(
                n.id == iterated.id for t in bound for n in walk(t) if isinstance(n, ast.Name)
            ):
                return None
    if len(found) != 1 or not isinstance(found[0], ast.Call):
        return None
    value = found[0]
    if _name(value.func) not in (*COUNTING_CALLS, *PASSING_CALLS) or (value.lineno, value.col_offset) >= where.pos:
        return None
    return value


def _calls(expr: ast.expr, name: str) -> bool:
    return isinstance(expr, ast.Call) and _name(expr.func) == name


def _name(func: ast.expr) -> str | None:
    """``range`` of ``range`` and ``tqdm.trange``; ``count`` of ``itertools.count``."""
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None
