"""Which code of a file runs inside a ``forward``: module classes, a call graph, chains.

RC2xx rules judge only code that dynamo traces, i.e. code reachable from an ``nn.Module``'s
``forward``; data loading, ``__init__`` and the training loop are never judged. This module finds
that code without importing anything.

Public API (stable; other rules build on it)::

    reach = reachability.for_context(ctx)      # built once per linted file (deep=True: see below)
    reach.classes                              # {name: ModuleClass} nn.Module subclasses of the file
    reach.module_class(name)                   # ModuleClass, also for one imported from a local module
    reach.resolve_class(expr, reach.module)    # ModuleClass | qualified name str | None
    reach.graph                                # networkx.DiGraph of Function nodes; edge data "calls"
    reach.roots                                # forward Functions the chains start from
    reach.chain(func)                          # Chain from a root to Function func, or None
    reach.locate(function_nodes)               # (Function, Chain) for the innermost reached def, or None
    reach.reached()                            # [(Function, Chain)], every reached function
    reach.reached_from(cls)                    # [(Function, Chain)] reached from cls.forward
    reach.facts(func)                          # FunctionFacts: bindings, calls, returns, self_assigns
    reach.callers(func)                        # [(caller Function, ast.Call)] known call sites
    reach.call_targets(call.func, func)        # [Function] a call inside func may run
    func.disabled                              # decorated with torch.compiler.disable (not traced)
    str(chain) == "reached via GPT.forward → Block.forward → Attention.forward"
    reachability.from_source(text, filename)   # the same, from source text (tests, tools)

- :class:`ModuleClass`: ``name``, ``node`` (``ast.ClassDef``), ``module`` (:class:`ParsedModule`
  it is defined in), ``bases`` (local base classes, module or not), ``submodules`` ({attr:
  :class:`Submodule`} built in ``__init__`` and the methods it calls, e.g. ``self.h =
  nn.ModuleList([Block() for _ in range(n)])``), ``tensor_attrs`` (parameters, buffers,
  tensors stored on ``self``), ``method(name)`` (looked up along the bases), ``mro()``, ``init``.
- :class:`Submodule`: ``attr``, ``classes`` (local :class:`ModuleClass` es), ``external``
  (qualified names such as ``torch.nn.LSTM``), ``container`` (built in a ModuleList /
  Sequential / ModuleDict / list), ``value`` (the assigned expression).
- :class:`Function`: one node of the call graph: ``node`` (the def), ``cls`` (the receiver
  :class:`ModuleClass` for methods: what ``self`` is; ``None`` for plain functions),
  ``module``, ``label`` (``"Block.forward"``, ``"helper"``, ``"MLP.forward.gate"`` for a
  closure), ``local`` (defined in the linted file), ``parent`` (the enclosing Function of a
  closure), ``is_method``.

What counts as an ``nn.Module`` subclass: a base resolving to ``torch.nn.Module`` or another
``torch.nn`` class through any import spelling, a local class that is one, or a known model base
by name (``*PreTrainedModel``, ``GradientCheckpointingLayer``, ``LightningModule``,
``ModelMixin``).

Edges: ``self.method(...)`` (resolved against the receiver class, so an inherited ``forward``
reaches the subclass's override), ``super().method(...)``, submodule calls ``self.attn(x)``,
``self.h[i](x)``, ``for block in self.h: block(x)`` (also ``enumerate``/``zip``/``.items()``,
and names bound to ``self.attr`` or ``self.attr[i]``), ``self.sub.method(...)``, closures
defined and called in a method, module-level functions, and submodules or methods passed on
(``checkpoint(self.block, x)``, ``layer.__call__``).

Other files: the default (shallow) graph never parses another file: a finding is reported in
the file that contains it, and each file is linted on its own. A class that defines ``forward``
on a base imported from a local module of the project is taken for a module. The deep graph
(``for_context(ctx, deep=True)``, RC210) follows classes and functions imported from local
modules (absolute or relative imports resolved to a ``.py`` file near the linted one), parsing
each lazily, once per run. The functions graph (``for_context(ctx, functions=True)``: the
RC2xx rules' search for breaks in other files) is the default graph plus the functions of local
modules it calls, with no file read for a class. ``paths(follows)`` gives its shortest-path tree
(which call each function is first reached through), ``of_module(m)`` the default graph of
another file as that file's own lint builds it, ``counterpart(f)`` a function's node in another
graph of the same file.

Cost: nothing here walks the file again. Classes and functions are read from the top-level
statements; :class:`FunctionFacts` come from the engine's single walk (an RC2xx rule feeds a
:class:`FactsCollector`); only functions of other files are walked on their own; the graph is
built in ``finish()``, once per file, and only when a rule has a candidate finding. The functions
graph shares the default graph's classes and reuses the callees it found for the file's own
functions (resolving again only the calls of imported names); the callees and facts of a plain
function of another file depend on that file alone and are kept with its parsed module, once per
process (found again when a file they were resolved through changes or is parsed again).
"""

from __future__ import annotations

import ast
import os
import weakref
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import TYPE_CHECKING

from regcomp_lint.analysis import dependencies
from regcomp_lint.analysis.name_resolution import ImportMap
from regcomp_lint.files import reading

if TYPE_CHECKING:
    import networkx as nx

    from regcomp_lint.analysis.file_context import FileContext

FUNCTION_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)
MODULE_BASES = ("torch.nn.Module", "torch.nn.modules.module.Module")
#: Bases known by their last name to be ``nn.Module`` subclasses (no need to resolve them).
KNOWN_MODULE_BASE_NAMES = frozenset({"GradientCheckpointingLayer", "LightningModule", "ModelMixin"})
KNOWN_MODULE_BASE_SUFFIXES = ("PreTrainedModel",)
NOT_TORCH_PREFIXES = ("TF", "Flax")
#: ``torch.nn`` names that are not modules (a class deriving from them is not a model).
TORCH_NN_NOT_MODULES = frozenset({"Parameter", "UninitializedParameter", "UninitializedBuffer", "Buffer"})
CONTAINERS = frozenset({"ModuleList", "Sequential", "ModuleDict", "ParameterList", "ParameterDict"})
PARAMETER = ("torch.nn.Parameter", "torch.nn.parameter.Parameter")
#: ``self.x = nn.Buffer(t)`` registers a buffer (a tensor attribute) like ``register_buffer``.
BUFFER = ("torch.nn.Buffer", "torch.nn.parameter.Buffer")
DISABLE = ("torch.compiler.disable", "torch._dynamo.disable", "torch._disable_dynamo")
#: ``self.X.method`` calls that add submodules to a container attribute.
ADDING_METHODS = frozenset({"append", "extend", "insert", "add_module"})
MAX_IMPORT_HOPS = 3
MAX_PARENT_DIRS = 6


