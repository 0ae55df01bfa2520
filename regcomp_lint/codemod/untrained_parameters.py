"""Prepared models some of whose parameters get no gradient in a step.

One process computes what it computes; DDP on several processes expects a gradient for every
parameter that requires one and fails at the second step ("parameters that were not used in
producing loss") when some get none. Two shapes of real scripts leave parameters so (yunjey's
image-captioning tutorial has both): the model's ``forward`` cuts a submodule off the loss
(``with torch.no_grad(): f = self.resnet(x)``, ``f.detach()``, ``Variable(f.data)``), or the
optimizer holds some of its submodules (``list(encoder.linear.parameters()) + ...``) and the rest
is a backbone the script does not train. Both are read statically; the second does not prove the
rest gets no gradient, but a backbone left out of every optimizer and still requiring grad is
what cuts it off in the scripts seen, and ``find_unused_parameters=True`` only costs a graph walk
per step. A model the script freezes before training needs nothing: DDP leaves out parameters
that do not require grad.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

import libcst as cst

from regcomp_lint.codemod.lint_view import lint_view
from regcomp_lint.codemod.local_modules import importer_of, is_project_module, load_local
from regcomp_lint.codemod.optimizers import find_optimizers
from regcomp_lint.codemod.tree import Function, Tree, built_class, code, dotted, find_all, single_target
from regcomp_lint.files.discovery import shown_path
from regcomp_lint.knowledge.torch_api import NO_GRAD

if TYPE_CHECKING:
    from regcomp_lint.codemod.plain import PlainPlanner

_PARAMETER_ITERATORS = ("parameters", "named_parameters")


def untrained_parameters(planner: PlainPlanner, frozen: set[str]) -> list[str]:
    """Why some prepared model's parameters get no gradient, one phrase each, leaving out the
    models in ``frozen`` (frozen by the script before it trains)."""
    reasons: list[str] = []
    partial = _partly_optimized(planner)
    for model in planner.models:
        if model in frozen:
            continue
        found = _model_class(planner, model)
        if found is None:
            continue  # a library's model: its forward feeds every parameter to the loss
        cls, filename = found
        cut = _cut_in_forward(cls, filename)
        if cut is not None:
            reasons.append(f"{model}'s {cut}")
            continue
        if model in partial:
            key, line, pieces = partial[model]
            covered = {piece[len(model) + 1 :].split(".")[0].split("[")[0] for piece in pieces}
            left = [f"{model}.{name}" for name in _submodules(cls) if name not in covered]
            if left:
                reasons.append(
                    f"{key} (line {line}) optimizes {', '.join(pieces)} but not {', '.join(left)}, whose parameters "
                    "still require grad (a backbone the model cuts off the loss gets no gradient)"
                )
    return reasons


def _partly_optimized(planner: PlainPlanner) -> dict[str, tuple[str, int, list[str]]]:
    """Prepared models whose parameters reach the optimizers only through some of their
    submodules (``encoder.linear.parameters()``), never as a whole: model -> (optimizer, line,
    the submodules)."""
    tree = planner.tree
    pieces: dict[str, list[str]] = {}
    whole: set[str] = set()
    where: dict[str, tuple[str, int]] = {}
    for function in planner.reach():
        for found in find_optimizers(tree, function):
            if found.key not in planner.optimizers:
                continue
            for receiver in _parameter_receivers(tree, function, found.stmt):
                for model in planner.models:
                    if receiver == model:
                        whole.add(model)
                    elif receiver.startswith((f"{model}.", f"{model}[")):
                        pieces.setdefault(model, []).append(receiver)
                        where.setdefault(model, (found.key, tree.line(found.stmt)))
    return {m: (*where[m], list(dict.fromkeys(p))) for m, p in pieces.items() if m not in whole}


def _parameter_receivers(tree: Tree, function: Function, stmt: cst.Assign) -> list[str]:
    """What ``.parameters()`` is called on in the optimizer's statement and in the statements of
    ``function`` binding the names it reads (``params = list(decoder.parameters()) + ...``)."""
    read = {n.value for n in find_all(stmt.value, cst.Name)}
    sources: list[cst.CSTNode] = [stmt.value]
    for node in find_all(function, (cst.Assign, cst.AugAssign), enter_functions=False):
        if node is stmt:
            continue
        target = single_target(node) if isinstance(node, cst.Assign) else None
        name = target[0] if target is not None else dotted(node.target) if isinstance(node, cst.AugAssign) else None
        if name in read:
            sources.append(node.value)
    found = []
    for source in sources:
        for call in find_all(source, cst.Call):
            func = call.func
            if isinstance(func, cst.Attribute) and func.attr.value in _PARAMETER_ITERATORS:
                found.append(code(func.value).strip())
    return found


def _cut_in_forward(cls: ast.ClassDef, filename: str | None) -> str | None:
    """``Encoder.forward (line 12) detaches self.resnet's output``, when the model's class cuts a
    submodule off the loss in its ``forward``."""
    frozen = _frozen_submodules(cls)
    for stmt in cls.body:
        if isinstance(stmt, ast.FunctionDef) and stmt.name == "forward":
            cut = _cut(stmt, frozen)
            if cut is not None:
                where = f"{filename}, line" if filename else "line"
                return f"{cls.name}.forward ({where} {stmt.lineno}) {cut}"
    return None


def _submodules(cls: ast.ClassDef) -> list[str]:
    """``resnet`` of ``self.resnet = nn.Sequential(...)`` in the class's ``__init__``."""
    names: list[str] = []
    for stmt in cls.body:
        if isinstance(stmt, ast.FunctionDef) and stmt.name == "__init__":
            for node in ast.walk(stmt):
                if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
                    for target in node.targets:
                        if (
                            isinstance(target, ast.Attribute)
                            and isinstance(target.value, ast.Name)
                            and target.value.id == "self"
                            and target.attr not in names
                        ):
                            names.append(target.attr)
    return names


