"""Which expressions of a file hold a model with repeated blocks (regional-compilation material).

Two kinds are recognised statically, without importing anything:

- a transformers model: ``X.from_pretrained(...)`` / ``X.from_config(...)`` or ``X(config)``
  where ``X`` is imported from ``transformers`` and named like a model class (``AutoModel*``,
  ``*Model``, ``*LMHeadModel``, ``*For<Task>``). Every such model stacks identical layers.
- an instance of a class defined in the same file, or in a local module it imports (nanoGPT's
  ``from model import GPT``), whose ``__init__`` builds an
  ``nn.ModuleList`` of at least ``MIN_BLOCKS`` instances of one class: a comprehension
  (``[Block(cfg) for _ in range(n)]``), a multiplication (``[Block()] * 6``), a literal list,
  or ``append`` in a ``for`` loop; at any nesting (nanoGPT's
  ``nn.ModuleDict(dict(h=nn.ModuleList([...])))``); through a sub-model built in ``__init__``
  or a base class. A depth that is not a literal (``range(config.n_layer)``) counts: real
  configs are deep, and a shallow one only costs a suppression. Only ``nn.ModuleList`` counts,
  because it is what ``accelerate.utils.compile_regions`` looks for; single-op torch layers
  (``nn.Linear`` ×n) are not blocks.

Names are followed through :class:`~regcomp_lint.analysis.bindings.Bindings`: ``model = GPT(cfg)``,
``model = model.to(device)``, ``self.model = ...``, ``model, opt = accelerator.prepare(model,
opt)``, DDP wrappers and local functions that return a model.
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass, field, replace
from typing import cast

from regcomp_lint.analysis.bindings import Bindings, Where, binding_key
from regcomp_lint.analysis.file_context import FileContext
from regcomp_lint.analysis.reachability.modules import ParsedModule, load_module, module_file
from regcomp_lint.files.parsing import walk
from regcomp_lint.files.source import SourceFile
from regcomp_lint.knowledge.accelerate_api import MODEL_PREPARE_METHODS
from regcomp_lint.knowledge.model_classes import (
    AUTO_PREFIX,
    DEEPCOPY,
    FACTORY_METHODS,
    MIN_BLOCKS,
    TRANSFORMERS,
    is_transformers_model_name,
)
from regcomp_lint.knowledge.torch_api import DATA_PARALLEL, MODULE_LIST, SAME_MODULE_METHODS

MAX_DEPTH = 40


@dataclass(frozen=True)
class RepeatedBlocks:
    """What makes a model worth compiling regionally."""

    origin: str  # "transformers" or "local"
    model: str | None  # the model class
    block: str | None  # the repeated block's class, when known
    count: int | None  # how many blocks, when a literal
    #: where the block list is built, and the other local file the class is in (None: this
    #: file); shown in messages, not part of what the model is
    line: int | None = field(default=None, compare=False)
    path: str | None = field(default=None, compare=False)

    def describe(self) -> str:
        if self.origin == "transformers":
            return f"transformers model `{self.model}`" if self.model else "transformers model"
        block = f"`{self.block}`" if self.block else "blocks"
        where = f", `{self.model}` in {self.path}:{self.line}" if self.path else ""
        return f"{block} ×{self.count if self.count is not None else 'n'}{where}"


def transformers_model_class(ctx: FileContext, node: ast.AST) -> str | None:
    """The class name when ``node`` names a transformers model class through an import."""
    if isinstance(node, ast.Name) and not ctx.imports.imported(node.id):
        star = any(m == TRANSFORMERS or m.startswith(TRANSFORMERS + ".") for m in ctx.imports.star_modules)
        return node.id if star and is_transformers_model_name(node.id) else None
    qualname = ctx.qualname(node)
    if not qualname or not qualname.startswith(TRANSFORMERS + ".") or not ctx.imports.root_is_import(node):
        return None
    name = qualname.rsplit(".", 1)[-1]
    return name if is_transformers_model_name(name) else None


class ModelFinder:
    """Answers "does this expression hold a model with repeated blocks?" for one file."""

    def __init__(self, ctx: FileContext, bindings: Bindings) -> None:
        self.ctx = ctx
        self.bindings = bindings
        self._classes: dict[int, RepeatedBlocks | None] = {}
        self._memo: dict[tuple[int, Where], RepeatedBlocks | None] = {}
        self._foreign: dict[str, ModelFinder] = {}
        #: module name -> its local file (None: not a local module), looked for once per finder:
        #: a model of 800 blocks asks about ``torch.nn`` for each of their submodules
        self._module_files: dict[str, str | None] = {}

    # -- expressions ------------------------------------------------------------------------
    def model_of(self, expr: ast.AST | None, where: Where, depth: int = 0) -> RepeatedBlocks | None:
        if expr is None or depth > MAX_DEPTH:
            return None
        key = (id(expr), where)
        if key in self._memo:
            return self._memo[key]
        self._memo[key] = None  # in progress: a cycle (``self.m = self.m.cuda()`` everywhere) ends here
        found = self._model_of(expr, where, depth)
        self._memo[key] = found
        return found

    def _model_of(self, expr: ast.AST, where: Where, depth: int) -> RepeatedBlocks | None:
        if isinstance(expr, ast.Call):
            return self._call(expr, where, depth)
        for bound in self.bindings.candidates(expr, where):
            value = bound.value
            if value is None or isinstance(value, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            if bound.index is not None:
                value = _element(value, bound.index)
            found = self.model_of(value, bound.where, depth + 1)
            if found is not None:
                return found
        return None

    def _call(self, call: ast.Call, where: Where, depth: int) -> RepeatedBlocks | None:
        func = call.func
        if isinstance(func, ast.Attribute):
            if func.attr in FACTORY_METHODS:
                return self._class_instance(func.value, factory=True)
            if func.attr in SAME_MODULE_METHODS:
                return self.model_of(func.value, where, depth + 1)
            if func.attr in MODEL_PREPARE_METHODS and len(call.args) == 1 and not call.keywords:
                return self.model_of(call.args[0], where, depth + 1)
        if self.ctx.resolves_to(func, *DATA_PARALLEL) and call.args:
            return self.model_of(call.args[0], where, depth + 1)
        found = self._class_instance(func)
        if found is not None or not isinstance(func, ast.Name):
            return found
        bound = self.bindings.lookup(func, where)
        if bound is not None and isinstance(bound.value, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for value, at in self.bindings.returns(bound.value):
                found = self.model_of(value, at, depth + 1)
                if found is not None:
                    return found
        return None

    def _class_instance(self, cls: ast.AST, factory: bool = False) -> RepeatedBlocks | None:
        """What an instance of the class named by ``cls`` holds (None when not a known model).
        ``factory``: made by ``from_pretrained``/``from_config`` (the only way for ``Auto*``)."""
        name = transformers_model_class(self.ctx, cls)
        if name is not None and (factory or not name.startswith(AUTO_PREFIX)):
            return RepeatedBlocks("transformers", name, None, None)
        if isinstance(cls, ast.Name) and not self.ctx.imports.imported(cls.id):
            local = self.bindings.classes.get(cls.id)
            if local is not None:
                return self.class_blocks(local)
            return None
        return self._imported_class(cls)

    def _imported_class(self, cls: ast.AST) -> RepeatedBlocks | None:
        """A class imported from a local module (``from model import GPT``), judged in its file."""
        qualname = self.ctx.qualname(cls) if isinstance(cls, (ast.Name, ast.Attribute)) else None
        if not qualname or not self.ctx.imports.root_is_import(cls):
            return None
        dotted, _, name = qualname.rpartition(".")
        path = None
        if dotted:
            if dotted not in self._module_files:
                self._module_files[dotted] = module_file(self.ctx.filename, dotted)
            path = self._module_files[dotted]
        module = load_module(path) if path is not None else None
        if path is None or module is None or name not in module.classes:
            return None
        finder = self._foreign.get(path)
        if finder is None:
            finder = self._foreign[path] = _module_finder(module, path)
        found = finder.class_blocks(module.classes[name])
        if found is None or found.origin != "local":
            return found
        shown = os.path.relpath(path, os.path.dirname(os.path.abspath(self.ctx.filename)))
        return found if found.path else replace(found, path=shown.replace(os.sep, "/"))

    # -- classes defined in the file -------------------------------------------------------
    def class_blocks(self, cls: ast.ClassDef) -> RepeatedBlocks | None:
        key = id(cls)
        if key in self._classes:
            return self._classes[key]
        self._classes[key] = None  # in progress: a class that contains itself is not a model
        found = self._own_blocks(cls) or self._inherited_blocks(cls)
        self._classes[key] = found
        return found

    def _init(self, cls: ast.ClassDef) -> ast.FunctionDef | None:
        for stmt in cls.body:
            if isinstance(stmt, ast.FunctionDef) and stmt.name == "__init__":
                return stmt
        return None

    def _own_blocks(self, cls: ast.ClassDef) -> RepeatedBlocks | None:
        init = self._init(cls)
        if init is None:
            return None
        appended = _appended_in_loops(init)
        lists = _list_assignments(init)
        for node in walk(init):
            if not isinstance(node, ast.Call):
                continue
            if self.ctx.resolves_to(node.func, *MODULE_LIST):
                found = self._module_list(node, cls, appended, lists)
            else:
                found = self._submodel(node.func, cls)
            if found is not None:
                return found
        for target, (elt, count) in appended.items():
            if target.startswith("self.") and self._is_empty_module_list_attr(init, target):
                found = self._blocks(cls, elt, count)
                if found is not None:
                    return found
        return None

    def _module_list(self, call: ast.Call, cls: ast.ClassDef, appended: dict, lists: dict) -> RepeatedBlocks | None:
        if not call.args:
            return None
        arg = call.args[0]
        if isinstance(arg, ast.Name):
            if arg.id in appended:
                return self._blocks(cls, *appended[arg.id])
            arg = lists.get(arg.id, arg)
        repeated = _repeated(arg)
        return self._blocks(cls, *repeated) if repeated else None

    def _blocks(self, cls: ast.ClassDef, elt: ast.expr, count: int | None) -> RepeatedBlocks | None:
        if count is not None and count < MIN_BLOCKS:
            return None
        func = elt.func if isinstance(elt, ast.Call) else None
        if func is None:
            return None
        if self.ctx.resolves_to(func, *DEEPCOPY):
            return RepeatedBlocks("local", cls.name, None, count, elt.lineno)
        qualname = self.ctx.qualname(func) or ""
        block = qualname.rsplit(".", 1)[-1] or None
        if (
            qualname.startswith("torch.nn.")
            and self.ctx.imports.root_is_import(func)
            and not qualname.endswith("Layer")
        ):
            return None  # nn.Linear ×n is not a block worth compiling on its own
        return RepeatedBlocks("local", cls.name, block, count, elt.lineno)

    def _submodel(self, func: ast.AST, cls: ast.ClassDef) -> RepeatedBlocks | None:
        """``self.backbone = AutoModel.from_pretrained(...)`` or ``self.model = Inner(cfg)``."""
        factory = isinstance(func, ast.Attribute) and func.attr in FACTORY_METHODS
        target = func.value if isinstance(func, ast.Attribute) and factory else func
        if isinstance(target, ast.Name) and target.id == cls.name:
            return None
        return self._class_instance(target, factory)

    def _inherited_blocks(self, cls: ast.ClassDef) -> RepeatedBlocks | None:
        init = self._init(cls)
        if init is not None and not _calls_super_init(init):
            return None
        for base in cls.bases:
            found = self._class_instance(base)
            if found is not None:
                if found.origin == "local":
                    return replace(found, model=cls.name)
                return found
        return None

    def _is_empty_module_list_attr(self, init: ast.FunctionDef, target: str) -> bool:
        for node in walk(init):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and not node.value.args:
                if self.ctx.resolves_to(node.value.func, *MODULE_LIST):
                    if any(binding_key(t) == target for t in node.targets):
                        return True
        return False


class _ModuleClasses:
    """What a finder asks of bindings when it only judges classes: the module's classes."""

    def __init__(self, module: ParsedModule) -> None:
        self.classes = module.classes


