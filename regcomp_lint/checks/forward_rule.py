"""What every RC2xx rule shares: judge only code reached from a ``forward``, name the chain.

A :class:`ForwardRule` splits its check in two so that the engine's single walk stays cheap:

- ``candidate(node)``: a purely syntactic test run during the walk on the node types the rule
  lists in ``node_types`` (``.item()`` calls, ``if`` statements...). Cheap, no data flow.
- ``judge(node, scope)``: run in ``finish()`` only for candidates inside a function that
  :mod:`regcomp_lint.reachability` reaches from a ``forward``; it may ask the tensor oracle. It
  returns a :class:`Break` (what to say, which graph-break id) or None.

The same two methods let RC210 look for breaks in a model's code outside the walk
(:func:`breaks_in`). Code dynamo never traces is skipped: the body of
``if not torch.compiler.is_compiling():`` (and the ``else`` of ``if is_compiling():``), and
functions decorated with ``torch.compiler.disable`` (RC207 reports the call instead).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import ClassVar, Iterator

from regcomp_lint import reachability, tensors
from regcomp_lint.checks.base import Rule
from regcomp_lint.knowledge.graph_breaks import FULLGRAPH_CAPTURED
from regcomp_lint.names import ImportMap
from regcomp_lint.reachability import Chain, Function, Reachability, compiling_guard

FUNCTION_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)
FACT_TYPES = reachability.FactsCollector.NODE_TYPES
FUNCTION_TYPES = reachability.FactsCollector.FUNCTION_TYPES


@dataclass(frozen=True)
class Break:
    """A predicted graph break: the message (without the chain) and the torch id it raises."""

    message: str
    gb_id: str
    #: The node to point at, when not the candidate itself (the test of an ``if``).
    at: ast.AST | None = None

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
        return (isinstance(node, ast.Name) and node.id in names and not self.imports.imported(node.id)
                and node.id not in self.reach.facts(self.func).bindings and node.id not in self.func.module.functions)


    def module_value(self, node: ast.AST) -> ast.expr | None:
        """The value a module-level ``name = value`` gave ``node`` (a name not bound locally)."""
        if not isinstance(node, ast.Name) or node.id in self.reach.facts(self.func).bindings or self.imports.imported(node.id):
            return None
        return self.func.module.assignments.get(node.id)


#: Every node type an RC2xx rule may want (checked when a rule class is defined).
WALKED_TYPES = tuple(dict.fromkeys(FACT_TYPES + FUNCTION_TYPES + (
    ast.Subscript, ast.JoinedStr, ast.While, ast.IfExp, ast.comprehension, ast.BoolOp)))


class ForwardRule(Rule):
    """Base of RC201-RC209. One instance per file feeds the engine's walk to the file's
    :class:`~regcomp_lint.reachability.FactsCollector` and hands each node to the RC2xx rules
    that want its type; the other instances switch their handlers off. So a ``Call`` costs one
    handler call however many RC2xx rules run."""

    required = ("forward",)
    #: ast node types whose instances may be candidates (a subset of ``WALKED_TYPES``).
    node_types: ClassVar[tuple[type[ast.AST], ...]] = ()

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._candidates: list[tuple[ast.AST, tuple[ast.AST, ...]]] = []
        self._facts, feeder = reachability.collector_for(ctx)
        # What the feeding rule runs for this rule on each node of a wanted type: the cheap
        # syntactic test and where to keep the node, or a collector that also asks ``accepts``.
        in_context = type(self).accepts.__func__ is not ForwardRule.accepts.__func__
        entry = (None, self._collect_in_context) if in_context else (self.candidate, self._candidates)
        for node_type in self.node_types:
            self._facts.wanted.setdefault(node_type, []).append(entry)
        if not feeder:
            for node_type in WALKED_TYPES:
                setattr(self, f"visit_{node_type.__name__}", None)
                if node_type in FUNCTION_TYPES:
                    setattr(self, f"leave_{node_type.__name__}", None)

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        unknown = set(cls.node_types) - set(WALKED_TYPES)
        if unknown:
            raise TypeError(f"{cls.__name__}.node_types: add {sorted(t.__name__ for t in unknown)} to WALKED_TYPES")

    def _walked(self, node: ast.AST) -> None:
        facts = self._facts
        if not facts.defs:
            return  # module level: not in any function, nothing to collect
        if type(node) in _FED:
            facts.visit(node)
        defs = None
        for candidate, sink in facts.wanted.get(type(node), ()):
            if candidate is None:
                sink(node)
            elif candidate(node):
                defs = defs or tuple(facts.defs)
                sink.append((node, defs))

    def _entered(self, node: ast.AST) -> None:
        facts = self._facts
        facts.enter(node)
        for candidate, sink in facts.wanted.get(type(node), ()):
            if candidate is None:
                sink(node)
            elif candidate(node):
                sink.append((node, tuple(facts.defs)))

    def _left(self, node: ast.AST) -> None:
        self._facts.leave(node)

    # -- to override ------------------------------------------------------------------------
    @classmethod
    def candidate(cls, node: ast.AST) -> bool:
        return True

    @classmethod
    def accepts(cls, node: ast.AST, ancestors: list[ast.AST]) -> bool:
        """A second syntactic test that needs the node's ancestors (outermost first); only
        rules that override it pay for it."""
        return True

    @classmethod
    def judge(cls, node: ast.AST, scope: Scope) -> Break | None:
        raise NotImplementedError

    # -- the walk and the report ---------------------------------------------------------------
    def _collect_in_context(self, node: ast.AST) -> None:
        if self.candidate(node) and self.accepts(node, self.ctx.ancestors):
            self._candidates.append((node, tuple(self._facts.defs)))

    def finish(self) -> None:
        if not self._candidates:
            return
        reach = reachability.for_context(self.ctx)
        untraced = self._facts.is_untraced
        for node, defs in self._candidates:
            located = reach.locate(defs)
            if located is None or located[0].disabled or untraced(node):
                continue
            func, chain = located
            found = self.judge(node, Scope(reach, func, chain))
            if found is not None:
                self.report(found.at or node, f"{found.message} ({chain})")


_FED = frozenset(FACT_TYPES)
for _type in WALKED_TYPES:
    if _type in FUNCTION_TYPES:
        setattr(ForwardRule, f"visit_{_type.__name__}", ForwardRule._entered)
        setattr(ForwardRule, f"leave_{_type.__name__}", ForwardRule._left)
    else:
        setattr(ForwardRule, f"visit_{_type.__name__}", ForwardRule._walked)


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


def breaks_in(reach: Reachability, functions: list[tuple[Function, Chain]], rules: list[type[ForwardRule]]) -> Iterator[tuple[type[ForwardRule], ast.AST, Function, Break]]:
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
    stack: list[tuple[ast.AST, list[ast.AST]]] = [(child, [root]) for child in reversed(list(ast.iter_child_nodes(root)))]
    while stack:
        node, ancestors = stack.pop()
        yield node, ancestors
        below = ancestors + [node]
        for child in reversed(list(ast.iter_child_nodes(node))):
            stack.append((child, below))