def _model_class(planner: PlainPlanner, model: str) -> tuple[ast.ClassDef, str | None] | None:
    """The class ``model = Cls(...)`` (``.to(device)`` and the like after it) builds, as ``ast``,
    with the file it comes from when not the script."""
    tree = planner.tree
    for assign in find_all(planner.scope, cst.Assign, enter_functions=False):
        target = single_target(assign)
        if target is None or target[0] != model:
            continue
        built = built_class(target[1])
        if built is None:
            continue
        name = built.value
        for defined in find_all(tree.module, cst.ClassDef):
            if defined.name.value == name:
                cls = lint_view(tree).statement_at(defined)  # the file's own ast, its real lines
                if isinstance(cls, ast.ClassDef):
                    return cls, None
        if tree.filename is None:
            return None
        for qualname in sorted(tree.imported_names(built)):
            module, _, attr = qualname.rpartition(".")
            if module and is_project_module(module):
                local = load_local(importer_of(tree.filename), module)
                if local is not None and attr in local.classes:
                    return local.classes[attr], shown_path(local.path) if local.path else None
    return None


def _frozen_submodules(cls: ast.ClassDef) -> set[str]:
    """``self.target`` when a method of the class sets its parameters' ``requires_grad`` to False:
    ``for p in self.target.parameters(): p.requires_grad = False``, the momentum encoder's
    ``for pb, pm in zip(self.base.parameters(), self.momentum.parameters()): pm.requires_grad = False``
    (BYOL, MoCo), or ``self.target.requires_grad_(False)``. DDP leaves such parameters out, so the
    submodule run under no_grad in ``forward`` leaves none of the others without a gradient."""
    frozen: set[str] = set()
    for node in ast.walk(cls):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "requires_grad_"
            and _is_false(node.args[0] if node.args else None)
            and _self_attribute(node.func.value) is not None
        ):
            frozen.add(ast.unparse(node.func.value))
        if not isinstance(node, ast.For):
            continue
        pairs = _loop_parameters(node)
        for stmt in ast.walk(node):
            if isinstance(stmt, ast.Assign) and _is_false(stmt.value):
                for target in stmt.targets:
                    if (
                        isinstance(target, ast.Attribute)
                        and target.attr == "requires_grad"
                        and isinstance(target.value, ast.Name)
                        and target.value.id in pairs
                    ):
                        frozen.add(pairs[target.value.id])
    return frozen


def _loop_parameters(loop: ast.For) -> dict[str, str]:
    """The loop's names bound to a submodule's parameters: ``p`` -> ``self.target`` for ``for p in
    self.target.parameters()``, and each name of ``for a, b in zip(self.x.parameters(), ...)``."""
    sources = (
        loop.iter.args if isinstance(loop.iter, ast.Call) and ast.unparse(loop.iter.func) == "zip" else [loop.iter]
    )
    names = loop.target.elts if isinstance(loop.target, ast.Tuple) and len(sources) > 1 else [loop.target]
    found: dict[str, str] = {}
    for name, source in zip(names, sources):
        if (
            isinstance(name, ast.Name)
            and isinstance(source, ast.Call)
            and isinstance(source.func, ast.Attribute)
            and source.func.attr == "parameters"
            and _self_attribute(source.func.value) is not None
        ):
            found[name.id] = ast.unparse(source.func.value)
    return found


