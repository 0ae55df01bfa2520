"""What every RC2xx rule shares: judge only code reached from a ``forward``, name the chain.

A :class:`ForwardRule` splits its check in two so that the engine's single walk stays cheap:

- ``candidate(node)``: a purely syntactic test run during the walk on the node types the rule
  lists in ``node_types`` (``.item()`` calls, ``if`` statements...). Cheap, no data flow.
- ``judge(node, scope)``: run in ``finish()`` only for candidates inside a function that
  :mod:`regcomp_lint.analysis.reachability` reaches from a ``forward``; it may ask the tensor oracle. It
  returns a :class:`Break` (what to say, which graph-break id) or None.

The same two methods let RC210 look for breaks in a model's code outside the walk
(:func:`breaks_in`). Code dynamo never traces is skipped: the body of
``if not torch.compiler.is_compiling():`` (and the ``else`` of ``if is_compiling():``), and
functions decorated with ``torch.compiler.disable`` (RC207 reports the call instead).

Other files: a diagnostic belongs to the linted file. A break in a function of another local
module that a forward of this file reaches (``from .ops import scale``, ``ops.scale(x)``) is
reported here, at the call that leaves this file, with the other file's line and the chain:
``at ops.py:8, in code this call runs: <the rule's message> (reached via Net.forward →
ops.scale)`` (:func:`elsewhere` reads the place back). Not reported here: a break the other
file's own forwards reach (its lint reports it), anything reached through a forward of a module
class of another file (that file reports it), and decorated functions of other files (a
wrapper such as ``lru_cache`` may change what runs). Each break is reported once per file, at
the first call of the shortest chain. The other files are parsed once per process, and the cache
records them, so a cached result goes stale when either file changes.
"""

from __future__ import annotations

import ast
import os
import re
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Generic, TypeVar, cast

from regcomp_lint.analysis import reachability, tensors
from regcomp_lint.analysis.name_resolution import ImportMap
from regcomp_lint.analysis.reachability import Chain, Function, ParsedModule, Reachability, compiling_guard, same_file
from regcomp_lint.checks.base import Rule
from regcomp_lint.files.parsing import children
from regcomp_lint.files.source import Positioned
from regcomp_lint.knowledge.graph_breaks import FULLGRAPH_CAPTURED

if TYPE_CHECKING:
    from regcomp_lint.analysis.file_context import FileContext

FUNCTION_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)
FACT_TYPES = reachability.FactsCollector.NODE_TYPES
FUNCTION_TYPES = reachability.FactsCollector.FUNCTION_TYPES


@dataclass(frozen=True)
class Break:
    """A predicted graph break: the message (without the chain) and the torch id it raises."""

    message: str
    gb_id: str
    #: The node to point at, when not the candidate itself (the test of an ``if``).
    at: ast.expr | None = None

    @property
    def blocks_fullgraph(self) -> bool:
        """False for breaks that ``fullgraph=True`` captures instead of raising (``.item()``)."""
        return self.gb_id not in FULLGRAPH_CAPTURED


@dataclass
class Scope:
    """Where a candidate sits: the reached function, its chain, its file's imports, tensors."""

    reach: Reachability
    func: Function
    chain: Chain
    #: The file's graph following functions of local imports, built on first call; None where only
    #: ``reach`` may be used (a function of another file, RC210's search).
    deep: Callable[[], Reachability] | None = None

    def call_targets(self, func: ast.AST) -> list[Function]:
        """What a call of ``func`` in this function may run, following local imports when the
        file's graph does not know the callee (``from .ops import route``)."""
        found = self.reach.call_targets(func, self.func)
        if found or self.deep is None or not isinstance(func, (ast.Name, ast.Attribute)):
            return found
        deep = self.deep()
        caller = deep.counterpart(self.func)
        return deep.call_targets(func, caller) if caller is not None else []

    @property
    def imports(self) -> ImportMap:
        return self.func.module.imports

    @property
    def tensors(self) -> tensors.TensorOracle:
        return tensors.oracle(self.reach, self.func)

    def resolves_to(self, node: ast.AST, *qualnames: str) -> bool:
        return self.imports.resolves_to(node, *qualnames)

    def builtin(self, node: ast.AST, *names: str) -> bool:
        """``node`` is the builtin ``name`` (not imported, not bound in the function)."""
        return (
            isinstance(node, ast.Name)
            and node.id in names
            and not self.imports.imported(node.id)
            and node.id not in self.reach.facts(self.func).bindings
            and node.id not in self.func.module.functions
        )

    def module_value(self, node: ast.AST) -> ast.expr | None:
        """The value a module-level ``name = value`` gave ``node`` (a name not bound locally)."""
        if (
            not isinstance(node, ast.Name)
            or node.id in self.reach.facts(self.func).bindings
            or self.imports.imported(node.id)
        ):
            return None
        return self.func.module.assignments.get(node.id)


