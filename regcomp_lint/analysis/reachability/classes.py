"""Module classes: which classes of a file are ``nn.Module`` subclasses, and what their
``__init__`` (and the methods it calls) builds on ``self``: submodules and tensor attributes."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

from regcomp_lint.analysis.name_resolution import ImportMap
from regcomp_lint.analysis.reachability.modules import FUNCTION_DEFS, ParsedModule
from regcomp_lint.files.parsing import children
from regcomp_lint.knowledge import torch_api
from regcomp_lint.knowledge.model_classes import OTHER_FRAMEWORK_PREFIXES

if TYPE_CHECKING:
    from regcomp_lint.analysis.reachability.resolution import Resolver

MODULE_BASES = torch_api.MODULE
#: Bases known by their last name to be ``nn.Module`` subclasses (no need to resolve them).
KNOWN_MODULE_BASE_NAMES = frozenset({"GradientCheckpointingLayer", "LightningModule", "ModelMixin"})
KNOWN_MODULE_BASE_SUFFIXES = ("PreTrainedModel",)
NOT_TORCH_PREFIXES = OTHER_FRAMEWORK_PREFIXES
#: ``torch.nn`` names that are not modules (a class deriving from them is not a model).
TORCH_NN_NOT_MODULES = frozenset({"Parameter", "UninitializedParameter", "UninitializedBuffer", "Buffer"})
CONTAINERS = frozenset({"ModuleList", "Sequential", "ModuleDict", "ParameterList", "ParameterDict"})
PARAMETER = ("torch.nn.Parameter", "torch.nn.parameter.Parameter")
#: ``self.x = nn.Buffer(t)`` registers a buffer (a tensor attribute) like ``register_buffer``.
BUFFER = ("torch.nn.Buffer", "torch.nn.parameter.Buffer")
#: ``self.X.method`` calls that add submodules to a container attribute.
ADDING_METHODS = frozenset({"append", "extend", "insert", "add_module"})


@dataclass(eq=False)
class Submodule:
    attr: str
    value: ast.expr
    classes: list[ModuleClass] = field(default_factory=list)
    external: list[str] = field(default_factory=list)
    container: bool = False

    def __repr__(self) -> str:
        kinds = [c.name for c in self.classes] + self.external
        return (
            f"Submodule({self.attr}: {'[' if self.container else ''}{', '.join(kinds)}{']' if self.container else ''})"
        )


@dataclass(eq=False)
class ModuleClass:
    name: str
    node: ast.ClassDef
    module: ParsedModule
    bases: list[ModuleClass] = field(default_factory=list)
    submodules: dict[str, Submodule] = field(default_factory=dict)
    tensor_attrs: set[str] = field(default_factory=set)
    #: Whether this class is an nn.Module (a local non-module base is kept for method lookup).
    is_module: bool = True

    def __repr__(self) -> str:
        return f"ModuleClass({self.name})"

    @cached_property
    def local_methods(self) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
        """The defs in the class body, by name; once per class (asked for ~150,000 times
        linting transformers, and PreTrainedModel's body holds over a hundred defs)."""
        return {s.name: s for s in self.node.body if isinstance(s, FUNCTION_DEFS)}

    @property
    def init(self) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        return self.local_methods.get("__init__")

    def mro(self) -> list[ModuleClass]:
        """This class, then its local bases depth-first left to right (each once)."""
        seen: list[ModuleClass] = []
        stack = [self]
        while stack:
            cls = stack.pop(0)
            if cls not in seen:
                seen.append(cls)
                stack = list(cls.bases) + stack
        return seen

    def method(self, name: str) -> tuple[ModuleClass, ast.FunctionDef | ast.AsyncFunctionDef] | None:
        """(defining class, def) of ``name`` along the local bases."""
        for cls in self.mro():
            found = cls.local_methods.get(name)
            if found is not None:
                return cls, found
        return None

    def submodule(self, attr: str) -> Submodule | None:
        for cls in self.mro():
            if attr in cls.submodules:
                return cls.submodules[attr]
        return None

    def has_tensor_attr(self, attr: str) -> bool:
        return any(attr in cls.tensor_attrs for cls in self.mro())


def _method_names(node: ast.ClassDef) -> set[str]:
    return {stmt.name for stmt in node.body if isinstance(stmt, FUNCTION_DEFS)}


def _is_self(node: ast.AST) -> bool:
    return isinstance(node, ast.Name) and node.id == "self"


def _is_super_call(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super"


def _last_name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return None


def _is_known_module_base(base: ast.AST, imports: ImportMap) -> bool:
    """``nn.Module`` and ``torch.nn`` classes through any spelling, known model bases by name."""
    if isinstance(base, ast.Subscript):  # Generic-style Base[T]
        base = base.value
    qualname = imports.qualname(base)
    if qualname is None:
        return False
    last = qualname.rsplit(".", 1)[-1]
    if imports.root_is_import(base) and qualname.startswith("torch."):
        if qualname in MODULE_BASES:
            return True
        return (
            qualname.startswith("torch.nn.")
            and last[:1].isupper()
            and last not in TORCH_NN_NOT_MODULES
            and ".functional." not in qualname
            and ".init." not in qualname
            and ".utils." not in qualname
        )
    if isinstance(base, ast.Name) and not imports.imported(base.id):
        star = any(m in ("torch.nn", "torch.nn.modules") for m in imports.star_modules)
        if star and base.id == "Module":
            return True
    if last.startswith(NOT_TORCH_PREFIXES):
        return False
    return last in KNOWN_MODULE_BASE_NAMES or last.endswith(KNOWN_MODULE_BASE_SUFFIXES)


def _collect_submodules(reach: Resolver, cls: ModuleClass) -> None:
    """Fill ``cls.submodules`` and ``cls.tensor_attrs`` from ``__init__`` and the methods it calls."""
    module = cls.module
    methods = cls.local_methods
    todo = ["__init__"]
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        method = methods.get(name)
        if method is None or name in seen or name == "forward":
            continue
        seen.add(name)
        facts = reach.facts(method)
        lists: dict[str, list[ast.expr]] = {}
        for local, bindings in facts.bindings.items():
            # (a "value" binding's value is always an expression)
            values = [v for kind, v, index in bindings if kind == "value" and index is None and isinstance(v, ast.expr)]
            if values:
                lists[local] = values
        assigns = list(facts.self_assigns)
        for call in facts.calls:
            func = call.func
            if type(func) is not ast.Attribute:
                continue
            target = func.value
            if _is_self(target):
                if func.attr in methods:
                    todo.append(func.attr)
                elif func.attr in ("register_buffer", "register_parameter") and call.args:
                    if isinstance(call.args[0], ast.Constant) and isinstance(call.args[0].value, str):
                        cls.tensor_attrs.add(call.args[0].value)
                elif func.attr in ("add_module", "register_module") and len(call.args) == 2:
                    if isinstance(call.args[0], ast.Constant) and isinstance(call.args[0].value, str):
                        assigns.append((call.args[0].value, call.args[1]))
            elif func.attr in ADDING_METHODS and call.args:
                values = call.args[1:] if func.attr == "insert" else call.args
                if isinstance(target, ast.Attribute) and _is_self(target.value):
                    assigns.extend((target.attr, v) for v in values)
                elif isinstance(target, ast.Name):
                    lists.setdefault(target.id, []).extend(values)
        for attr, value in assigns:
            _add_submodule(reach, cls, module, attr, value, lists)
    for attr in [a for a, sub in cls.submodules.items() if not (sub.classes or sub.external)]:
        del cls.submodules[attr]  # a plain value (config, int, list of names), not a module


def _add_submodule(
    reach: Resolver,
    cls: ModuleClass,
    module: ParsedModule,
    attr: str,
    value: ast.expr,
    lists: dict[str, list[ast.expr]],
) -> None:
    if isinstance(value, ast.Call) and module.imports.resolves_to(value.func, *PARAMETER, *BUFFER):
        cls.tensor_attrs.add(attr)
        return
    if isinstance(value, ast.Call) and _is_torch_tensor_call(value.func, module.imports):
        cls.tensor_attrs.add(attr)
        return
    sub = cls.submodules.get(attr)
    if sub is None:
        sub = cls.submodules[attr] = Submodule(attr, value)
    seen_names: set[str] = set()
    stack: list[ast.AST] = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Call):
            resolved = reach.resolve_class(node.func, module)
            last = _last_name(node.func)
            if isinstance(resolved, ModuleClass) and resolved.is_module:
                sub.classes.append(resolved)
            elif isinstance(resolved, str) and last and last[:1].isupper():
                if last in CONTAINERS or last == "Sequential":
                    sub.container = True
                else:
                    sub.external.append(resolved)
            elif last in ("deepcopy",) and node.args:
                stack.append(node.args[0])
                continue
            stack.extend(node.args)
            stack.extend(kw.value for kw in node.keywords)
            continue
        if isinstance(node, ast.Name) and node.id in lists and node.id not in seen_names:
            seen_names.add(node.id)
            sub.container = sub.container or len(lists[node.id]) > 0
            stack.extend(lists[node.id])
            continue
        if isinstance(node, (ast.List, ast.Tuple, ast.ListComp, ast.GeneratorExp, ast.Dict, ast.DictComp)):
            sub.container = True
        if isinstance(
            node,
            (
                ast.List,
                ast.Tuple,
                ast.Set,
                ast.Dict,
                ast.ListComp,
                ast.GeneratorExp,
                ast.DictComp,
                ast.SetComp,
                ast.BinOp,
                ast.IfExp,
                ast.Starred,
                ast.keyword,
            ),
        ):
            stack.extend(children(node))


#: ``torch.<name>`` calls that build a tensor stored on ``self`` (``self.mask = torch.tril(...)``).
def _is_torch_tensor_call(func: ast.AST, imports: ImportMap) -> bool:
    qualname = imports.qualname(func)
    if not qualname or not imports.root_is_import(func):
        return False
    parts = qualname.split(".")
    return len(parts) == 2 and parts[0] == "torch" and parts[1][:1].islower() and parts[1] in TENSOR_FACTORIES


TENSOR_FACTORIES = frozenset(
    {
        "tensor",
        "zeros",
        "ones",
        "empty",
        "full",
        "arange",
        "linspace",
        "logspace",
        "eye",
        "rand",
        "randn",
        "randint",
        "randperm",
        "tril",
        "triu",
        "zeros_like",
        "ones_like",
        "empty_like",
        "full_like",
        "rand_like",
        "randn_like",
        "as_tensor",
        "from_numpy",
        "cat",
        "stack",
        "outer",
        "exp",
        "polar",
        "view_as_real",
        "view_as_complex",
    }
)