def _self_attribute(node: ast.expr) -> str | None:
    return (
        node.attr
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self"
        else None
    )


def _is_false(node: ast.expr | None) -> bool:
    return isinstance(node, ast.Constant) and node.value is False


def _cut(forward: ast.FunctionDef, frozen: frozenset[str] | set[str] = frozenset()) -> str | None:
    """How ``forward`` cuts a submodule's output off the loss, or None. A submodule in ``frozen``
    (its parameters require no grad) cuts nothing DDP waits for."""
    outputs: list[tuple[int, str, str | None]] = []  # (line, name, the self.<sub> whose output it then holds)
    for node in ast.walk(forward):
        if isinstance(node, ast.With) and any(_disables_grad(item.context_expr) for item in node.items):
            for inner in node.body:
                for call in ast.walk(inner):
                    sub = _submodule_call(call)
                    if sub is not None and sub not in frozen:
                        return f"runs {sub} under {ast.unparse(node.items[0].context_expr)}"
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            outputs.append((node.lineno, node.targets[0].id, _submodule_call(node.value)))
    for node in ast.walk(forward):
        operand = None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "detach":
            operand = node.func.value
        elif isinstance(node, ast.Attribute) and node.attr == "data" and isinstance(node.ctx, ast.Load):
            operand = node.value
        if operand is None:
            continue
        sub = _submodule_call(operand)
        if sub is None and isinstance(operand, ast.Name):  # the last assignment of the name before the read
            held = [(line, sub) for line, name, sub in outputs if name == operand.id and line < operand.lineno]
            sub = max(held, key=lambda h: h[0])[1] if held else None
        if sub is not None and sub not in frozen:
            return f"detaches {sub}'s output ({ast.unparse(node)})"
    return _partial_run(forward, frozen)


def _partial_run(forward: ast.FunctionDef, frozen: frozenset[str] | set[str]) -> str | None:
    """How ``forward`` runs only some entries of a module list of the model (survey26d
    gpt2_distill, an early-exit GPT): a loop over ``self.h[:depth]`` (``self.transformer.h[:depth]``) sliced by one of its
    arguments, or an entry ``self.heads[1](x)`` called only in a branch of an ``if``. The
    entries left out get no gradient in that step."""
    params = {a.arg for a in [*forward.args.args, *forward.args.kwonlyargs]} - {"self"}
    for node in ast.walk(forward):
        if isinstance(node, (ast.For, ast.comprehension)):
            source = node.iter
            if isinstance(source, ast.Call) and _is_call_of(source, "enumerate") and source.args:
                source = source.args[0]
            if (
                isinstance(source, ast.Subscript)
                and isinstance(source.slice, ast.Slice)
                and ast.unparse(source.value).startswith("self.")
                and ast.unparse(source.value) not in frozen
                and any(
                    isinstance(n, ast.Name) and n.id in params
                    for bound in (source.slice.lower, source.slice.upper)
                    if bound is not None
                    for n in ast.walk(bound)
                )
            ):
                return f"runs only {ast.unparse(source)}"
    ifs = [node for node in ast.walk(forward) if isinstance(node, ast.If)]
    in_branches = {n for branch in ifs for stmt in [*branch.body, *branch.orelse] for n in ast.walk(stmt)}
    outside = {entry for call in ast.walk(forward) if call not in in_branches and (entry := _entry_call(call))}
    for branch in ifs:
        for condition, body in (
            (ast.unparse(branch.test), branch.body),
            (f"not ({ast.unparse(branch.test)})", branch.orelse),
        ):
            for stmt in body:
                for call in ast.walk(stmt):
                    entry = _entry_call(call)
                    if entry is not None and entry not in outside and entry.split("[")[0] not in frozen:
                        return f"calls {entry} only where {condition}"
    return None


def _is_call_of(node: ast.expr, name: str) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name


def _entry_call(node: ast.AST) -> str | None:
    """``self.heads[1]`` of ``self.heads[1](x)``: one entry, by a constant index, of a submodule."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Subscript):
        sub = node.func
        if _self_attribute(sub.value) is not None and isinstance(sub.slice, ast.Constant):
            return ast.unparse(sub)
    return None


def _submodule_call(node: ast.AST) -> str | None:
    """``self.resnet`` of ``self.resnet(x)``."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        owner = node.func.value
        if isinstance(owner, ast.Name) and owner.id == "self":
            return ast.unparse(node.func)
    return None


def _disables_grad(expr: ast.expr) -> bool:
    text = ast.unparse(expr)
    return text == "torch.set_grad_enabled(False)" or any(text.startswith(f"{name}(") for name in NO_GRAD)