#: Every node type an RC2xx rule may want (checked when a rule class is defined).
WALKED_TYPES = tuple(
    dict.fromkeys(
        FACT_TYPES
        + FUNCTION_TYPES
        + (ast.Subscript, ast.JoinedStr, ast.While, ast.IfExp, ast.comprehension, ast.BoolOp)
    )
)


#: The node types a :class:`ForwardRule` judges (the union of its ``node_types``).
NodeT = TypeVar("NodeT", bound=ast.AST)


class ForwardRule(Rule, Generic[NodeT]):
    """Base of RC201-RC209, generic in the node types it judges (``ForwardRule[ast.Call]``). The engine's walk feeds the file's
    :class:`~regcomp_lint.analysis.reachability.FactsCollector` (``ctx.semantic.facts``); one
    instance per file hands each node of a type some RC2xx rule wants to those rules (a
    :class:`_CandidateDispatch` shared through the semantic model); the other instances switch
    their handlers off. So a ``Call`` costs one handler call however many RC2xx rules run."""

    required = ("forward",)
    needs_compiled_module = True
    #: ast node types whose instances may be candidates (a subset of ``WALKED_TYPES``).
    node_types: ClassVar[tuple[type[ast.AST], ...]] = ()

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._candidates: list[tuple[NodeT, tuple[ast.AST, ...]]] = []
        self._facts = ctx.semantic.facts
        dispatch = ctx.semantic.shared(_CandidateDispatch.KEY, _CandidateDispatch)
        # What the dispatching rule runs for this rule on each node of a wanted type: the cheap
        # syntactic test, the test that needs ancestors (only for rules that override it), and
        # where to keep the node.
        in_context = _overrides(type(self), "accepts")
        entry = (self.candidate, type(self).accepts if in_context else None, self._candidates)
        self._wanted = dispatch.wanted  # filled by every RC2xx rule of the file
        self._places = dispatch.places
        if dispatch.dispatcher is None:
            dispatch.dispatcher = weakref.ref(self)  # weak: the file's model must not keep its rules
            # A function, not the bound ``self._walked``: kept on the instance, a bound method
            # would make a reference cycle (rule -> method -> rule) that holds the file's tree
            # until the cyclic collector runs (most of its time on a large tree).
            self._dispatch_handler = _walk_handler(self._facts, self._wanted, ctx.ancestors)
        for node_type in WALKED_TYPES:  # the dispatcher's handlers are switched on below, by type
            setattr(self, f"visit_{node_type.__name__}", None)
        dispatcher = dispatch.dispatcher()
        for node_type in self.node_types:
            dispatch.wanted.setdefault(node_type, []).append(entry)
            if dispatcher is not None:
                setattr(dispatcher, f"visit_{node_type.__name__}", dispatcher._dispatch_handler)

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        if cls.triggers and IMPORT_TRIGGER not in cls.triggers:
            # A break may sit in an imported local module (reported at the call that reaches it):
            # the linted file need not contain the rule's own trigger words.
            # (first: it is in nearly every file, so the prefilter stops looking at once)
            cls.triggers = (IMPORT_TRIGGER, *cls.triggers)
        unknown = set(cls.node_types) - set(WALKED_TYPES)
        if unknown:
            raise TypeError(f"{cls.__name__}.node_types: add {sorted(t.__name__ for t in unknown)} to WALKED_TYPES")

    def _walked(self, node: ast.AST) -> None:
        self._dispatch_handler(node)

    # -- to override ------------------------------------------------------------------------
    # ``node`` is always an instance of one of ``node_types``.
    @classmethod
    def candidate(cls, node: NodeT) -> bool:
        return True

    @classmethod
    def accepts(cls, node: NodeT, ancestors: list[ast.AST]) -> bool:
        """A second syntactic test that needs the node's ancestors (outermost first); only
        rules that override it pay for it."""
        return True

    @classmethod
    def judge(cls, node: NodeT, scope: Scope) -> Break | None:
        raise NotImplementedError

    # -- the report ----------------------------------------------------------------------------
    def finish(self) -> None:
        if self._candidates:
            ctx = self.ctx
            reach = ctx.semantic.reachability()
            untraced = self._facts.is_untraced
            keep = self._keep
            judge = self.judge
            # Where candidates sit, found once per function for all the file's RC2xx rules: the
            # candidates of one function share one ``defs`` tuple (kept alive in the value, so
            # its id is not reused while the table lives).
            places = self._places
            for node, defs in self._candidates:
                place = places.get(id(defs))
                if place is None:
                    place = places[id(defs)] = (defs, self._scope_of(reach, defs))
                scope = place[1]
                if scope is None or (keep is not None and not keep(node)) or untraced(node):
                    continue
                found = judge(node, scope)
                if found is not None:
                    self.report(found.at or node, f"{found.message} ({scope.chain})")
        self._report_elsewhere()

    #: A test a candidate must pass before it is judged (after its place is found), or None.
    _keep: Callable[[NodeT], bool] | None = None

    def _scope_of(self, reach: Reachability, defs: tuple[ast.AST, ...]) -> Scope | None:
        """The scope of candidates inside ``defs`` (None: no forward reaches them, or dynamo skips them)."""
        located = reach.locate(defs)
        if located is None or located[0].disabled:
            return None
        # Weak: the scope is kept in the file's model (``places``), which must not keep itself
        # alive through a cycle (it holds the file's tree until the cyclic collector runs).
        semantic = weakref.ref(self.ctx.semantic)
        return Scope(reach, located[0], located[1], lambda: semantic().reachability(functions=True))  # type: ignore[union-attr]

    def _report_elsewhere(self) -> None:
        """Breaks in functions of other local files that this file's forwards reach: reported at
        the call that leaves this file, unless a file on the way reports them itself."""
        rule = type(self)
        for site in elsewhere_sites(self.ctx, self._facts):
            if not isinstance(site.node, rule.node_types):
                continue
            node = cast(NodeT, site.node)  # (an instance of node_types: what the rule judges)
            if not rule.candidate(node) or not rule.accepts(node, site.ancestors):
                continue
            found = rule.judge(node, Scope(site.reach, site.func, site.chain))
            if found is None or _reported_in_own_file(rule, site):
                continue
            # (a candidate without a position of its own, a comprehension, always names ``at``)
            at = found.at if found.at is not None else cast(Positioned, node)
            start, end = at.lineno, getattr(at, "end_lineno", None) or at.lineno
            place = f"{_relative(site.func.module.path, self.ctx.filename)}:{start}" + (
                f"-{end}" if end != start else ""
            )
            self.report(site.call, f"at {place}{ELSEWHERE_SEPARATOR}{found.message} ({site.chain})")