# -- parsed files ----------------------------------------------------------------------------


@dataclass(eq=False)
class ParsedModule:
    """One Python file's top-level definitions and imports."""

    path: str | None
    tree: ast.Module
    imports: ImportMap
    classes: dict[str, ast.ClassDef]
    functions: dict[str, ast.FunctionDef | ast.AsyncFunctionDef]
    #: ``name = value`` at the top level (the last one wins): ``logger = logging.getLogger(...)``.
    assignments: dict[str, ast.expr] = field(default_factory=dict)

    def __repr__(self) -> str:
        return f"ParsedModule({self.path!r})"

    @classmethod
    def from_tree(cls, tree: ast.Module, path: str | None, imports: ImportMap | None = None) -> ParsedModule:
        classes: dict[str, ast.ClassDef] = {}
        functions: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}
        assignments: dict[str, ast.expr] = {}
        own_imports = imports is None
        imports = imports or ImportMap()
        for stmt in top_level_statements(tree.body):
            if isinstance(stmt, ast.ClassDef):
                classes[stmt.name] = stmt
            elif isinstance(stmt, FUNCTION_DEFS):
                functions[stmt.name] = stmt
            elif isinstance(stmt, ast.Assign):
                for target in stmt.targets:
                    if isinstance(target, ast.Name):
                        assignments[target.id] = stmt.value
            elif own_imports and isinstance(stmt, (ast.Import, ast.ImportFrom)):
                imports.add(stmt)
        return cls(path, tree, imports, classes, functions, assignments)


def top_level_statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Top-level statements, looking inside ``if``/``try``/``with`` blocks (guarded definitions)."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, ast.If):
            yield from top_level_statements(stmt.body)
            yield from top_level_statements(stmt.orelse)
        elif isinstance(stmt, ast.Try) or type(stmt).__name__ == "TryStar":
            yield from top_level_statements(stmt.body)
            for handler in stmt.handlers:
                yield from top_level_statements(handler.body)
            yield from top_level_statements(stmt.orelse)
            yield from top_level_statements(stmt.finalbody)
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            yield from top_level_statements(stmt.body)


#: Bumped whenever a module object that memos may hold stops being the one :func:`load_module`
#: returns for its path (the cache evicts a module, or a file is parsed again): what is kept
#: per process about other files' functions (their callees) is then recomputed.
_generation = 0
_parsed_paths: set[str] = set()


@lru_cache(maxsize=256)
def _load(path: str, mtime_ns: int, size: int) -> ParsedModule | None:
    global _generation
    info = _load.cache_info()
    if path in _parsed_paths or info.currsize >= (info.maxsize or 0) > 0:
        _generation += 1
    _parsed_paths.add(path)
    try:
        tree = ast.parse(reading.read_bytes(path), filename=path)  # never blocks on a pipe
    except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    return ParsedModule.from_tree(tree, path)


def _stamp(path: str) -> tuple[int, int] | None:
    """What :func:`load_module` keys a parsed file on (None: unreadable)."""
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return stat.st_mtime_ns, stat.st_size


def load_module(path: str) -> ParsedModule | None:
    """Parse a local module once per run (cached by path, mtime and size); None if unreadable."""
    dependencies.record(path)
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return _load(path, stat.st_mtime_ns, stat.st_size)


def module_file(importer: str | None, dotted: str) -> str | None:
    """The ``.py`` file a module name refers to, seen from file ``importer``.

    ``dotted`` is as :class:`ImportMap` records it: ``.layers`` / ``..pkg.mod`` for relative
    imports, ``pkg.mod`` for absolute ones (looked for in the importer's folder and up to
    ``MAX_PARENT_DIRS`` folders above it: the project's own packages, never site-packages).
    """
    if not importer or importer.startswith("<") or importer == "-":
        return None
    folder = os.path.dirname(os.path.abspath(importer))
    level = len(dotted) - len(dotted.lstrip("."))
    parts = [p for p in dotted[level:].split(".") if p]
    if level:
        for _ in range(level - 1):
            folder = os.path.dirname(folder)
        return _module_in(folder, parts)
    if not parts or "site-packages" in folder:
        return None
    for _ in range(MAX_PARENT_DIRS):
        found = _module_in(folder, parts)
        if found:
            return found
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    return None


def _module_in(folder: str, parts: list[str]) -> str | None:
    base = os.path.join(folder, *parts)
    for candidate in (base + ".py", os.path.join(base, "__init__.py")):
        if os.path.isfile(candidate):
            return candidate
    return None


# -- classes ---------------------------------------------------------------------------------


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
    def init(self) -> ast.FunctionDef | None:
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


@dataclass(eq=False)
class Function:
    node: ast.FunctionDef | ast.AsyncFunctionDef
    cls: ModuleClass | None
    module: ParsedModule
    label: str
    local: bool
    #: For a function defined inside another (a closure), the enclosing one: names the closure
    #: does not bind are the enclosing function's.
    parent: Function | None = None

    def __repr__(self) -> str:
        return f"Function({self.label})"

    @property
    def is_method(self) -> bool:
        """Called bound (its first parameter is ``self``): a method, not a closure inside one."""
        return self.cls is not None and self.parent is None

    @property
    def disabled(self) -> bool:
        """Decorated with ``torch.compiler.disable``: dynamo runs it eagerly and traces nothing in it."""
        found = self.__dict__.get("_disabled")
        if found is None:
            imports = self.module.imports
            found = any(
                imports.resolves_to(d.func if isinstance(d, ast.Call) else d, *DISABLE)
                for d in self.node.decorator_list
            )
            self.__dict__["_disabled"] = found
        return found


@dataclass(frozen=True)
class Chain:
    labels: tuple[str, ...]

    def __str__(self) -> str:
        return "reached via " + " → ".join(self.labels)


