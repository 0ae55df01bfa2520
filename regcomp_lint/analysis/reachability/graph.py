"""The call graph from a file's forwards, its chains (how a forward reaches each function) and
the questions rules ask of it: :class:`Reachability`."""

from __future__ import annotations

import ast
from collections.abc import Callable, Container, Iterable
from typing import TYPE_CHECKING

from regcomp_lint.analysis.reachability.classes import ModuleClass
from regcomp_lint.analysis.reachability.edges import CallEdges
from regcomp_lint.analysis.reachability.facts import FunctionFacts
from regcomp_lint.analysis.reachability.functions import Chain, Function
from regcomp_lint.analysis.reachability.modules import ParsedModule

if TYPE_CHECKING:
    import networkx as nx


class Reachability(CallEdges):
    """A file's call graph from its forwards (see the package docstring for what it answers)."""

    def __init__(
        self,
        module: ParsedModule | None,
        deep: bool = True,
        facts: dict[int, FunctionFacts] | None = None,
        functions: bool = False,
        classes_from: Reachability | None = None,
    ) -> None:
        super().__init__(module, deep, facts, functions, classes_from)
        self._succ: dict[Function, dict[Function, list[ast.Call]]] | None = None
        self._pred: dict[Function, dict[Function, list[ast.Call]]] = {}
        self._nx: nx.DiGraph | None = None
        self._chains: dict[Function, Chain] = {}
        self._by_node: dict[int, tuple[Function, Chain]] | None = None
        self.roots: list[Function] = []

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
        succ = self._succ
        if succ is None:
            succ = self._build()
        return succ

    def _build(self) -> dict[Function, dict[Function, list[ast.Call]]]:
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
        return succ

    def _expand(self, roots: list[Function]) -> None:
        """Add ``roots`` and everything they reach to the graph."""
        succ, pred = self._successors(), self._pred  # (set before _build expands the forwards)
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

    def reachable(self, starts: Iterable[Function], within: Container[Function]) -> set[Function]:
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


def of_module(module: ParsedModule) -> Reachability:
    """The shallow reachability a lint of ``module``'s own file builds (its forwards, nothing
    followed into other files), kept with the parsed module: once per file and process."""
    found = module.__dict__.get("_own_reachability")
    if found is None:
        found = module.__dict__["_own_reachability"] = Reachability(module, deep=False)
    return found


def from_source(text: str, filename: str = "<string>", deep: bool = True) -> Reachability:
    """Build from source text (tests, tools): imports read from the top-level statements."""
    return Reachability(ParsedModule.from_tree(ast.parse(text), filename), deep=deep)