for _type in WALKED_TYPES:  # declared, so that the engine asks instances for them
    setattr(ForwardRule, f"visit_{_type.__name__}", ForwardRule._walked)


def _walk_handler(
    facts: reachability.FactsCollector, wanted: dict[type, list[tuple[Callable, Callable | None, list]]], ancestors
) -> Callable[[ast.AST], None]:
    """The dispatching rule's handler: hands each walked node to the RC2xx rules that want it."""

    def walked(node: ast.AST) -> None:
        if not facts.defs:
            return  # module level: not in any function, nothing to collect
        entries = wanted.get(type(node))
        if not entries:
            return
        for candidate, accepts, sink in entries:
            if candidate(node) and (accepts is None or accepts(node, ancestors)):
                sink.append((node, facts.defs_key))

    return walked


def _overrides(rule: type[ForwardRule], name: str) -> bool:
    """Whether ``rule`` (or a base between it and :class:`ForwardRule`) redefines the classmethod ``name``."""
    return getattr(rule, name).__func__ is not getattr(ForwardRule, name).__func__


class _CandidateDispatch:
    """The RC2xx rules of one file: which want each node type (their ``candidate``, their
    ``accepts`` when they override it, where they keep candidates), and whether one of them
    already dispatches the walk's nodes for all."""

    KEY = "rc2xx-candidates"

    def __init__(self) -> None:
        self.wanted: dict[type, list[tuple[Callable, Callable | None, list]]] = {}
        #: The rule whose handlers dispatch (switched on for the wanted types only).
        self.dispatcher: weakref.ref[ForwardRule] | None = None
        #: id of a candidates' ``defs`` tuple -> (the tuple, their scope or None), filled in ``finish``.
        self.places: dict[int, tuple[tuple[ast.AST, ...], Scope | None]] = {}


