"""Which code of a file runs inside a ``forward``: module classes, a call graph, chains.

The parts, each with one job (lowest first; each imports only those above it):

- :mod:`.modules`: parsed files (:class:`ParsedModule`) and the local modules a file imports,
  found by name (:func:`module_file`) and parsed lazily, once per run (:func:`load_module`).
- :mod:`.classes`: which classes are ``nn.Module`` subclasses (:class:`ModuleClass`) and the
  submodules and tensor attributes their ``__init__`` builds (:class:`Submodule`).
- :mod:`.functions`: the graph's nodes (:class:`Function`) and :class:`Chain`.
- :mod:`.facts`: what a function binds, calls and returns (:class:`FunctionFacts`), from the
  engine's walk (:class:`FactsCollector`) or on its own; the ``is_compiling()`` guards.
- :mod:`.resolution`: what a name means (classes, functions, across local imports) and the
  graph's nodes and facts (:class:`~.resolution.Resolver`).
- :mod:`.edges`: what a call may run, each function's callees (:class:`~.edges.CallEdges`).
- :mod:`.graph`: the call graph from the forwards, chains and queries (:class:`Reachability`).

RC2xx rules judge only code that dynamo traces, i.e. code reachable from an ``nn.Module``'s
``forward``; data loading, ``__init__`` and the training loop are never judged. This module finds
that code without importing anything.

Public API (stable; other rules build on it)::

    reach = ctx.semantic.reachability()        # built once per linted file (deep=True: see below)
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
(``ctx.semantic.reachability(deep=True)``, RC210) follows classes and functions imported from
local modules (absolute or relative imports resolved to a ``.py`` file near the linted one),
parsing each lazily, once per run. The functions graph
(``ctx.semantic.reachability(functions=True)``: the RC2xx rules' search for breaks in other
files) is the default graph plus the functions of local modules it calls, with no file read for
a class. ``paths(follows)`` gives its shortest-path tree (which call each function is first
reached through), ``of_module(m)`` the default graph of another file as that file's own lint
builds it, ``counterpart(f)`` a function's node in another graph of the same file.

Cost: nothing here walks the file again. Classes and functions are read from the top-level
statements; :class:`FunctionFacts` come from the engine's single walk (the file's semantic
model feeds a :class:`FactsCollector` when an RC2xx rule asks for it); only functions of other
files are walked on their own; the graph is built in ``finish()``, once per file, and only when
a rule has a candidate finding. The functions graph shares the default graph's classes and
reuses the callees it found for the file's own functions (resolving again only the calls of
imported names); the callees and facts of a plain function of another file depend on that file
alone and are kept with its parsed module, once per process (found again when a file they were
resolved through changes or is parsed again).
"""

from __future__ import annotations

from regcomp_lint.analysis.reachability.classes import (
    ADDING_METHODS,
    BUFFER,
    CONTAINERS,
    KNOWN_MODULE_BASE_NAMES,
    KNOWN_MODULE_BASE_SUFFIXES,
    MODULE_BASES,
    PARAMETER,
    TENSOR_FACTORIES,
    TORCH_NN_NOT_MODULES,
    ModuleClass,
    Submodule,
)
from regcomp_lint.analysis.reachability.facts import (
    IS_COMPILING,
    IS_TRACING,
    FactsCollector,
    FunctionFacts,
    compiling_guard,
    function_facts,
    traced_operands,
)
from regcomp_lint.analysis.reachability.functions import DISABLE, Chain, Function
from regcomp_lint.analysis.reachability.graph import Reachability, from_source, of_module
from regcomp_lint.analysis.reachability.modules import (
    FUNCTION_DEFS,
    ParsedModule,
    is_third_party,
    load_module,
    module_file,
    same_file,
    top_level_statements,
)
from regcomp_lint.analysis.reachability.resolution import MAX_IMPORT_HOPS

__all__ = [
    "ADDING_METHODS",
    "BUFFER",
    "CONTAINERS",
    "DISABLE",
    "FUNCTION_DEFS",
    "IS_COMPILING",
    "IS_TRACING",
    "KNOWN_MODULE_BASE_NAMES",
    "KNOWN_MODULE_BASE_SUFFIXES",
    "MAX_IMPORT_HOPS",
    "MODULE_BASES",
    "PARAMETER",
    "TENSOR_FACTORIES",
    "TORCH_NN_NOT_MODULES",
    "Chain",
    "FactsCollector",
    "Function",
    "FunctionFacts",
    "ModuleClass",
    "ParsedModule",
    "Reachability",
    "Submodule",
    "compiling_guard",
    "from_source",
    "function_facts",
    "is_third_party",
    "load_module",
    "module_file",
    "of_module",
    "same_file",
    "top_level_statements",
    "traced_operands",
]
