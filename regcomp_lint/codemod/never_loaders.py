"""Iterables of a training loop that are never data loaders, whatever call made them.

The planner prepares a name the training loop iterates when it comes from a call it cannot
see into (``train_dl, valid_dl = get_data()``): ``prepare()`` shards a DataLoader and hands
anything else back. Some of those calls can be read, and they make no loader: a one-shot NAS
supernet samples its architectures each step, ``rand_arch = cand_sampler.TBS_sampling()`` (a
method of the script's own class that builds and returns a list), turns them into a tensor to
broadcast, ``rand_arch = torch.tensor(rand_arch).cuda(gpu)``, and runs one backward per
architecture, ``for r_a in rand_arch: ...``. Taken for a loader it was "built anew in each
pass" of the step loop, and the script was refused for an object that is not one."""

from __future__ import annotations

import ast

from regcomp_lint.analysis.bindings import Bound
from regcomp_lint.analysis.own_callees import AST, function_called, method_called
from regcomp_lint.files.parsing import children
from regcomp_lint.knowledge.torch_api import DATA_MODULE, TENSOR_METHODS

_OWN_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_LISTS = (ast.List, ast.ListComp)


def never_a_loader(roles, bound: Bound, parsed: ast.Module) -> bool:
    """``bound`` (a call) makes a tensor, or a list that a function or a method of a class of
    this file (``parsed``) builds and returns: never a DataLoader."""
    call = bound.value
    if not isinstance(call, ast.Call):
        return False
    return _makes_a_tensor(roles, call) or _returns_a_list(_own_callee(roles, bound, parsed))


def _makes_a_tensor(roles, call: ast.Call) -> bool:
    """``torch.tensor(x).cuda(gpu)``, ``torch.randperm(n)``: a ``torch.*`` function outside
    ``torch.utils.data``, through any tensor methods after it."""
    while isinstance(call.func, ast.Attribute) and call.func.attr in TENSOR_METHODS:
        if not isinstance(call.func.value, ast.Call):
            return False
        call = call.func.value
    qualname = roles.ctx.imports.qualname(call.func)
    return bool(qualname) and qualname.startswith("torch.") and not qualname.startswith(DATA_MODULE + ".")


def _own_callee(roles, bound: Bound, parsed: ast.Module) -> ast.FunctionDef | None:
    """The function of this file ``bound``'s call runs (:mod:`~regcomp_lint.analysis.own_callees`):
    ``pick(...)``, or ``sampler.sample()`` where ``sampler = Sampling(...)`` builds a class of this file."""
    call = bound.value
    assert isinstance(call, ast.Call)
    func = call.func
    if isinstance(func, ast.Name):
        if roles.ctx.imports.imported(func.id):
            return None
        return function_called([f for f in parsed.body if isinstance(f, ast.FunctionDef) and f.name == func.id])
    if not isinstance(func, ast.Attribute) or not isinstance(func.value, ast.Name):
        return None
    owner = roles.bindings.lookup(func.value, bound.where)
    made = owner.value if owner is not None and owner.index is None else None
    classes = {c.name: c for c in parsed.body if isinstance(c, ast.ClassDef)}
    if not (isinstance(made, ast.Call) and isinstance(made.func, ast.Name)) or made.func.id not in classes:
        return None
    if roles.ctx.imports.imported(made.func.id):
        return None
    return method_called(AST, classes[made.func.id], func.attr, classes)


def _returns_a_list(function: ast.FunctionDef | None) -> bool:
    """Every ``return`` of ``function`` hands back a list it builds: a list display or
    comprehension, or a name it binds only to one (``output = []``, then ``output.append(...)``)."""
    if function is None:
        return False
    bound: dict[str, list[ast.expr]] = {}
    returned: list[ast.expr] = []
    todo: list[ast.AST] = list(function.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name):
                    bound.setdefault(target.id, []).append(
                        node.value if isinstance(node, ast.Assign) and len(node.targets) == 1 else target
                    )
        elif isinstance(node, ast.Return):
            returned.append(node.value if node.value is not None else ast.Constant(None))
        if not isinstance(node, _OWN_SCOPES):
            todo.extend(children(node))
    for value in returned:
        if isinstance(value, ast.Name):
            values = bound.get(value.id, [])
            if not values or not all(isinstance(v, _LISTS) for v in values):
                return False
        elif not isinstance(value, _LISTS):
            return False
    return bool(returned)