def is_disabled(func: Function) -> bool:
    """Decorated with ``torch.compiler.disable`` (dynamo skips it: nothing inside breaks)."""
    return func.disabled


def _untraced(ancestors: list[ast.AST], node: ast.AST) -> bool:
    """Inside ``if not is_compiling():`` or the ``else`` of ``if is_compiling():``."""
    for i, anc in enumerate(ancestors):
        if type(anc) is not ast.If:
            continue
        guard = compiling_guard(anc.test)
        if guard is None:
            continue
        child = ancestors[i + 1] if i + 1 < len(ancestors) else node
        skipped = anc.orelse if guard else anc.body
        if any(child is stmt for stmt in skipped):
            return True
    return False


def breaks_in(
    reach: Reachability, functions: list[tuple[Function, Chain]], rules: list[type[ForwardRule]]
) -> Iterator[tuple[type[ForwardRule], ast.AST, Function, Break]]:
    """Every break the given rules find in the given reached functions (RC210's search)."""
    for func, chain in functions:
        if is_disabled(func):
            continue
        scope = Scope(reach, func, chain)
        for node, ancestors in _walk_with_ancestors(func.node):
            if _untraced(ancestors, node):
                continue
            for rule in rules:
                if isinstance(node, rule.node_types) and rule.candidate(node) and rule.accepts(node, ancestors):
                    found = rule.judge(node, scope)
                    if found is not None:
                        yield rule, node, func, found


def _walk_with_ancestors(root: ast.AST) -> Iterator[tuple[ast.AST, list[ast.AST]]]:
    stack: list[tuple[ast.AST, list[ast.AST]]] = [(child, [root]) for child in reversed(children(root))]
    while stack:
        node, ancestors = stack.pop()
        yield node, ancestors
        below = ancestors + [node]
        for child in reversed(children(node)):
            stack.append((child, below))


# -- breaks in other files ----------------------------------------------------------------------

#: Added to every RC201-RC209 rule's triggers (see ``ForwardRule.__init_subclass__``).
IMPORT_TRIGGER = "import "
ELSEWHERE_SEPARATOR = ", in code this call runs: "
_ELSEWHERE = re.compile(r"^at (?P<path>\S+?):(?P<line>\d+)(?:-(?P<end>\d+))?" + re.escape(ELSEWHERE_SEPARATOR))


def elsewhere(message: str) -> tuple[str, int, int] | None:
    """(path relative to the linted file's folder, first line, last line) of the break a
    cross-file finding names (``at _shared_ops.py:8, in code this call runs: ...``), else None."""
    found = _ELSEWHERE.match(message)
    if found is None:
        return None
    line = int(found["line"])
    return found["path"], line, int(found["end"] or line)