def _module_finder(module: ParsedModule, path: str) -> ModelFinder:
    """A finder for another local file's classes, resolving names with that file's imports."""
    ctx = FileContext(SourceFile(path, ""), module.tree)
    ctx.imports = module.imports
    return ModelFinder(ctx, cast(Bindings, _ModuleClasses(module)))


# -- small pure helpers ----------------------------------------------------------------------


def _element(value: ast.AST, index: int) -> ast.AST | None:
    """Element ``index`` of a tuple/list display, or the argument of ``prepare(a, b, ...)``."""
    if isinstance(value, (ast.Tuple, ast.List)):
        elts = value.elts
    elif (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and value.func.attr in MODEL_PREPARE_METHODS
    ):
        elts = value.args
    else:
        return None
    if any(isinstance(e, ast.Starred) for e in elts[: index + 1]) or index >= len(elts):
        return None
    return elts[index]


def _int(node: ast.AST) -> int | None:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    return None


def iteration_count(node: ast.AST) -> int | None:
    """How many times ``for _ in node`` runs when it is literal (``range(6)``, ``(a, b)``)."""
    if isinstance(node, (ast.List, ast.Tuple)) and not any(isinstance(e, ast.Starred) for e in node.elts):
        return len(node.elts)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "range" and not node.keywords:
        values = [_int(a) for a in node.args]
        ints = [v for v in values if v is not None]
        if ints and len(ints) == len(values) and len(ints) <= 3:
            try:
                return len(range(*ints))
            except ValueError:
                return None
    return None


