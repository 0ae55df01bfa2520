"""The class of the script's (or a project module's) own object that a call runs a method of.

``early_stopping(val_loss, model)``, ``ema.update(model)``, ``stopper(epoch=epoch, fitness=fi)``:
the name is bound to ``Cls(...)`` in the calling function, at the top level, or up the callers
that hand it down, and ``Cls`` is a class of this file or of a module beside it. Shared by the
readers of such methods: what they do with a prepared model they are handed
(:mod:`~regcomp_lint.codemod.handed_to_modules`), the checkpoints they write
(:mod:`~regcomp_lint.codemod.object_saves`) and whether what they return is the same on every
process (:mod:`~regcomp_lint.codemod.per_process`).
"""

from __future__ import annotations

import ast
import builtins

import libcst as cst

from regcomp_lint.analysis.reachability.modules import ParsedModule
from regcomp_lint.codemod.local_modules import FunctionNode, imported_class
from regcomp_lint.codemod.roles import bindings
from regcomp_lint.codemod.tree import Function, Tree, argument_for, find_all, parameter_names

_FUNCTION = (ast.FunctionDef, ast.AsyncFunctionDef)
_BUILTINS = frozenset(dir(builtins))
#: Modules whose constants and functions a plain value may use (``np.inf``, ``math.isfinite``).
_PLAIN_MODULES = frozenset({"math", "np", "numpy"})


def class_method(
    tree: Tree, function: Function, call: cst.Call
) -> tuple[ParsedModule, ast.ClassDef | None, FunctionNode] | None:
    """The module, class and method definition (``ast``) that ``call`` in ``function`` runs:
    ``obj(...)`` runs ``__call__``, ``obj.name(...)`` runs ``name``, with ``obj`` built from a
    class of this file or of a project module that defines that method itself."""
    func = call.func
    if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name):
        receiver, called = func.value.value, func.attr.value
    elif isinstance(func, cst.Name):
        receiver, called = func.value, "__call__"  # ``save_best_model(loss, epoch, model, ...)``
    else:
        return None
    if tree.filename is None:
        return None
    built = constructions(tree, function, receiver)
    if not built or not isinstance(built[0].func, cst.Name):
        return None
    found = imported_class(tree, built[0].func)
    if found is not None:
        parsed, cls = found
    elif not tree.imported_names(built[0].func):
        parsed = ParsedModule.from_tree(ast.parse(tree.module.code), tree.filename)
        cls = parsed.classes.get(built[0].func.value)  # type: ignore[assignment]
    else:
        return None
    method = next(
        (m for m in (cls.body if cls is not None else []) if isinstance(m, _FUNCTION) and m.name == called),
        None,
    )
    return (parsed, cls, method) if method is not None else None


def constructions(tree: Tree, function: Function, name: str, depth: int = 3) -> list[cst.Call]:
    """The calls whose result ``name`` is bound to in ``function`` or at the top level; for a
    parameter with no such binding, what each caller of ``function`` binds the name it passes for
    it to, up to ``depth`` calls up (LinFlo-Net's U-Net trainer builds ``save_best_model =
    SaveBestModel(path)`` under ``__main__`` and hands it down through two functions, survey25f)."""
    built = [
        node.value
        for scope in (function, tree.module)
        for node in bindings(scope, name)
        if isinstance(node, cst.Assign) and isinstance(node.value, cst.Call)
    ]
    if built or depth == 0 or not isinstance(function, cst.FunctionDef) or name not in parameter_names(function):
        return built
    for call in find_all(tree.module, cst.Call):
        if not (isinstance(call.func, cst.Name) and call.func.value == function.name.value):
            continue
        passed = argument_for(tree, function, call, name)
        if isinstance(passed, cst.Name):
            built += constructions(tree, tree.function_of(call), passed.value, depth - 1)
    return built


def returns_what_it_is_handed(cls: ast.ClassDef | None, method: FunctionNode) -> bool:
    """``method`` of ``cls`` returns a value computed from its arguments and the object's own
    attributes alone, and every attribute any method of the class sets on ``self`` is computed the
    same way (YOLOv5's ``EarlyStopping.__call__(epoch, fitness)``: ``best_fitness``, ``best_epoch``
    and ``return delta >= self.patience``). Handed the same values on every process, such an
    object returns the same on every process. Builtins (``float("inf")``, ``max``) and ``math`` or
    NumPy names are plain; any other call, a global, a loop variable or a generator is not."""
    if cls is None or any(isinstance(n, (ast.Yield, ast.YieldFrom, ast.Await)) for n in ast.walk(method)):
        return False
    for function in (m for m in cls.body if isinstance(m, _FUNCTION)):
        args = function.args
        known = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]}
        steps = [n for n in ast.walk(function) if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Return))]
        for node in sorted(steps, key=lambda n: (n.lineno, n.col_offset)):
            plain = node.value is not None and _plain(node.value, known)
            if isinstance(node, ast.Return):
                if function is method and node.value is not None and not plain:
                    return False
                continue
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                if (
                    isinstance(target, ast.Attribute)
                    and isinstance(target.value, ast.Name)
                    and target.value.id == "self"
                ):
                    if not plain:
                        return False
                elif isinstance(target, ast.Name):
                    (known.add if plain else known.discard)(target.id)
                else:
                    return False
    return True


def _plain(expr: ast.expr, known: set[str]) -> bool:
    """``expr`` reads only ``known`` names (the method's parameters, ``self``, plain locals),
    builtins and the names of :data:`_PLAIN_MODULES`, and calls only builtins and those modules."""
    for node in ast.walk(expr):
        if isinstance(node, ast.Name) and not (node.id in known or node.id in _BUILTINS or node.id in _PLAIN_MODULES):
            return False
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name) and func.id in _BUILTINS:
                continue
            if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in _PLAIN_MODULES:
                continue
            return False
    return True
