"""What names mean in a file: its module classes, the classes and module-level functions it
imports from local modules (followed when the graph is deep), the graph's :class:`Function`
nodes and each function's :class:`FunctionFacts`. The base of :class:`Reachability`."""

from __future__ import annotations

import ast
import os

from regcomp_lint.analysis.reachability.classes import (
    ModuleClass,
    _collect_submodules,
    _is_known_module_base,
    _method_names,
)
from regcomp_lint.analysis.reachability.facts import FunctionFacts, function_facts
from regcomp_lint.analysis.reachability.functions import Function
from regcomp_lint.analysis.reachability.modules import ParsedModule, is_third_party, load_module, module_file

MAX_IMPORT_HOPS = 3


class Resolver:
    """Names to classes and functions, the graph's nodes and their facts, for one file's graph."""

    def __init__(
        self,
        module: ParsedModule | None,
        deep: bool = True,
        facts: dict[int, FunctionFacts] | None = None,
        functions: bool = False,
        classes_from: Resolver | None = None,
    ) -> None:
        """``facts``: the :class:`FunctionFacts` the engine's walk collected, by ``id`` of the def.
        ``functions``: follow calls of functions of local modules even when not ``deep``.
        ``classes_from``: a graph of the same file with the same ``deep``: its module, classes
        and facts are taken over (``module`` and ``facts`` are then ignored)."""
        self.deep: bool = deep if classes_from is None else classes_from.deep
        deep = self.deep
        self.functions = deep or functions
        self._functions: dict[tuple[int, int], Function] = {}
        self._classes_from = classes_from
        self._hole = False
        #: Per function of the linted file (by def and receiver): what :meth:`_find_callees` found.
        self._local_specs: dict[tuple[int, int], list] = {}
        #: (id of a call's func, id of its caller) -> (func, caller, its targets, the recording
        #: they were found under): see :meth:`CallEdges._remember`.
        self._targets: dict[tuple[int, int], tuple[ast.AST, Function, list[Function], object]] = {}
        self.module: ParsedModule
        if classes_from is not None:
            self.module = module = classes_from.module
            self._classes: dict[int, ModuleClass | None] = dict(classes_from._classes)
            self._facts: dict[int, FunctionFacts] = dict(classes_from._facts)
            self.classes: dict[str, ModuleClass] = dict(classes_from.classes)
        else:
            if module is None:
                raise ValueError("a graph needs a module, or classes_from")
            self.module = module
            self._classes = {}
            self._facts = dict(facts) if facts else {}
            self.classes = {}
            for name, node in module.classes.items():
                cls = self._class(node, module)
                if cls is not None and cls.is_module:
                    self.classes[name] = cls

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
        if module.path is None or not dotted or is_third_party(dotted):
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

    def facts(self, func: Function | ast.FunctionDef | ast.AsyncFunctionDef) -> FunctionFacts:
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
