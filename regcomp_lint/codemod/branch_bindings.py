"""Objects to prepare that an ``if`` builds on some of its paths only.

A CPU Muon experiment (survey20a, micro_muon) builds ``opts = [AdamW(...)]`` when
``opt_name == "adamw"`` and ``muon = Muon(...)``, ``adam = Adam(...)`` otherwise. The one
``prepare()`` after the ``if`` names ``muon`` and ``adam``: on the AdamW path they were never
bound, and the conversion raised ``UnboundLocalError`` at ``prepare()`` where the original
trained. A name bound on every path that goes on (``else: raise ...`` ends its path, as in
torchvision's optimizer choice) is fine, and so is one bound before the ``if`` and rebound in it,
and one the code after the ``if`` reads on every path (``optimizer.step()`` in the loop after an
``if``/``elif`` without ``else``): where it is unbound, the original fails as well.

An FNO ablation (survey23h, fno_ema_arms) builds ``aux_head`` and ``aux_opt`` under ``if args.arm ==
"F":`` only, and uses them only under the same test. Those are prepared by a second ``prepare()``
under that test, right after the first: ``if args.arm == "F": aux_head, aux_opt =
accelerator.prepare(aux_head, aux_opt)``. Its test then takes the same path as the ``if`` did, as
long as nothing in between can change its value: an ``if`` without ``elif``/``else`` whose test calls
nothing, and whose names are neither rebound nor handed to a call (or called a method of) from the
``if`` up to the ``prepare()``. Any other such ``if`` is refused, naming it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import libcst as cst

from regcomp_lint.codemod.builders import statement
from regcomp_lint.codemod.roles import bindings, bound_keys
from regcomp_lint.codemod.settings import Refusal
from regcomp_lint.codemod.tree import Block, Function, Tree, code, find_all

State = Literal["bound", "ends", "maybe", "no"]
_ENDS = (cst.Raise, cst.Return, cst.Continue, cst.Break)


def unbound_after(statements: Sequence[cst.BaseStatement], key: str) -> cst.If | None:
    """The first ``if`` among ``statements`` that binds ``key`` on some of its paths only, when
    ``key`` may still be unbound after the statements; None when it is bound on every path that
    goes on, or bound by none of them."""
    state, holder = _state(statements, key)
    return holder if state == "maybe" else None


def _state(statements: Sequence[cst.BaseStatement], key: str) -> tuple[State, cst.If | None]:
    maybe: cst.If | None = None
    for stmt in statements:
        if isinstance(stmt, cst.SimpleStatementLine):
            if any(key in bound_keys(small) for small in stmt.body):
                return "bound", None
            if any(isinstance(small, _ENDS) for small in stmt.body):
                return "ends", None
        elif isinstance(stmt, cst.If):
            branches = [_state(body, key)[0] for body in _branches(stmt)]
            if all(b in ("bound", "ends") for b in branches):
                return ("ends" if all(b == "ends" for b in branches) else "bound"), None
            if any(b in ("bound", "maybe") for b in branches) and maybe is None:
                maybe = stmt
        elif isinstance(stmt, (cst.With, cst.Try)) and isinstance(stmt.body, cst.IndentedBlock):
            inner, holder = _state(stmt.body.body, key)
            if inner in ("bound", "ends"):
                return inner, None
            if inner == "maybe" and maybe is None:
                maybe = holder
        elif isinstance(stmt, (cst.FunctionDef, cst.ClassDef)) and key in bound_keys(stmt):
            return "bound", None
        # loops may run no pass: what they bind is left to the checks that look at loops
    return ("maybe", maybe) if maybe is not None else ("no", None)


def _branches(stmt: cst.If) -> list[Sequence[cst.BaseStatement]]:
    """The statements of each path through an ``if``/``elif``/``else`` (an empty one without ``else``)."""
    paths: list[Sequence[cst.BaseStatement]] = []
    node: cst.If | cst.Else | None = stmt
    while node is not None:
        body = node.body
        if isinstance(body, cst.IndentedBlock):
            paths.append(body.body)
        elif isinstance(body, cst.SimpleStatementSuite):  # `if c: x = 1` on one line
            paths.append([cst.SimpleStatementLine(body=body.body)])
        if isinstance(node, cst.If):
            node = node.orelse
            if node is None:
                paths.append([])
        else:
            node = None
    return paths


def refuse_unbound_at_prepare(
    tree: Tree, scope: Function, block: Block, prepare_index: int, keys: list[str]
) -> list[tuple[cst.If, list[str]]]:
    """The objects ``prepare()`` would name at ``prepare_index`` of ``block`` that a plain ``if``
    before it builds on its one path only (and nowhere before that ``if``), with that ``if``: they
    are prepared again under its test. Refuse when such an ``if`` cannot be asked again."""
    statements = block.body[:prepare_index]
    found: list[tuple[str, cst.If, cst.CSTNode]] = []
    for key in keys:
        if "." in key:  # `self.model`: other methods bind it too
            continue
        holder = unbound_after(statements, key)
        if holder is None or tree.is_parameter(key, scope):
            continue
        bound = bindings(scope, key)
        if any(tree.line(n) < tree.line(holder) and not tree.contains(holder, n) for n in bound):
            continue  # bound before the `if` (outside this block): rebound on one path only
        if _read_on_every_path_after(tree, block, holder, key):
            continue  # the original fails where it is unbound too (`elif` chains without an else)
        inside = [n for n in bound if tree.contains(holder, n)]
        if inside:
            found.append((key, holder, inside[0]))
    if not found:
        return []
    holders = list(dict.fromkeys(h for _, h, _ in found))
    refused = next((h for h in holders if not _asked_again(block, h, prepare_index)), None)
    if refused is None and len(found) < len(keys):  # the first prepare() keeps something to prepare
        return [(h, [k for k, held, _ in found if held is h]) for h in holders]
    first = refused if refused is not None else holders[0]
    named = [(k, n) for k, h, n in found if h is first]
    names = ", ".join(f"{k} (line {tree.line(n)})" for k, n in named)
    raise Refusal(
        f"{names} {'is' if len(named) == 1 else 'are'} built on some paths of the if at line {tree.line(first)} "
        f"({code(first.test).strip()}) only: the one prepare() after it would raise UnboundLocalError on the "
        "others; build the objects to prepare on every path, or convert by hand"
    )


def guarded_prepare(holder: cst.If, prepare: cst.BaseStatement, module: cst.Module) -> cst.BaseStatement:
    """``if <holder's test>:`` around ``prepare``."""
    unit, nl = module.default_indent, module.default_newline
    inner = "".join(f"{unit}{line}{nl}" for line in code(prepare).rstrip().splitlines())
    return statement(f"if {code(holder.test).strip()}:{nl}{inner.rstrip()}", module)