@dataclass(eq=False)
class ElsewhereSite:
    """A candidate node in a function of another file that the linted file's forwards reach."""

    node: ast.AST
    ancestors: list[ast.AST]  # from the top-level def of the other file, outermost first
    func: Function  # the innermost reached def holding it (a node of ``reach``)
    chain: Chain
    call: ast.Call  # where the chain leaves the linted file
    reach: Reachability  # the linted file's graph, functions of other files followed


def elsewhere_sites(ctx: FileContext, facts: reachability.FactsCollector) -> list[ElsewhereSite]:
    """Every candidate node of other files the file's forwards reach, once per file for all
    RC2xx rules. Empty, without building the deep graph, when the file has no module class or
    imports no local module."""
    return ctx.semantic.shared("rc2xx-elsewhere-sites", lambda: _find_elsewhere_sites(ctx, facts))


def _find_elsewhere_sites(ctx: FileContext, facts: reachability.FactsCollector) -> list[ElsewhereSite]:
    filename = ctx.filename
    if not filename or filename.startswith("<") or filename == "-" or not _imports_local_module(ctx):
        return []
    shallow = ctx.semantic.reachability()
    if not shallow.classes or not _calls_into_local_module(shallow):
        return []
    reach = ctx.semantic.reachability(functions=True)
    here = _here_test(filename)

    def follows(caller: Function, call: ast.Call, callee: Function) -> bool:
        if caller.local and facts.is_untraced(call):
            return False  # dynamo skips the call (under ``if not is_compiling():``)
        # A decorated function of another file may not be what runs (``lru_cache``, a wrapper
        # that makes it a compile-time constant...): not followed, for precision.
        return here(callee) or not _wrapped(callee)

    tree = reach.paths(follows)
    foreign = [f for f in tree if not here(f)]
    if not foreign:
        return []
    innermost: dict[int, Function] = {}
    for reached in tree:  # breadth first: the first one is the shortest chain
        innermost.setdefault(id(reached.node), reached)
    # Functions a forward of a module class of another file reaches: that file reports them.
    other_forwards = [f for f in foreign if f.is_method and f.node.name == "forward" and not _here_cls(f, filename)]
    delegated = {id(f.node) for f in reach.reachable(other_forwards, tree)}
    chains: dict[Function, tuple[Chain, ast.Call] | None] = {}
    sites: list[ElsewhereSite] = []
    walked: set[int] = set()
    for top in foreign:
        if top.parent is not None or id(top.node) in walked:
            continue
        walked.add(id(top.node))
        for node, ancestors in _candidates_in(top.module, top.node):
            func = next(
                (innermost[id(d)] for d in reversed(ancestors) if type(d) in FUNCTION_DEFS and id(d) in innermost), None
            )
            if func is None or func.disabled or id(func.node) in delegated or here(func) or _untraced(ancestors, node):
                continue
            path = _chain(func, tree, here, chains)
            if path is not None:
                sites.append(ElsewhereSite(node, ancestors, func, path[0], path[1], reach))
    return sites


#: Decorators that leave the function as it is when it is called.
TRANSPARENT_DECORATORS = frozenset({"staticmethod", "classmethod"})


def _wrapped(func: Function) -> bool:
    return any(not (isinstance(d, ast.Name) and d.id in TRANSPARENT_DECORATORS) for d in func.node.decorator_list)


def _here_test(filename: str) -> Callable[[Function], bool]:
    """Whether a function is the linted file's own (``func.local``, or its module is that file),
    each module's path made absolute once (a graph's functions share a few modules; the test
    runs for every edge followed)."""
    target = os.path.abspath(filename)
    known: dict[int, tuple[ParsedModule, bool]] = {}  # id -> (the module, kept alive; the answer)

    def here(func: Function) -> bool:
        if func.local:
            return True
        module = func.module
        found = known.get(id(module))
        if found is None:
            path = module.path
            found = known[id(module)] = (module, path is not None and os.path.abspath(path) == target)
        return found[1]

    return here