@dataclass
class FunctionFacts:
    """What one pass over a function body (nested defs and lambdas included) finds.

    ``bindings``: name → every value bound to it: ``("value", expr, index)`` for an assignment
    (``index``: position in a tuple target), ``("iter", expr, index)`` for a ``for`` or
    comprehension target over ``expr``, ``("param", arg, None)`` for a parameter of the function,
    ``("unknown", node, None)`` for anything else (``with ... as``, a nested function's
    parameter, ``global``, an import). ``self_assigns``: ``(attr, value)`` of ``self.attr = value``.
    """

    bindings: dict[str, list[tuple[str, ast.AST, int | None]]] = field(default_factory=dict)
    calls: list[ast.Call] = field(default_factory=list)
    returns: list[ast.expr] = field(default_factory=list)
    self_assigns: list[tuple[str, ast.expr]] = field(default_factory=list)


class FactsCollector:
    """Builds :class:`FunctionFacts` for every function of a file from the engine's single walk
    (``enter``/``visit``/``leave`` in walk order), or for one function on its own
    (:func:`function_facts`). A node inside nested functions counts for each of them."""

    #: Node types :meth:`visit` looks at (besides the function nodes).
    NODE_TYPES = (
        ast.If,
        ast.Call,
        ast.Assign,
        ast.AnnAssign,
        ast.AugAssign,
        ast.NamedExpr,
        ast.For,
        ast.AsyncFor,
        ast.comprehension,
        ast.withitem,
        ast.Return,
        ast.Global,
        ast.Nonlocal,
        ast.ExceptHandler,
        ast.Import,
        ast.ImportFrom,
    )
    FUNCTION_TYPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)

    def __init__(self) -> None:
        self.facts: dict[int, FunctionFacts] = {}
        self._stack: list[FunctionFacts] = []
        #: The function nodes enclosing the node being walked, outermost first.
        self.defs: list[ast.AST] = []
        #: ``(start, end)`` positions of statements dynamo skips: the body of
        #: ``if not torch.compiler.is_compiling():``, the ``else`` of ``if is_compiling():``.
        self.untraced: list[tuple[tuple[int, int], tuple[int, int]]] = []
        #: Node type → the candidate collectors of the RC2xx rules that want it (filled by the rules).
        self.wanted: dict[type, list] = {}

    def is_untraced(self, node: ast.AST) -> bool:
        if not self.untraced:
            return False
        if not hasattr(node, "lineno"):  # a comprehension: where its target is
            node = node.target
        where = (node.lineno, node.col_offset)
        return any(start <= where <= end for start, end in self.untraced)

    def enter(self, func: ast.AST) -> None:
        stack = self._stack
        args = _arguments(func.args)
        for outer in stack:  # a nested function's names are unknown values to its parents
            for arg in args:
                outer.bindings.setdefault(arg.arg, []).append(("unknown", arg, None))
            if type(func) is not ast.Lambda:
                outer.bindings.setdefault(func.name, []).append(("unknown", func, None))
        facts = FunctionFacts()
        for arg in args:
            facts.bindings.setdefault(arg.arg, []).append(("param", arg, None))
        self.facts[id(func)] = facts
        stack.append(facts)
        self.defs.append(func)

    def leave(self, func: ast.AST) -> None:
        if self._stack:
            self._stack.pop()
            self.defs.pop()

    def visit(self, node: ast.AST) -> None:
        stack = self._stack
        if not stack:
            return
        kind = type(node)
        if kind is ast.If:
            guard = compiling_guard(node.test)
            if guard is not None:
                skipped = node.orelse if guard else node.body
                if skipped:
                    last = skipped[-1]
                    self.untraced.append(
                        (
                            (skipped[0].lineno, skipped[0].col_offset),
                            (last.end_lineno or last.lineno, last.end_col_offset or 0),
                        )
                    )
        elif kind is ast.Call:
            for facts in stack:
                facts.calls.append(node)
        elif kind is ast.Assign:
            for target in node.targets:
                self._bind(target, "value", node.value)
        elif kind is ast.AnnAssign or kind is ast.NamedExpr:
            if node.value is not None:
                self._bind(node.target, "value", node.value)
        elif kind is ast.AugAssign:
            self._bind(node.target, "value", ast.BinOp(node.target, node.op, node.value))
        elif kind is ast.For or kind is ast.AsyncFor or kind is ast.comprehension:
            self._bind(node.target, "iter", node.iter)
        elif kind is ast.withitem:
            if node.optional_vars is not None:
                self._bind(node.optional_vars, "unknown", node)
        elif kind is ast.Return:
            if node.value is not None:
                stack[-1].returns.append(node.value)
        elif kind is ast.Global or kind is ast.Nonlocal:
            for name in node.names:
                self._add(name, ("unknown", node, None))
        elif kind is ast.ExceptHandler:
            if node.name:
                self._add(node.name, ("unknown", node, None))
        elif kind is ast.Import or kind is ast.ImportFrom:
            for alias in node.names:
                self._add((alias.asname or alias.name).split(".")[0], ("unknown", node, None))

    def _add(self, name: str, binding: tuple[str, ast.AST, int | None]) -> None:
        for facts in self._stack:
            facts.bindings.setdefault(name, []).append(binding)

    def _bind(self, target: ast.AST, kind: str, value: ast.AST) -> None:
        kind_of_target = type(target)
        if kind_of_target is ast.Name:
            self._add(target.id, (kind, value, None))
        elif kind_of_target is ast.Attribute:
            if kind == "value" and type(target.value) is ast.Name and target.value.id == "self":
                for facts in self._stack:
                    facts.self_assigns.append((target.attr, value))
        elif kind_of_target is ast.Tuple or kind_of_target is ast.List:
            for i, elt in enumerate(target.elts):
                if type(elt) is ast.Starred:
                    self._bind(elt.value, "unknown", value)
                elif type(elt) is ast.Name:
                    self._add(elt.id, (kind, value, i))
                else:
                    self._bind(elt, "unknown", value)


IS_COMPILING = frozenset({"is_compiling", "is_dynamo_compiling", "is_torchdynamo_compiling", "is_exporting"})
#: Also true while dynamo traces, and called with arguments: transformers' ``is_tracing(tensor)``
#: (``torch.jit.is_tracing()`` is false under dynamo: taking it for true only loses findings).
IS_TRACING = frozenset({"is_tracing"})