#: Nodes whose value may differ when a test is evaluated again.
_UNREPEATABLE = (cst.Call, cst.NamedExpr, cst.Await, cst.Yield, cst.Lambda, cst.ListComp, cst.GeneratorExp)


#: Nodes that may change a name's value: bindings, and calls (handed the name, or its method).
_CHANGING = (
    cst.Assign,
    cst.AnnAssign,
    cst.AugAssign,
    cst.NamedExpr,
    cst.For,
    cst.CompFor,
    cst.Del,
    cst.AsName,
    cst.FunctionDef,
    cst.ClassDef,
    cst.Import,
    cst.ImportFrom,
    cst.Call,
)


def _asked_again(block: Block, holder: cst.If, prepare_index: int) -> bool:
    """Would ``holder``'s test, evaluated again at ``prepare_index`` of ``block``, take the same
    path? Only a plain ``if`` (no ``elif``/``else``) of ``block`` itself, whose test calls nothing,
    and whose names nothing from the ``if`` up to the prepare rebinds or hands to a call."""
    body = list(block.body)
    if holder.orelse is not None or holder not in body or find_all(holder.test, _UNREPEATABLE):
        return False
    roots = {name.value for name in find_all(holder.test, cst.Name) if _is_read_root(name, holder.test)}
    for stmt in [holder, *body[body.index(holder) + 1 : prepare_index]]:
        for node in find_all(stmt, _CHANGING, enter_functions=False):
            if any(key.split(".")[0] in roots for key in _rebound(node)):
                return False
            if isinstance(node, cst.Call) and any(_root(e) in roots for e in _handed(node)):
                return False
    return True


def _rebound(node: cst.CSTNode) -> list[str]:
    """The dotted targets ``node`` binds or changes (``args.arm = ...`` too, and ``del``)."""
    targets: list[cst.BaseExpression]
    if isinstance(node, cst.Assign):
        targets = [t.target for t in node.targets]
    elif isinstance(node, (cst.AnnAssign, cst.AugAssign, cst.NamedExpr, cst.For, cst.CompFor)):
        targets = [node.target]
    elif isinstance(node, cst.Del):
        targets = [node.target]
    elif isinstance(node, cst.AsName):
        targets = [node.name]
    else:
        return bound_keys(node) if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Import, cst.ImportFrom)) else []
    found: list[str] = []
    for target in targets:
        found += [r for n in find_all(target, (cst.Name, cst.Attribute, cst.Subscript)) if (r := _root(n))]
    return found


def _handed(call: cst.Call) -> list[cst.BaseExpression]:
    """What a call may change: its arguments and the object a method is called on."""
    handed = [arg.value for arg in call.args]
    if isinstance(call.func, cst.Attribute):
        handed.append(call.func.value)
    return handed


def _root(node: cst.CSTNode) -> str | None:
    """``args`` for ``args``, ``args.arm`` or ``cfg["arm"]``; None for anything else."""
    while isinstance(node, (cst.Attribute, cst.Subscript)):
        node = node.value
    return node.value if isinstance(node, cst.Name) else None


def _is_read_root(name: cst.Name, test: cst.BaseExpression) -> bool:
    """``name`` is a variable the test reads, not the attribute part of ``args.arm``."""
    return not any(isinstance(a, cst.Attribute) and a.attr is name for a in find_all(test, cst.Attribute))


def _read_on_every_path_after(tree: Tree, block: Block, holder: cst.If, key: str) -> bool:
    """``key`` is read after ``holder`` in ``block`` outside any ``if`` (``optimizer.step()`` in
    the training loop): a path that leaves it unbound fails in the original as well."""
    after = list(block.body)[list(block.body).index(holder) + 1 :] if holder in block.body else []
    for stmt in after:
        for name in find_all(stmt, cst.Name, enter_functions=False):
            if name.value != key:
                continue
            conditional = False
            for outer in tree.ancestors(name):
                if outer is stmt:
                    conditional = conditional or isinstance(stmt, cst.If)
                    break
                if isinstance(outer, (cst.If, cst.IfExp)):
                    conditional = True
            if not conditional:
                return True
    return False
