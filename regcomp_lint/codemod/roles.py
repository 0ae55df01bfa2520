"""The converter's libcst view of a script's functions: what each statement binds, the calls
between the file's functions, the ``backward`` calls and the ``key = value`` creations.

Which creation is a training or evaluation loader, a sharded one, or a scheduler stepped per
epoch is not decided here: ``lint_view`` asks the lint's roles (``analysis/training_roles.py``).
Optimizers are found by what feeds and steps them (``optimizers.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from regcomp_lint.codemod.tree import Function, Tree, code, find_all, key_of, memo_of, methods_of, single_target

# -- bindings ----------------------------------------------------------------------------------


def _target_keys(target: cst.BaseExpression) -> list[str]:
    kind = type(target)  # (``type(x) is``: see tree.key_of)
    if kind is cst.Tuple or kind is cst.List:
        return [k for el in target.elements for k in _target_keys(el.value)]  # type: ignore[attr-defined]
    if kind is cst.StarredElement:
        return _target_keys(target.value)  # type: ignore[attr-defined]
    key = key_of(target)
    return [key] if key else []


def bound_keys(node: cst.CSTNode) -> list[str]:
    """Keys a small statement or compound statement header binds (not its nested body)."""
    if isinstance(node, cst.Assign):
        return [k for t in node.targets for k in _target_keys(t.target)]
    if isinstance(node, (cst.AnnAssign, cst.AugAssign)):
        return _target_keys(node.target)
    if isinstance(node, cst.For):
        return _target_keys(node.target)
    if isinstance(node, cst.With):
        return [k for item in node.items if item.asname is not None for k in _target_keys(item.asname.name)]
    if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
        return [node.name.value]
    if isinstance(node, cst.Import):
        return [(a.evaluated_alias or code(a.name).split(".")[0]) for a in node.names]
    if isinstance(node, cst.ImportFrom) and not isinstance(node.names, cst.ImportStar):
        return [(a.evaluated_alias or code(a.name)) for a in node.names]
    return []


#: the statements that can bind a key (:func:`bound_keys`)
_BINDERS = (
    cst.Assign,
    cst.AnnAssign,
    cst.AugAssign,
    cst.For,
    cst.With,
    cst.FunctionDef,
    cst.ClassDef,
    cst.Import,
    cst.ImportFrom,
)


def bindings(function: Function, key: str) -> list[cst.CSTNode]:
    """Nodes inside ``function`` (not in nested defs) that bind ``key``, in source order."""
    return list(memo_of(function, "bindings", _bindings_by_key).get(key, ()))


def _bindings_by_key(function: Function) -> dict[str, list[cst.CSTNode]]:
    """Every key bound inside ``function`` and its binding nodes, in source order: the planner
    asks :func:`bindings` hundreds of times a script, each a pass over the function's statements."""
    found: dict[str, list[cst.CSTNode]] = {}
    for node in find_all(function, _BINDERS, enter_functions=False):
        if node is function:
            continue
        for key in dict.fromkeys(bound_keys(node)):  # (a node binding a key twice is listed once)
            found.setdefault(key, []).append(node)
    return found


# -- the call graph and the training step ------------------------------------------------------


@dataclass
class CallGraph:
    """Calls from one function of the file to another, resolved by name or ``self.method``."""

    edges: list[tuple[Function, cst.FunctionDef, cst.Call]] = field(default_factory=list)

    @classmethod
    def build(cls, tree: Tree) -> CallGraph:
        graph = cls()
        methods: dict[int, dict[str, cst.FunctionDef]] = {}
        for call in find_all(tree.module, cst.Call):
            caller = tree.function_of(call)
            callee = tree.function_named(call)
            if (
                callee is None
                and isinstance(call.func, cst.Attribute)
                and key_of(call.func) is not None
                and code(call.func.value) == "self"
            ):
                owner = tree.class_of(caller)
                if owner is not None:
                    table = methods.setdefault(id(owner), {s.name.value: s for s in methods_of(owner)})
                    callee = table.get(call.func.attr.value)
            if callee is not None:
                graph.edges.append((caller, callee, call))
        return graph

    def callers_of(self, function: cst.FunctionDef) -> list[tuple[Function, cst.Call]]:
        return [(caller, call) for caller, callee, call in self.edges if callee is function]

    def calls_from(self, function: Function) -> list[tuple[cst.FunctionDef, cst.Call]]:
        return [(callee, call) for caller, callee, call in self.edges if caller is function]

    def closure_of_callers(self, start: set[Function]) -> set[Function]:
        """``start`` plus every function that (transitively) calls into it."""
        found = set(start)
        changed = True
        while changed:
            changed = False
            for caller, callee, _ in self.edges:
                if callee in found and caller not in found:
                    found.add(caller)
                    changed = True
        return found


def backward_calls(tree: Tree, accelerator_keys: set[str]) -> list[cst.Call]:
    """``X.backward(...)`` calls where X is a value (not ``torch.autograd`` nor the accelerator)."""
    found = []
    for call in find_all(tree.module, cst.Call):
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value == "backward":
            receiver = func.value
            if key_of(receiver) in accelerator_keys or tree.is_module_reference(receiver):
                continue
            found.append(call)
    return found


# -- roles -------------------------------------------------------------------------------------


@dataclass
class Creation:
    key: str
    stmt: cst.Assign
    value: cst.BaseExpression


def creations(function: Function) -> list[Creation]:
    """Every ``key = value`` assignment in ``function`` (not in nested defs)."""
    out = []
    for assign in find_all(function, cst.Assign, enter_functions=False):
        target = single_target(assign)
        if target is not None:
            out.append(Creation(target[0], assign, target[1]))
    return out


def unpacked_keys(stmt: cst.CSTNode) -> list[str | None] | None:
    """The keys of ``a, b = value`` by position (None where an element is no trackable name),
    or None when ``stmt`` is not a one-target tuple unpacking without a starred element."""
    if not isinstance(stmt, cst.Assign) or len(stmt.targets) != 1:
        return None
    target = stmt.targets[0].target
    if not isinstance(target, (cst.Tuple, cst.List)) or any(
        isinstance(el, cst.StarredElement) for el in target.elements
    ):
        return None
    return [key_of(el.value) for el in target.elements]