def compiling_guard(test: ast.AST) -> bool | None:
    """True for ``is_compiling()``, False for ``not is_compiling()``, None for other tests
    (``torch.compiler.is_compiling``, ``torch._dynamo.is_compiling``, transformers'
    ``is_torchdynamo_compiling`` and ``is_tracing(t)``: dynamo sees them as constant True while
    tracing). Through ``and``/``or``: ``cond and not is_compiling()`` is False (the body never
    runs under dynamo), ``cond or is_compiling()`` is True (the ``else`` never runs)."""
    if type(test) is ast.BoolOp:
        found = [compiling_guard(v) for v in test.values]
        if type(test.op) is ast.And and False in found:
            return False
        if type(test.op) is ast.Or and True in found:
            return True
        return None
    negated = False
    if type(test) is ast.UnaryOp and type(test.op) is ast.Not:
        negated, test = True, test.operand
    if type(test) is ast.Call:
        func = test.func
        name = func.attr if type(func) is ast.Attribute else func.id if type(func) is ast.Name else None
        if (name in IS_COMPILING and not test.args) or name in IS_TRACING:
            return not negated
    return None


def traced_operands(test: ast.BoolOp) -> list[ast.expr]:
    """The operands of ``and``/``or`` dynamo evaluates: none after a compiling guard that
    short-circuits (``not is_tracing(m) and m.all()``: ``m.all()`` is never run while tracing)."""
    stop = False if type(test.op) is ast.And else True
    found = []
    for value in test.values:
        found.append(value)
        if compiling_guard(value) is stop:
            break
    return found


_LEAF_FIELDS = frozenset(
    {
        "ctx",
        "id",
        "attr",
        "arg",
        "asname",
        "module",
        "level",
        "kind",
        "type_comment",
        "conversion",
        "is_async",
        "name",
        "names",
        "value_str",
    }
)
_FIELDS: dict[type, tuple[str, ...]] = {}


def _fields(node_type: type) -> tuple[str, ...]:
    found = _FIELDS.get(node_type)
    if found is None:
        found = (
            ()
            if node_type in (ast.Constant, ast.Name)
            else tuple(f for f in node_type._fields if f not in _LEAF_FIELDS)
        )
        _FIELDS[node_type] = found
    return found


def function_facts(func: ast.FunctionDef | ast.AsyncFunctionDef) -> FunctionFacts:
    """The facts of one function, walked on its own (a function of another file, or a file the
    engine did not walk for an RC2xx rule)."""
    collector = FactsCollector()
    collector.enter(func)
    facts = collector.facts[id(func)]
    nested_types = collector.FUNCTION_TYPES
    stack: list[tuple[ast.AST, bool]] = [(stmt, False) for stmt in func.body]
    pop, push, ast_node = stack.pop, stack.append, ast.AST
    while stack:
        node, nested = pop()
        kind = type(node)
        if kind in nested_types:
            for arg in _arguments(node.args):
                facts.bindings.setdefault(arg.arg, []).append(("unknown", arg, None))
            if kind is not ast.Lambda:
                facts.bindings.setdefault(node.name, []).append(("unknown", node, None))
            nested = True
        elif not (nested and kind is ast.Return):  # a nested function's return is not ours
            collector.visit(node)
        for name in _fields(kind):
            value = getattr(node, name, None)
            if type(value) is list:
                for item in value:
                    if isinstance(item, ast_node):
                        push((item, nested))
            elif isinstance(value, ast_node):
                push((value, nested))
    return facts


def _arguments(args: ast.arguments) -> list[ast.arg]:
    found = [*args.posonlyargs, *args.args, *args.kwonlyargs]
    if args.vararg:
        found.append(args.vararg)
    if args.kwarg:
        found.append(args.kwarg)
    return found


# -- the analysis ----------------------------------------------------------------------------

_CACHE: weakref.WeakKeyDictionary[FileContext, Reachability] = weakref.WeakKeyDictionary()
_DEEP_CACHE: weakref.WeakKeyDictionary[FileContext, Reachability] = weakref.WeakKeyDictionary()
_FUNCTIONS_CACHE: weakref.WeakKeyDictionary[FileContext, Reachability] = weakref.WeakKeyDictionary()
_COLLECTORS: weakref.WeakKeyDictionary[FileContext, FactsCollector] = weakref.WeakKeyDictionary()


def collector_for(ctx: FileContext) -> tuple[FactsCollector, bool]:
    """The file's facts collector and whether this call created it: the rule that creates it
    feeds it from the engine's walk (once per node, however many RC2xx rules run)."""
    found = _COLLECTORS.get(ctx)
    if found is not None:
        return found, False
    found = _COLLECTORS[ctx] = FactsCollector()
    return found, True


def for_context(ctx: FileContext, deep: bool = False, functions: bool = False) -> Reachability:
    """The file's reachability, built on first use and shared by every rule of the run.

    ``deep``: also follow submodule classes and functions imported from local modules (parsed
    lazily, once per run). The default reads other files only to resolve base classes: a
    finding is always reported in the file that contains it, so per-file rules do not need the
    rest, and the lint stays fast on large trees. RC210 asks for the deep graph.

    ``functions`` (without ``deep``): the default graph plus the functions it calls in local
    modules (and what those call): the RC2xx rules look there for breaks of other files a
    forward reaches. Classes stay as the default graph sees them, so no file is read for a
    class; a module class of another file reports its own breaks when its file is linted.
    """
    cache = _DEEP_CACHE if deep else _FUNCTIONS_CACHE if functions else _CACHE
    found = cache.get(ctx)
    if found is None:
        if functions and not deep:
            # The same classes as the default graph (neither reads a file for a class): shared,
            # with its parsed module, instead of built again.
            found = Reachability(None, functions=True, classes_from=for_context(ctx))
        else:
            collector = _COLLECTORS.get(ctx)
            facts = collector.facts if collector is not None else None
            found = Reachability(
                ParsedModule.from_tree(ctx.tree, ctx.filename, ctx.imports), deep=deep, facts=facts, functions=functions
            )
        cache[ctx] = found
    return found


def of_module(module: ParsedModule) -> Reachability:
    """The shallow reachability a lint of ``module``'s own file builds (its forwards, nothing
    followed into other files), kept with the parsed module: once per file and process."""
    found = module.__dict__.get("_own_reachability")
    if found is None:
        found = module.__dict__["_own_reachability"] = Reachability(module, deep=False)
    return found


def same_file(a: str | None, b: str | None) -> bool:
    return a is not None and b is not None and os.path.abspath(a) == os.path.abspath(b)