def _here_cls(func: Function, filename: str) -> bool:
    cls = func.cls
    return cls is not None and (cls.module.path is None or same_file(cls.module.path, filename))


def _imports_local_module(ctx: FileContext) -> bool:
    """Some import of the file names a module file of the project (not read, only found)."""
    imports = ctx.imports
    for dotted in imports._aliases.values():
        if dotted.startswith("."):
            return True
        for module in (dotted, dotted.rpartition(".")[0]):
            if module and not reachability.is_third_party(module) and reachability.module_file(ctx.filename, module):
                return True
    return False


def _calls_into_local_module(shallow: Reachability) -> bool:
    """Some function the file's own graph reaches calls a name imported from a local module
    (found, not read): only then is the graph that follows them worth building."""
    module = shallow.module
    imports = module.imports
    looked: set[str] = set()  # modules (``pkg.ops`` of ``pkg.ops.scale``) found not to be local
    for func, _ in shallow.reached():
        for call in shallow.facts(func).calls:
            target = call.func
            while type(target) is ast.Attribute:
                target = target.value
            if type(target) is not ast.Name or not imports.imported(target.id):
                continue
            qualname = imports.qualname(call.func)
            if not qualname:
                continue
            dotted = qualname.rpartition(".")[0]  # all _local_module_path looks at
            if dotted in looked:
                continue
            if not reachability.is_third_party(qualname) and shallow._local_module_path(qualname, module):
                return True
            looked.add(dotted)
    return False


def _chain(func: Function, tree: dict, here: Callable[[Function], bool], memo: dict) -> tuple[Chain, ast.Call] | None:
    """The chain from a root of the linted file to ``func``, its labels naming the other files'
    plain functions by module (``_shared_ops.scale``), and the call where it leaves the file."""
    if func in memo:
        return memo[func]
    path = [func]
    while tree.get(path[-1]) is not None:
        path.append(tree[path[-1]][0])
    path.reverse()
    call = None
    for caller, callee in zip(path, path[1:]):
        if here(caller) and not here(callee):
            call = tree[callee][1]
            break
    found = (Chain(tuple(_label(f, here) for f in path)), call) if call is not None else None
    memo[func] = found
    return found


def _label(func: Function, here: Callable[[Function], bool]) -> str:
    if here(func):
        return func.label
    top = func
    while top.parent is not None:
        top = top.parent
    if top.cls is not None:
        return func.label  # ``Block.forward``: the class names it
    path = func.module.path or ""
    stem = os.path.splitext(os.path.basename(path))[0]
    if stem == "__init__":
        stem = os.path.basename(os.path.dirname(path))
    return f"{stem}.{func.label}"


def _candidates_in(module: ParsedModule, func: ast.AST) -> list[tuple[ast.AST, list[ast.AST]]]:
    """The nodes of a def of another file an RC2xx rule may judge, with their ancestors; kept
    with the parsed module, so each function is walked once per process."""
    cache = module.__dict__.setdefault("_rc2_candidates", {})
    found = cache.get(id(func))
    if found is None:
        wanted = tuple(t for t in WALKED_TYPES if t not in FUNCTION_TYPES)
        found = cache[id(func)] = [
            (node, ancestors) for node, ancestors in _walk_with_ancestors(func) if isinstance(node, wanted)
        ]
    return found


def _reported_in_own_file(rule: type[ForwardRule], site: ElsewhereSite) -> bool:
    """Whether the lint of the break's own file reports it (one of that file's forwards reaches it)."""
    own = reachability.of_module(site.func.module)
    located = own.locate([a for a in site.ancestors if type(a) in FUNCTION_DEFS])
    if located is None or located[0].disabled:
        return False
    return rule.judge(site.node, Scope(own, *located)) is not None


def _relative(path: str | None, filename: str) -> str:
    if not path:
        return "?"
    try:
        return os.path.relpath(path, os.path.dirname(os.path.abspath(filename)) or ".").replace(os.sep, "/")
    except ValueError:
        return path