def _repeated(arg: ast.AST) -> tuple[ast.expr, int | None] | None:
    """(element, count) when ``arg`` builds several instances of one class."""
    if isinstance(arg, (ast.ListComp, ast.GeneratorExp)) and len(arg.generators) == 1:
        gen = arg.generators[0]
        if gen.ifs or not isinstance(arg.elt, ast.Call):
            return None
        return arg.elt, iteration_count(gen.iter)
    if isinstance(arg, ast.BinOp) and isinstance(arg.op, ast.Mult):
        for seq, times in ((arg.left, arg.right), (arg.right, arg.left)):
            if isinstance(seq, ast.List) and seq.elts and _same_calls(seq.elts):
                n = _int(times)
                return seq.elts[0], (len(seq.elts) * n if n is not None else None)
        return None
    if isinstance(arg, (ast.List, ast.Tuple)) and len(arg.elts) > 1 and _same_calls(arg.elts):
        return arg.elts[0], len(arg.elts)
    return None


def _same_calls(elts: list[ast.expr]) -> bool:
    calls = [e for e in elts if isinstance(e, ast.Call)]
    if len(calls) != len(elts):
        return False
    first = ast.dump(calls[0].func)
    return all(ast.dump(c.func) == first for c in calls[1:])


def _appended_in_loops(init: ast.FunctionDef) -> dict[str, tuple[ast.expr, int | None]]:
    """``for _ in range(n): target.append(Block(...))`` → {target: (Block(...), n)}."""
    found: dict[str, tuple[ast.expr, int | None]] = {}
    for loop in walk(init):
        if not isinstance(loop, ast.For):
            continue
        for stmt in loop.body:
            if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
                call = stmt.value
                if isinstance(call.func, ast.Attribute) and call.func.attr == "append" and len(call.args) == 1:
                    target = binding_key(call.func.value)
                    if target and isinstance(call.args[0], ast.Call):
                        found.setdefault(target, (call.args[0], iteration_count(loop.iter)))
    return found


def _list_assignments(init: ast.FunctionDef) -> dict[str, ast.expr]:
    """``layers = [Block() for _ in range(n)]`` inside ``__init__``: name → value."""
    found = {}
    for node in walk(init):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            found[node.targets[0].id] = node.value
    return found


def _calls_super_init(init: ast.FunctionDef) -> bool:
    for node in walk(init):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "__init__":
            return True
    return False
