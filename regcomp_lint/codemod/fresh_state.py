"""Model methods that only make a fresh state, such as a recurrent model's ``init_hidden``.

Calling the model's own method through the prepared model is refused when its result feeds the
loss (:mod:`~regcomp_lint.codemod.wrapped_access`): a method that runs the model computes the
loss outside ``forward()``, which DDP's gradient sync and the compile never see. A method that
returns only new tensors (``weight.new_zeros(...)``, ``torch.zeros(...)``: pytorch/examples'
word language model, the char-RNN tutorial) carries no gradient to the parameters: what it
returns is an input of ``forward()``, and reading it from the unwrapped model is enough.
"""

from __future__ import annotations

import ast
import weakref
from collections.abc import Iterator

from regcomp_lint.codemod.lint_view import lint_view
from regcomp_lint.codemod.local_modules import importer_of, is_project_module, load_local
from regcomp_lint.codemod.tree import Tree
from regcomp_lint.knowledge.torch_api import FRESH_TENSOR_FUNCTIONS, FRESH_TENSOR_KEEPERS, FRESH_TENSOR_METHODS

#: ``Variable(torch.zeros(...))`` of older scripts wraps a fresh tensor.
_WRAPPERS = frozenset({"Variable"})


def makes_fresh_state(tree: Tree, method: str) -> bool:
    """Every method called ``method`` in the script's classes and those of the project modules
    it imports returns only fresh tensors (and there is at least one). Answered once per tree
    and method (asked for every ``owner.method(...)`` call the planner looks at)."""
    answers = _answers.get(tree)
    if answers is None:
        answers = _answers[tree] = {}
    answer = answers.get(method)
    if answer is None:
        defs = [d for module in _modules(tree) for d in _methods_named(module, method)]
        answer = answers[method] = bool(defs) and all(_returns_fresh(d) for d in defs)
    return answer


_answers: weakref.WeakKeyDictionary[Tree, dict[str, bool]] = weakref.WeakKeyDictionary()


def defines_member(tree: Tree, name: str) -> bool:
    """Some class of the script, or of a project module it imports that is readable next to it,
    has a method called ``name`` or sets ``self.<name>`` (a submodule such as a vision encoder):
    when none does (``import model`` without model.py beside the script), what
    ``model.<name>(...)`` runs is unknown, and a refusal must not say it computes the loss."""
    for module in _modules(tree):
        if _methods_named(module, name):
            return True
        for cls in _classes(module):
            for node in ast.walk(cls):
                if (
                    isinstance(node, ast.Attribute)
                    and node.attr == name
                    and isinstance(node.ctx, ast.Store)
                    and isinstance(node.value, ast.Name)
                    and node.value.id == "self"
                ):
                    return True
    return False


def _modules(tree: Tree) -> list[ast.Module]:
    parsed = lint_view(tree).parsed
    if parsed is None:
        return []
    found = [parsed]
    if tree.filename is None:
        return found
    importer = importer_of(tree.filename)
    names: list[str] = []
    for stmt in parsed.body:
        if isinstance(stmt, ast.Import):
            names += [alias.name for alias in stmt.names]
        elif isinstance(stmt, ast.ImportFrom) and stmt.module and not stmt.level:
            names += [stmt.module, *(f"{stmt.module}.{alias.name}" for alias in stmt.names)]
    for name in dict.fromkeys(names):
        if is_project_module(name):
            local = load_local(importer, name)
            if local is not None:
                found.append(local.tree)
    return found


def _methods_named(module: ast.Module, name: str) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    return _methods_by_name(module).get(name, [])


def _methods_by_name(module: ast.Module) -> dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef]]:
    """The methods of every class of ``module`` by name, indexed once per module: each lookup
    walked the whole module again (355 walks on the 37 fix fixtures, a third of the planning's
    time under cProfile). Only statements are visited (a class is one); the order of a name's
    methods does not matter to :func:`makes_fresh_state` (all of them must return fresh state)."""
    index = _method_index.get(module)
    if index is None:
        index = {}
        for cls in _classes(module):
            for stmt in cls.body:
                if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    index.setdefault(stmt.name, []).append(stmt)
        _method_index[module] = index
    return index


def _classes(module: ast.Module) -> Iterator[ast.ClassDef]:
    """Every class statement of ``module``, nested ones too (in no particular order): the
    statements under statements, exception handlers and match cases, not the expressions."""
    stack: list[ast.AST] = list(module.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.ClassDef):
            yield node
        for name in _STATEMENT_LISTS:
            value = getattr(node, name, None)
            if type(value) is list:
                stack.extend(value)


#: the fields that hold statements, exception handlers (``handlers``) or match cases (``cases``)
_STATEMENT_LISTS = ("body", "orelse", "finalbody", "handlers", "cases")


_method_index: weakref.WeakKeyDictionary[ast.Module, dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef]]] = (
    weakref.WeakKeyDictionary()
)


def _returns_fresh(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    returns = [n for n in ast.walk(function) if isinstance(n, ast.Return)]
    return bool(returns) and all(r.value is not None and _fresh(r.value) for r in returns)


def _fresh(node: ast.expr) -> bool:
    if isinstance(node, (ast.Tuple, ast.List)):
        return bool(node.elts) and all(_fresh(e) for e in node.elts)
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    if isinstance(func, ast.Attribute):
        if func.attr in FRESH_TENSOR_KEEPERS:
            return _fresh(func.value)
        if func.attr in FRESH_TENSOR_METHODS:
            return True  # weight.new_zeros(...): a new tensor of the weight's dtype and device
        return func.attr in FRESH_TENSOR_FUNCTIONS and isinstance(func.value, ast.Name) and func.value.id == "torch"
    if isinstance(func, ast.Name):
        if func.id in _WRAPPERS:
            return len(node.args) == 1 and _fresh(node.args[0])
        return func.id in FRESH_TENSOR_FUNCTIONS
    return False