def from_source(text: str, filename: str = "<string>", deep: bool = True) -> Reachability:
    """Build from source text (tests, tools): imports read from the top-level statements."""
    return Reachability(ParsedModule.from_tree(ast.parse(text), filename), deep=deep)


class Reachability:
    def __init__(
        self,
        module: ParsedModule | None,
        deep: bool = True,
        facts: dict[int, FunctionFacts] | None = None,
        functions: bool = False,
        classes_from: Reachability | None = None,
    ) -> None:
        """``facts``: the :class:`FunctionFacts` the engine's walk collected, by ``id`` of the def.
        ``functions``: follow calls of functions of local modules even when not ``deep``.
        ``classes_from``: a graph of the same file with the same ``deep``: its module, classes
        and facts are taken over (``module`` and ``facts`` are then ignored)."""
        self.deep = deep = deep if classes_from is None else classes_from.deep
        self.functions = deep or functions
        self._functions: dict[tuple[int, int], Function] = {}
        self._classes_from = classes_from
        self._hole = False
        #: Per function of the linted file (by def and receiver): what :meth:`_find_callees` found.
        self._local_specs: dict[tuple[int, int], list] = {}
        if classes_from is not None:
            self.module = module = classes_from.module
            self._classes: dict[int, ModuleClass | None] = dict(classes_from._classes)
            self._facts: dict[int, FunctionFacts] = dict(classes_from._facts)
            self.classes: dict[str, ModuleClass] = dict(classes_from.classes)
        else:
            self.module = module
            self._classes = {}
            self._facts = dict(facts) if facts else {}
            self.classes = {}
            for name, node in module.classes.items():
                cls = self._class(node, module)
                if cls is not None and cls.is_module:
                    self.classes[name] = cls
        self._succ: dict[Function, dict[Function, list[ast.Call]]] | None = None
        self._pred: dict[Function, dict[Function, list[ast.Call]]] = {}
        self._nx: nx.DiGraph | None = None
        self._chains: dict[Function, Chain] = {}
        self._by_node: dict[int, tuple[Function, Chain]] | None = None
        self.roots: list[Function] = []

    # -- classes --------------------------------------------------------------------------
    def module_class(self, name: str, module: ParsedModule | None = None) -> ModuleClass | None:
        """The module class ``name`` defined in (or imported into) ``module`` (the linted file)."""
        module = module or self.module
        found = self.resolve_class(ast.Name(name, ast.Load()), module, load=True)
        return found if isinstance(found, ModuleClass) and found.is_module else None

    def _class(self, node: ast.ClassDef, module: ParsedModule) -> ModuleClass | None:
        key = id(node)
        if key in self._classes:
            return self._classes[key]
        self._classes[key] = None  # in progress: a class deriving from itself is nothing
        cls = ModuleClass(node.name, node, module, is_module=False)
        known = any(_is_known_module_base(base, module.imports) for base in node.bases)
        cls.is_module = known
        for base in node.bases:
            if _is_known_module_base(base, module.imports):
                continue
            resolved = self.resolve_class(base, module)
            if isinstance(resolved, ModuleClass):
                cls.bases.append(resolved)
                cls.is_module = cls.is_module or resolved.is_module
            elif isinstance(resolved, str) and not known and not self.deep and "forward" in _method_names(node):
                # Shallow graphs read no other file: a class that defines ``forward`` on a base
                # from a local module of the project is taken for a module.
                cls.is_module = cls.is_module or self._local_module_path(resolved, module) is not None
        self._classes[key] = cls
        if cls.is_module:
            _collect_submodules(self, cls)
        return cls

    def resolve_class(
        self, expr: ast.AST, module: ParsedModule, hops: int = 0, load: bool | None = None
    ) -> ModuleClass | str | None:
        """What a class name means in ``module``: a local :class:`ModuleClass` (defined there or,
        when ``load`` (default: ``deep``), in a local module it imports), else its qualified name
        (``torch.nn.LSTM``), else None."""
        if isinstance(expr, ast.Name) and not module.imports.imported(expr.id):
            node = module.classes.get(expr.id)
            if node is not None:
                return self._class(node, module)
            return None
        qualname = module.imports.qualname(expr)
        if qualname is None or not module.imports.root_is_import(expr):
            return None
        load = self.deep if load is None else load
        target = self._local_definition(qualname, module, hops) if load else None
        if target is not None:
            found_module, name = target
            node = found_module.classes.get(name)
            if node is not None:
                return self._class(node, found_module)
            if hops < MAX_IMPORT_HOPS and found_module.imports.imported(name):
                return self.resolve_class(ast.Name(name, ast.Load()), found_module, hops + 1, load)
            return None
        return qualname

    def _local_definition(self, qualname: str, module: ParsedModule, hops: int) -> tuple[ParsedModule, str] | None:
        """(module, name) when ``qualname`` names something defined in a local module file."""
        if hops > MAX_IMPORT_HOPS:
            return None
        path = self._local_module_path(qualname, module)
        loaded = load_module(path) if path is not None else None
        return (loaded, qualname.rpartition(".")[2]) if loaded is not None else None

    @staticmethod
    def _local_module_path(qualname: str, module: ParsedModule) -> str | None:
        """The file of a local module ``qualname`` is imported from (not read)."""
        dotted = qualname.rpartition(".")[0]
        if module.path is None or not dotted or _is_third_party(dotted):
            return None
        path = module_file(module.path, dotted)
        if path is None or os.path.abspath(path) == os.path.abspath(module.path):
            return None
        return path

    def resolve_function(
        self, expr: ast.AST, module: ParsedModule, hops: int = 0
    ) -> tuple[ParsedModule, ast.FunctionDef | ast.AsyncFunctionDef] | None:
        """A module-level function named by ``expr`` (``helper``, ``utils.helper``) in ``module``
        or in a local module it imports."""
        if isinstance(expr, ast.Name) and not module.imports.imported(expr.id):
            node = module.functions.get(expr.id)
            return (module, node) if node is not None else None
        if not self.functions or not module.imports.root_is_import(expr):
            if not self.functions and module.imports.root_is_import(expr):
                self._hole = True  # what a graph that follows local modules resolves (see _find_callees)
            return None
        qualname = module.imports.qualname(expr)
        target = self._local_definition(qualname, module, hops) if qualname else None
        if target is None:
            return None
        found_module, name = target
        node = found_module.functions.get(name)
        if node is not None:
            return found_module, node
        if hops < MAX_IMPORT_HOPS and found_module.imports.imported(name):
            return self.resolve_function(ast.Name(name, ast.Load()), found_module, hops + 1)
        return None

    # -- functions and facts ----------------------------------------------------------------
    def function(
        self,
        node: ast.FunctionDef | ast.AsyncFunctionDef,
        cls: ModuleClass | None,
        module: ParsedModule,
        owner: ModuleClass | None = None,
    ) -> Function:
        """The graph node for ``node`` run with ``self`` a ``cls`` (``owner``: the defining class)."""
        key = (id(node), id(cls))
        found = self._functions.get(key)
        if found is None:
            label = f"{(owner or cls).name}.{node.name}" if cls is not None else node.name
            found = Function(node, cls, module, label, module is self.module)
            self._functions[key] = found
        return found

    def counterpart(self, func: Function) -> Function | None:
        """This graph's node for a function of the linted file taken from another graph of the
        same file (the shallow one): same def, same receiver class. None for a closure, a
        function of another file, or a receiver this graph does not know as a module."""
        if func.parent is not None or not func.local:
            return None
        if func.cls is None:
            return (
                self.function(func.node, None, self.module)
                if self.module.functions.get(func.node.name) is func.node
                else None
            )
        cls = self.classes.get(func.cls.name)
        if cls is None or cls.node is not func.cls.node:
            return None
        method = cls.method(func.node.name)
        if method is None or method[1] is not func.node:
            return None
        owner, node = method
        return self.function(node, cls, owner.module, owner)

    def facts(self, func: Function | ast.AST) -> FunctionFacts:
        node = func.node if isinstance(func, Function) else func
        found = self._facts.get(id(node))
        if found is None:
            if isinstance(func, Function) and func.module is not self.module and func.module.path is not None:
                # A function of another file: its facts do not depend on the linted file.
                memo = func.module.__dict__.setdefault("_facts_memo", {})
                found = memo.get(id(node))
                if found is None:
                    found = memo[id(node)] = function_facts(node)
                self._facts[id(node)] = found
            else:
                found = self._facts[id(node)] = function_facts(node)
        return found

    # -- the graph --------------------------------------------------------------------------
    @property
    def graph(self) -> nx.DiGraph:
        """The call graph as a networkx DiGraph (edge data ``calls``: the ``ast.Call`` nodes)."""
        if self._nx is None:
            import networkx as nx  # only for callers that want it: importing it costs ~0.3 s

            graph = nx.DiGraph()
            for caller, callees in self._successors().items():
                graph.add_node(caller)
                for callee, calls in callees.items():
                    graph.add_edge(caller, callee, calls=calls)
            self._nx = graph
        return self._nx

    def _successors(self) -> dict[Function, dict[Function, list[ast.Call]]]:
        if self._succ is None:
            self._build()
        return self._succ

    def _build(self) -> None:
        succ: dict[Function, dict[Function, list[ast.Call]]] = {}
        pred = self._pred
        self._succ = succ
        forwards = []
        for cls in self.classes.values():
            found = cls.method("forward")
            if found is not None:
                owner, node = found
                forwards.append(self.function(node, cls, owner.module, owner))
        self._expand(forwards)
        # Chains start at the forwards nothing else calls (the top-level models), then at any
        # forward left unreached (a cycle); breadth first, so each chain is a shortest one.
        tops = [f for f in forwards if not any(p is not f for p in pred[f])]
        self.roots = list(tops)
        self._chains = self._chains_from(tops)
        for func in forwards:
            if func not in self._chains:
                self.roots.append(func)
                for callee, chain in self._chains_from([func]).items():
                    self._chains.setdefault(callee, chain)

    def _expand(self, roots: list[Function]) -> None:
        """Add ``roots`` and everything they reach to the graph."""
        succ, pred = self._succ, self._pred
        pending = [root for root in roots if root not in succ]
        for func in pending:
            succ[func] = {}
            pred.setdefault(func, {})
        while pending:
            caller = pending.pop()
            if caller.disabled:
                continue  # dynamo does not trace into it: neither does the graph
            out = succ[caller]
            for callee, call in self._callees(caller):
                if callee not in succ:
                    succ[callee] = {}
                    pred.setdefault(callee, {})
                    pending.append(callee)
                out.setdefault(callee, []).append(call)
                pred[callee].setdefault(caller, []).append(call)

    def _chains_from(self, roots: list[Function]) -> dict[Function, Chain]:
        succ = self._successors()
        chains = {root: Chain((root.label,)) for root in roots}
        frontier = list(chains)
        while frontier:
            following = []
            for func in frontier:
                labels = chains[func].labels
                for callee in succ.get(func, ()):
                    if callee not in chains:
                        chains[callee] = Chain(labels + (callee.label,))
                        following.append(callee)
            frontier = following
        return chains

    def chain(self, func: Function) -> Chain | None:
        self._successors()
        return self._chains.get(func)

    def reached(self) -> list[tuple[Function, Chain]]:
        self._successors()
        return list(self._chains.items())

    def reached_from(self, cls: ModuleClass) -> list[tuple[Function, Chain]]:
        """Functions reachable from ``cls.forward``, with chains starting at it."""
        found = cls.method("forward")
        if found is None:
            return []
        owner, node = found
        root = self.function(node, cls, owner.module, owner)
        if root not in self._successors():  # a class of another file (RC210's model)
            self._expand([root])
            self._nx = None
        return list(self._chains_from([root]).items())

    def locate(self, function_nodes: Iterable[ast.AST]) -> tuple[Function, Chain] | None:
        """For a finding inside the given defs (outermost first, as ``ctx.ancestors`` lists
        them), the innermost reached one and its chain (the shortest, over receivers)."""
        by_node = self._by_node
        if by_node is None:
            self._successors()
            by_node = self._by_node = {}
            for func, chain in self._chains.items():
                best = by_node.get(id(func.node))
                if best is None or len(chain.labels) < len(best[1].labels):
                    by_node[id(func.node)] = (func, chain)
        for node in reversed(tuple(function_nodes)):
            found = by_node.get(id(node))
            if found is not None:
                return found
        return None

    def callers(self, func: Function) -> list[tuple[Function, ast.Call]]:
        self._successors()
        return [(caller, call) for caller, calls in self._pred.get(func, {}).items() for call in calls]

    def paths(
        self, follows: Callable[[Function, ast.Call, Function], bool] | None = None
    ) -> dict[Function, tuple[Function, ast.Call] | None]:
        """The shortest-path tree from :attr:`roots`: each reached function with the (caller,
        call) it is first reached through (None for a root), breadth first, so iterating the
        result lists functions by distance. ``follows(caller, call, callee)``: an edge none of
        whose calls it accepts is not followed (a call under ``if not is_compiling():``)."""
        succ = self._successors()
        tree: dict[Function, tuple[Function, ast.Call] | None] = dict.fromkeys(self.roots)
        order = list(self.roots)
        for caller in order:
            for callee, calls in succ.get(caller, {}).items():
                if callee in tree:
                    continue
                call = next((c for c in calls if follows is None or follows(caller, c, callee)), None)
                if call is None:
                    continue
                tree[callee] = (caller, call)
                order.append(callee)
        return tree

    def reachable(self, starts: Iterable[Function], within: dict[Function, object] | set[Function]) -> set[Function]:
        """Functions of ``within`` reachable from ``starts`` (themselves included)."""
        succ = self._successors()
        seen = {f for f in starts if f in within}
        stack = list(seen)
        while stack:
            for callee in succ.get(stack.pop(), ()):
                if callee in within and callee not in seen:
                    seen.add(callee)
                    stack.append(callee)
        return seen

    # -- edges ------------------------------------------------------------------------------
    def call_targets(self, func: ast.AST, caller: Function) -> list[Function]:
        """What calling ``func`` (the ``func`` of an ``ast.Call``) inside ``caller`` may run."""
        return self._call_targets(func, caller, self.facts(caller))

    def _callees(self, caller: Function) -> Iterator[tuple[Function, ast.Call]] | list[tuple[Function, ast.Call]]:
        if caller.module is not self.module:
            if self.functions and caller.cls is None and caller.module.path is not None:
                return self._foreign_callees(caller)
            return self._find_callees(caller)
        shallow = self._classes_from
        if shallow is not None:
            specs = shallow._local_specs.get((id(caller.node), id(caller.cls)))
            if specs is not None:
                return self._replay_local(caller, specs)
        if not self.functions:
            specs = []
            found = list(self._find_callees(caller, specs))
            self._local_specs[(id(caller.node), id(caller.cls))] = specs
            return found
        return self._find_callees(caller)

    def _replay_local(self, caller: Function, specs: list) -> list[tuple[Function, ast.Call]]:
        """The callees of a function of the linted file, from what the default graph (whose
        classes this graph shares) found: the same, but for the calls of imported names it left
        unresolved (``callee`` None), which are resolved here."""
        functions = self._functions
        result = []
        for callee, call in specs:
            if callee is None:
                result.extend((found, call) for found in self._call_targets(call.func, caller, self.facts(caller)))
                continue
            if callee.parent is not None:  # a closure: keyed and labelled as :meth:`_closures` does
                key = (id(callee.node), id(caller.cls))
                found = functions.get(key)
                if found is None:
                    found = functions[key] = Function(
                        callee.node,
                        caller.cls,
                        caller.module,
                        f"{caller.label}.{callee.node.name}",
                        caller.local,
                        parent=caller,
                    )
            else:  # as :meth:`function` makes it (the label comes from the same class objects)
                key = (id(callee.node), id(callee.cls))
                found = functions.get(key)
                if found is None:
                    found = functions[key] = Function(
                        callee.node, callee.cls, callee.module, callee.label, callee.module is self.module
                    )
            result.append((found, call))
        return result

    def _foreign_callees(self, caller: Function) -> list[tuple[Function, ast.Call]]:
        """The callees of a plain function (or closure) of another file: they resolve in its own
        module alone, so they are found once per process (and generation of parsed modules) and
        mapped onto this graph's nodes, closures keyed and labelled as :meth:`_closures` does."""
        memo = caller.module.__dict__.setdefault("_callee_memo", {})
        found = memo.get(id(caller.node))
        if found is None or found[0] != _generation or any(_stamp(path) != stamp for path, stamp in found[2]):
            generation = _generation  # a module parsed again meanwhile: the entry is stale at once
            with dependencies.recording() as paths:
                callees = list(self._find_callees(caller))
            specs = [(callee.node, callee.module if callee.parent is None else None, call) for callee, call in callees]
            memo[id(caller.node)] = (generation, specs, tuple((path, _stamp(path)) for path in paths))
            for path in paths:
                dependencies.record(path)
            return callees
        _, specs, stamps = found
        for path, _ in stamps:
            dependencies.record(path)
        result = []
        functions = self._functions
        for node, module, call in specs:
            if module is not None:
                callee = self.function(node, None, module)
            else:
                key = (id(node), id(caller.cls))
                callee = functions.get(key)
                if callee is None:
                    callee = functions[key] = Function(
                        node, caller.cls, caller.module, f"{caller.label}.{node.name}", caller.local, parent=caller
                    )
            result.append((callee, call))
        return result

    def _find_callees(self, caller: Function, specs: list | None = None) -> Iterator[tuple[Function, ast.Call]]:
        """``specs``: also record there each (callee, call) and, as (None, call), each call of an
        imported name this graph does not follow into a local module (see :meth:`_replay_local`)."""
        facts = self.facts(caller)
        body = caller.node.body
        start = (body[0].lineno, body[0].col_offset) if body else (0, 0)
        for call in facts.calls:
            if (call.lineno, call.col_offset) < start:
                continue  # a decorator, default or annotation: run when the def is made, not by a call
            if specs is not None:
                self._hole = False
                targets = self._call_targets(call.func, caller, facts)
                if self._hole:
                    specs.append((None, call))
                for callee in targets:
                    specs.append((callee, call))
                    yield callee, call
            else:
                for callee in self._call_targets(call.func, caller, facts):
                    yield callee, call
            checkpoint = "checkpoint" in (_last_name(call.func) or "")
            for arg in [*call.args, *(kw.value for kw in call.keywords)]:
                if type(arg) is ast.Starred:
                    arg = arg.value
                # A method or submodule passed on (``checkpoint(self.block, x)``) is called there.
                if (type(arg) is ast.Attribute and (arg.attr == "__call__" or _is_self(arg.value))) or (
                    checkpoint and type(arg) in (ast.Name, ast.Subscript)
                ):
                    for callee in self._call_targets(arg, caller, facts, passed=True):
                        if specs is not None:
                            specs.append((callee, call))
                        yield callee, call

    def _call_targets(
        self, func: ast.AST, caller: Function, facts: FunctionFacts, passed: bool = False
    ) -> list[Function]:
        """Functions a call of ``func`` inside ``caller`` may run."""
        cls = caller.cls
        if isinstance(func, ast.Attribute) and func.attr == "__call__":
            func = func.value
        if isinstance(func, ast.Attribute):
            value = func.value
            if _is_self(value) and cls is not None:
                method = cls.method(func.attr)
                if method is not None:
                    owner, node = method
                    return [self.function(node, cls, owner.module, owner)]
                sub = cls.submodule(func.attr)
                return self._forwards(sub.classes) if sub is not None else []
            if _is_super_call(value) and cls is not None:
                for base in cls.mro()[1:]:
                    if func.attr in base.local_methods:
                        return [self.function(base.local_methods[func.attr], cls, base.module, base)]
                return []
            if passed:
                return []
            owners = self._module_classes_of(value, caller, facts)
            if owners:
                found = []
                for owner_cls in owners:
                    method = owner_cls.method(func.attr)
                    if method is not None:
                        defining, node = method
                        found.append(self.function(node, owner_cls, defining.module, defining))
                return found
            resolved = self.resolve_function(func, caller.module)
            return [self.function(resolved[1], None, resolved[0])] if resolved else []
        if isinstance(func, ast.Subscript):
            return self._forwards(self._module_classes_of(func, caller, facts))
        if isinstance(func, ast.Name):
            classes = self._module_classes_of(func, caller, facts)
            if classes:
                return self._forwards(classes)
            bindings = facts.bindings.get(func.id)
            if bindings:
                return self._closures(func.id, bindings, caller)
            if passed:
                return []
            resolved = self.resolve_function(func, caller.module)
            return [self.function(resolved[1], None, resolved[0])] if resolved else []
        return []

    def _closures(self, name: str, bindings: list, caller: Function) -> list[Function]:
        """``gate(h)`` where ``def gate(t): ...`` is defined inside the caller."""
        found = []
        for kind, value, _ in bindings:
            if kind != "unknown" or type(value) not in FUNCTION_DEFS or value.name != name:
                continue
            key = (id(value), id(caller.cls))
            func = self._functions.get(key)
            if func is None:
                func = Function(value, caller.cls, caller.module, f"{caller.label}.{name}", caller.local, parent=caller)
                self._functions[key] = func
            found.append(func)
        return found

    def _forwards(self, classes: Iterable[ModuleClass]) -> list[Function]:
        found = []
        for cls in classes:
            method = cls.method("forward")
            if method is not None:
                owner, node = method
                found.append(self.function(node, cls, owner.module, owner))
        return found

    def _module_classes_of(
        self, expr: ast.AST, caller: Function, facts: FunctionFacts, depth: int = 0
    ) -> list[ModuleClass]:
        """Local module classes an expression may hold: ``self.attn``, ``self.h[i]``, a loop
        variable over ``self.h``, a name bound to one of those."""
        if depth > 4:
            return []
        cls = caller.cls
        if isinstance(expr, ast.Attribute) and _is_self(expr.value) and cls is not None:
            sub = cls.submodule(expr.attr)
            return list(sub.classes) if sub is not None else []
        if isinstance(expr, ast.Attribute):
            value = expr.value
            if isinstance(value, ast.Attribute) and _is_self(value.value) and cls is not None:
                container = cls.submodule(value.attr)
                if container is not None and container.container:
                    return list(container.classes)  # a ModuleDict member: self.layers.h
            owners = self._module_classes_of(value, caller, facts, depth + 1)
            found = []
            for owner in owners:
                sub = owner.submodule(expr.attr)
                if sub is not None:
                    found.extend(sub.classes)
            return found
        if isinstance(expr, ast.Subscript):
            return self._module_classes_of(expr.value, caller, facts, depth + 1)
        if (
            isinstance(expr, ast.Call)
            and isinstance(expr.func, ast.Attribute)
            and expr.func.attr in ("values", "children", "modules")
        ):
            return self._module_classes_of(expr.func.value, caller, facts, depth + 1)
        if isinstance(expr, ast.Name):
            found: list[ModuleClass] = []
            for kind, value, index in facts.bindings.get(expr.id, ()):
                if kind == "value" and index is None:
                    found.extend(self._module_classes_of(value, caller, facts, depth + 1))
                elif kind == "iter":
                    found.extend(self._iterated(value, index, caller, facts, depth + 1))
            return found
        return []

    def _iterated(
        self, iterable: ast.AST, index: int | None, caller: Function, facts: FunctionFacts, depth: int
    ) -> list[ModuleClass]:
        """Classes of the loop variable at tuple position ``index`` over ``iterable``."""
        if isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Name):
            if iterable.func.id == "enumerate" and iterable.args:
                return self._iterated(iterable.args[0], None, caller, facts, depth) if index == 1 else []
            if iterable.func.id == "zip":
                if index is not None and index < len(iterable.args):
                    return self._iterated(iterable.args[index], None, caller, facts, depth)
                return []
            if iterable.func.id in ("reversed", "list", "tuple", "iter") and iterable.args:
                return self._iterated(iterable.args[0], index, caller, facts, depth)
        if (
            isinstance(iterable, ast.Call)
            and isinstance(iterable.func, ast.Attribute)
            and iterable.func.attr == "items"
        ):
            return self._module_classes_of(iterable.func.value, caller, facts, depth) if index == 1 else []
        if index is not None:
            return []
        if isinstance(iterable, ast.Subscript):  # self.h[:n]
            iterable = iterable.value
        return self._module_classes_of(iterable, caller, facts, depth)


# -- helpers ---------------------------------------------------------------------------------


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


def _is_third_party(dotted: str) -> bool:
    root = dotted.split(".")[0]
    return root in (
        "torch",
        "transformers",
        "accelerate",
        "numpy",
        "typing",
        "os",
        "sys",
        "math",
        "functools",
        "collections",
        "dataclasses",
        "einops",
        "diffusers",
        "lightning",
        "pytorch_lightning",
        "timm",
    )


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


def _collect_submodules(reach: Reachability, cls: ModuleClass) -> None:
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
            values = [value for kind, value, index in bindings if kind == "value" and index is None]
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
    reach: Reachability,
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
            stack.extend(ast.iter_child_nodes(node))


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
