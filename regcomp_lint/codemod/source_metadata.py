"""Parents, positions and the source text of a parsed module, from one printing of it.

libcst's ``ParentNodeProvider`` asks every node for its ``children``, and a libcst visit rebuilds
every node it passes (with validation): on a 5,000-line script that cost more than a second,
more than parsing it. Its ``PositionProvider`` prints the module through a code-generation state
that turns every token into a line and a column and opens a generator context manager per
node; another second. Printing the module once with a state that only records where each node
starts and ends (token indices) and which node it is printed inside gives both, and the text,
in about a third of that time; lines and columns are worked out only for the nodes asked about.

The results are exactly libcst's: the same keys and values, and each parent's children in the
order of its ``children`` (the order ``find_all`` reports in). Printing order is that order for
every node type checked against a large corpus with the libcst version pinned in
constraints.txt, except a few (``AsName``, ``Del``, ``ParamSlash``) whose ``children`` put a
whitespace elsewhere; those, any type not checked, and every type under another libcst version,
take their order from ``children`` (tests/codemod/test_source_metadata.py compares the lot with
libcst's providers). :meth:`SourceMetadata.seed` hands the results to a ``MetadataWrapper`` so
code that resolves the libcst providers gets them without a recomputation.
"""

from __future__ import annotations

import dataclasses
import re
from bisect import bisect_right
from collections.abc import Callable, Iterator, Mapping
from itertools import accumulate
from types import MappingProxyType
from typing import cast

import libcst as cst
from libcst._nodes.internal import CodegenState
from libcst.metadata import (
    CodePosition,
    CodeRange,
    ExpressionContext,
    ExpressionContextProvider,
    MetadataWrapper,
    ParentNodeProvider,
    PositionProvider,
    ScopeProvider,
)

#: what libcst's position provider counts as a line break (token by token)
_NEWLINE = re.compile(r"\r\n?|\n")


def _libcst_version() -> str:
    try:
        from importlib.metadata import version

        return version("libcst")
    except Exception:  # (not installed as a distribution)
        return ""


#: Node types whose children print in the order ``children`` lists them, checked on libcst 1.9.
_SAME_ORDER: frozenset[type] = (
    frozenset(
        getattr(cst, name)
        for name in (
            "Add AddAssign And AnnAssign Annotation Arg AssignEqual Assign AssignTarget Assert Asynchronous "
            "Attribute AugAssign Await BinaryOperation BitAnd BitAndAssign BitInvert BitOr BitOrAssign BitXor "
            "BitXorAssign BooleanOperation Call ClassDef Colon Comma CompFor CompIf Comparison "
            "ComparisonTarget ConcatenatedString Decorator Dict DictComp DictElement Divide DivideAssign Dot "
            "Element Else EmptyLine Equal ExceptHandler ExceptStarHandler Expr Finally Float FloorDivide "
            "FloorDivideAssign For FormattedString FormattedStringExpression From FunctionDef GeneratorExp "
            "Global GreaterThan GreaterThanEqual If IfExp Import ImportAlias ImportFrom In IndentedBlock "
            "Index Integer Is IsNot Lambda LeftCurlyBrace LeftParen LeftShift LeftShiftAssign "
            "LeftSquareBracket LessThan LessThanEqual List ListComp Match MatchAs MatchCase MatchClass "
            "MatchKeywordElement MatchOr MatchOrElement MatchSequenceElement MatchSingleton MatchTuple "
            "MatchValue MatrixMultiply Minus Module Modulo ModuloAssign Multiply MultiplyAssign Name NameItem "
            "NamedExpr Nonlocal Not NotEqual NotIn Or Param ParamStar Parameters ParenthesizedWhitespace Plus "
            "Power PowerAssign Raise Return RightCurlyBrace RightParen RightShift RightShiftAssign "
            "RightSquareBracket Semicolon Set SetComp SimpleStatementLine SimpleStatementSuite SimpleString "
            "Slice StarredDictElement StarredElement Subscript SubscriptElement Subtract SubtractAssign "
            "TrailingWhitespace Try TryStar Tuple TypeParam TypeParameters TypeVar UnaryOperation While With "
            "WithItem Yield"
        ).split()
        if hasattr(cst, name)
    )
    if _libcst_version().startswith("1.9.")
    else frozenset()
)


class _Syntactic:
    """``with state.record_syntactic_position(node, start_node=..., end_node=...)`` without a
    generator, and without an object per node: one per printing, whose ``__exit__`` closes the
    range :meth:`_RecordingState.record_syntactic_position` opened last (libcst enters each one
    right away, and the ranges nest)."""

    __slots__ = ("opened", "ranges", "tokens")

    def __init__(self, state: _RecordingState) -> None:
        # (the state's lists, not the state: no reference cycle to leave behind)
        self.opened, self.ranges, self.tokens = state.syntactic, state.ranges, state.tokens

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        node, start_node, end_node, start = self.opened.pop()
        ranges = self.ranges
        if start_node is not None:
            start = ranges[id(start_node)][0]
        end = ranges[id(end_node)][1] if end_node is not None else len(self.tokens)
        ranges[id(node)] = (start, end)


class _Unrecorded:
    """The context a plain printing enters around a node's syntactic range: nothing to record."""

    __slots__ = ()

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


_UNRECORDED = _Unrecorded()


class PlainState(CodegenState):
    """libcst's plain ``CodegenState`` (the one ``Module.code`` and ``code_for_node`` print with),
    without the generator context manager it opens per node for a syntactic range it does not
    record (about a third of a printing's time)."""

    def record_syntactic_position(self, node, *, start_node=None, end_node=None):
        return _UNRECORDED


def code_for_node(node: cst.CSTNode, default_indent: str = " " * 4, default_newline: str = "\n") -> str:
    """``cst.Module([], default_indent=..., default_newline=...).code_for_node(node)``: the same text."""
    state = PlainState(default_indent=default_indent, default_newline=default_newline)
    node._codegen(state)
    return "".join(state.tokens)


class _RecordingState(CodegenState):
    """A code-generation state that records, per node, the token indices its range starts and
    ends at (syntactic where the node records one, else whitespace-inclusive, as libcst's
    ``PositionProvidingCodegenState``) and the node it is printed inside."""

    def __init__(self, module: cst.Module) -> None:
        super().__init__(default_indent=module.default_indent, default_newline=module.default_newline)
        #: by the node's id (a node's own hash is a Python call: two or three per node printed);
        #: the nodes are kept alive by :attr:`order`, so no id is reused while it is
        self.ranges: dict[int, tuple[int, int]] = {}
        #: each node's parent, by the node's id (like :attr:`ranges`)
        self.parents: dict[int, cst.CSTNode] = {}
        self.popped = False
        #: the nodes in printing order (pre-order), and where each one's subtree ends in it
        self.order: list[cst.CSTNode] = []
        self.ends: list[int] = []
        self._open: list[tuple[cst.CSTNode, int, int]] = []
        #: the module's own children (header lines, statements, footer lines) and the token each starts at
        self.top: list[tuple[cst.CSTNode, int]] = []
        #: the syntactic ranges open: (node, start node, end node, first token)
        self.syntactic: list[tuple[cst.CSTNode, cst.CSTNode | None, cst.CSTNode | None, int]] = []
        self._syntactic_exit = _Syntactic(self)

    def before_codegen(self, node: cst.CSTNode) -> None:
        open_ = self._open
        if open_:
            self.parents[id(node)] = open_[-1][0]
            if len(open_) == 1:
                self.top.append((node, len(self.tokens)))
        order = self.order
        open_.append((node, len(self.tokens), len(order)))
        order.append(node)
        self.ends.append(0)

    def after_codegen(self, node: cst.CSTNode) -> None:
        _, start, index = self._open.pop()
        self.ends[index] = len(self.order)
        ranges = self.ranges
        key = id(node)
        if key not in ranges:  # a syntactic range recorded inside wins
            ranges[key] = (start, len(self.tokens))

    def record_syntactic_position(self, node, *, start_node=None, end_node=None):
        self.syntactic.append((node, start_node, end_node, len(self.tokens)))
        return self._syntactic_exit

    def pop_trailing_newline(self) -> None:
        # libcst's position state counts the newline before popping it: keep it for the positions
        # and leave it out of the text
        if self.tokens:
            self.popped = True


class _Positions(Mapping[cst.CSTNode, CodeRange]):
    """``PositionProvider``'s mapping, with lines and columns worked out on first ask."""

    def __init__(
        self, ranges: dict[int, tuple[int, int]], nodes: list[cst.CSTNode], tokens: list[str], text: str
    ) -> None:
        self._ranges = ranges  # (by node id: ``nodes``, every node printed, keeps them alive)
        self._nodes = nodes
        self._offsets = [0, *accumulate(map(len, tokens))]
        if "\r" not in text:  # every line break is one "\n": the whole text can be searched at once
            self._line_starts = [0, *(m.end() for m in _NEWLINE.finditer(text))]
        else:  # libcst counts line breaks token by token ("\r" + "\n" split over two tokens is two)
            self._line_starts = [0]
            for offset, token in zip(self._offsets, tokens, strict=False):
                if "\n" in token or "\r" in token:
                    self._line_starts.extend(offset + m.end() for m in _NEWLINE.finditer(token))
        self._done: dict[int, CodeRange] = {}

    def _position(self, token: int) -> CodePosition:
        offset = self._offsets[token]
        line = bisect_right(self._line_starts, offset)
        return CodePosition(line, offset - self._line_starts[line - 1])

    def __getitem__(self, node: cst.CSTNode) -> CodeRange:
        key = id(node)
        found = self._done.get(key)
        if found is None:
            start, end = self._ranges[key]
            found = self._done[key] = CodeRange(self._position(start), self._position(end))
        return found

    def __contains__(self, node: object) -> bool:
        return id(node) in self._ranges

    def __iter__(self) -> Iterator[cst.CSTNode]:
        ranges = self._ranges
        return (node for node in self._nodes if id(node) in ranges)

    def __len__(self) -> int:
        return len(self._ranges)


def _in_children_order(
    parents: dict[int, cst.CSTNode],
) -> tuple[dict[int, cst.CSTNode], list[tuple[cst.CSTNode, list[cst.CSTNode]]]]:
    """``parents`` (by the child's id) with the children of every node whose type is not in
    :data:`_SAME_ORDER` taken from its ``children`` (moved to the end of the mapping together,
    in that order), and the nodes whose ``children`` are not in printing order, with their ``children``."""
    same = _SAME_ORDER
    odd: dict[int, tuple[cst.CSTNode, list[int]]] = {
        id(parent): (parent, []) for parent in parents.values() if type(parent) not in same
    }
    if not odd:
        return parents, []
    for child, parent in parents.items():
        if type(parent) not in same:  # (a type's hash is cheap; a node's is a Python call)
            odd[id(parent)][1].append(child)
    for _, printed in odd.values():
        for child in printed:
            del parents[child]
    reordered = []
    for parent, printed in odd.values():
        children = list(parent.children)
        for node in children:
            parents[id(node)] = parent
        if [id(node) for node in children] != printed:
            reordered.append((parent, children))  # (a child may be one the printing made anew)
    return parents, reordered


class _Parents(Mapping[cst.CSTNode, cst.CSTNode]):
    """``ParentNodeProvider``'s mapping, kept by the child's id: a node's own hash is a Python
    call, and the planner climbs parents a hundred thousand times a fixture round
    (:attr:`by_id` is what :class:`~regcomp_lint.codemod.tree.Tree` reads). Each node's children
    come in the order of its ``children``, as in libcst's."""

    def __init__(self, by_id: dict[int, cst.CSTNode], nodes: list[cst.CSTNode]) -> None:
        self.by_id = by_id
        self._nodes = nodes  # (every node printed: none of the ids is reused while they live)

    def __getitem__(self, node: cst.CSTNode) -> cst.CSTNode:
        return self.by_id[id(node)]

    def get(self, node, default=None):  # (without Mapping's try/except around __getitem__)
        return self.by_id.get(id(node), default)

    def __contains__(self, node: object) -> bool:
        return id(node) in self.by_id

    def __iter__(self) -> Iterator[cst.CSTNode]:
        nodes = {id(node): node for node in self._nodes}
        return (nodes[key] for key in self.by_id)

    def __len__(self) -> int:
        return len(self.by_id)


class SourceMetadata:
    """One module printed once: its ``code``, ``parents`` (``ParentNodeProvider``'s mapping) and
    ``positions`` (``PositionProvider``'s)."""

    def __init__(self, module: cst.Module) -> None:
        state = _RecordingState(module)
        module._codegen(state)
        tokens = state.tokens
        everything = "".join(tokens)
        self.code = everything[: len(everything) - len(tokens[-1])] if state.popped else everything
        parents, self._reordered = _in_children_order(state.parents)
        extra = [child for _, children in self._reordered for child in children]
        self.parents: Mapping[cst.CSTNode, cst.CSTNode] = _Parents(
            parents, [*state.order, *extra] if extra else state.order
        )
        self._nodes = state.order  # (every node; :meth:`preorder` reorders it in place)
        positions = _Positions(state.ranges, state.order, tokens, everything)
        self.positions: Mapping[cst.CSTNode, CodeRange] = positions
        self._order: list[cst.CSTNode] | None = state.order
        self._ends = state.ends
        # each child of the module and its text: the children print one after another
        offsets = positions._offsets
        starts = [offsets[token] for _, token in state.top] + [len(everything)]
        self._text = everything
        self._top = {node: (starts[i], starts[i + 1]) for i, (node, _) in enumerate(state.top)}
        self._defaults = (module.default_indent, module.default_newline)

    def code_of(self, module: cst.Module) -> str:
        """``module.code`` for a module made from this one: the children it kept from this one
        (the same nodes: a transform hands back what it did not change) are not printed again,
        their text is this module's (at the top level, a node prints the same wherever it is).

        Sets :attr:`changed`: the texts of this module's children that ``module`` does not keep,
        and of the runs of children printed anew (None when ``module`` was printed whole)."""
        self.changed: tuple[list[str], list[str]] | None = None
        top = self._top
        if not module.has_trailing_newline or (module.default_indent, module.default_newline) != self._defaults:
            return module.code  # (only one of these is printed the usual way: not worth the cases)
        state = PlainState(default_indent=module.default_indent, default_newline=module.default_newline)
        tokens = state.tokens
        text = self._text
        kept_parts: set[cst.CSTNode] = set()
        new_runs: list[tuple[int, int]] = []  # token ranges printed anew
        for part in (*module.header, *module.body, *module.footer):
            kept = top.get(part)
            if kept is None:
                start = len(tokens)
                part._codegen(state)
                if new_runs and new_runs[-1][1] == start:
                    new_runs[-1] = (new_runs[-1][0], len(tokens))
                else:
                    new_runs.append((start, len(tokens)))
            else:
                kept_parts.add(part)
                tokens.append(text[kept[0] : kept[1]])
        if not tokens:  # (what Module._codegen_impl does for an empty module with a newline)
            state.add_token(state.default_newline)
            return "".join(tokens)
        dropped = [text[start:end] for node, (start, end) in self._top.items() if node not in kept_parts]
        self.changed = (dropped, ["".join(tokens[start:end]) for start, end in new_runs])
        return "".join(tokens)

    def preorder(self) -> tuple[list[cst.CSTNode], dict[int, int], list[int]] | None:
        """The module's nodes in pre-order with each node's children in ``children`` order (the
        order ``tree.find_all`` reports in), each node's index (by the node's id), and where each subtree ends;
        None when the printing does not hold exactly the nodes ``children`` does. Once only:
        the lists are handed over."""
        order, ends = self._order, self._ends
        if order is None:
            return None
        self._order = None
        start = {id(node): i for i, node in enumerate(order)}
        for parent, children in self._reordered:  # their children's subtrees, laid out again
            first = start[id(parent)]
            blocks = []
            for child in children:
                at = start.get(id(child))
                if at is None:
                    return None
                blocks.append((at, ends[at]))
            if sum(stop - at for at, stop in blocks) != ends[first] - first - 1:
                return None
            moved = [(order[i], ends[i] - i) for at, stop in blocks for i in range(at, stop)]
            for offset, (node, size) in enumerate(moved, first + 1):
                order[offset] = node
                ends[offset] = offset + size
                start[id(node)] = offset
        return order, start, ends

    def seed(self, wrapper: MetadataWrapper) -> None:
        """Let ``wrapper.resolve(ParentNodeProvider / PositionProvider)`` answer with these (the
        wrapper must wrap the same module, not a copy: ``unsafe_skip_copy=True``)."""
        cache = getattr(wrapper, "_metadata", None)
        if isinstance(cache, dict):  # (libcst's own cache of resolved providers)
            cache.setdefault(ParentNodeProvider, self.parents)
            cache.setdefault(PositionProvider, self.positions)

    def store_names(self) -> dict[cst.Name, ExpressionContext] | None:
        """The names libcst's ``ExpressionContextProvider`` gives the STORE context, all that
        ``ScopeProvider`` reads of it: any other name (LOAD, DEL or no context) is an access
        alike. Found from the nodes that make a target (:data:`_STORE_TARGETS`) instead of a
        visit of the whole module. None where this is not told apart (type parameters, which
        libcst's visitor skips in a ``def`` and a ``class``; a target that holds one of those nodes)."""
        found: dict[cst.Name, ExpressionContext] = {}
        targets = _STORE_TARGETS
        try:
            for node in self._nodes:  # (the module itself too: neither a target nor type parameters)
                kind = type(node)
                if kind in targets:
                    field = targets[kind]
                    if field:
                        _mark_store(getattr(node, field), found)
                    else:  # (an Assign: each of its targets)
                        for target in cast(cst.Assign, node).targets:
                            _mark_store(target.target, found)
                elif kind is _TYPE_PARAMETERS:
                    return None
        except _NotPlain:
            return None
        return found


#: the node types whose visit in libcst's ``ExpressionContextVisitor`` (1.9) visits one field with
#: a STORE visitor, whatever the context they are in: that field (empty: an ``Assign``'s targets)
_STORE_TARGETS: dict[type, str] = {
    cst.Assign: "",
    cst.AnnAssign: "target",
    cst.AugAssign: "target",
    cst.NamedExpr: "target",
    cst.AsName: "name",
    cst.CompFor: "target",
    cst.For: "target",
    cst.ClassDef: "name",
    cst.FunctionDef: "name",
    cst.Param: "name",
}
_TYPE_PARAMETERS = getattr(cst, "TypeParameters", None)


class _NotPlain(Exception):
    """A target holds a node whose context libcst decides in its own way."""


def _mark_store(node: cst.CSTNode, found: dict[cst.Name, ExpressionContext]) -> None:
    """What libcst's STORE visitor does to ``node``'s names: a name is STORE; the parts of an
    attribute or a subscript are read (LOAD: what a target in them binds is found on its own);
    a tuple, a list, a starred element (and any other node) pass the context on to their children."""
    kind = type(node)
    if kind is cst.Name:
        found[node] = ExpressionContext.STORE  # type: ignore[index]
    elif kind is cst.Attribute or kind is cst.Subscript:
        return
    elif kind in _STORE_TARGETS or kind is cst.Del:  # (not inside a target of code that parses)
        raise _NotPlain()
    else:
        for child in node.children:
            _mark_store(child, found)


class _ContextsOnAsk(Mapping[cst.CSTNode, ExpressionContext]):
    """``ExpressionContextProvider``'s mapping for a module whose scopes were resolved from
    :meth:`SourceMetadata.store_names`: worked out (exactly, by libcst's visitor) only if asked."""

    def __init__(self, module: cst.Module, text: str | None) -> None:
        self._module, self._text = module, text
        self._found: Mapping[cst.CSTNode, ExpressionContext] | None = None

    def _contexts(self) -> Mapping[cst.CSTNode, ExpressionContext]:
        if self._found is None:
            provider = ExpressionContextProvider()  # (it depends on no other provider)
            _visit_module_without_rebuilding(provider, self._module, self._text)
            self._found = cast(Mapping[cst.CSTNode, ExpressionContext], MappingProxyType(provider._computed))
        return self._found

    def __getitem__(self, node: cst.CSTNode) -> ExpressionContext:
        return self._contexts()[node]

    def __iter__(self) -> Iterator[cst.CSTNode]:
        return iter(self._contexts())

    def __len__(self) -> int:
        return len(self._contexts())


_ONLY_VISIT_MODULE: dict[type, bool] = {}


def resolve_scopes(wrapper: MetadataWrapper, text: str | None = None, metadata: SourceMetadata | None = None) -> None:
    """Resolve libcst's ``ScopeProvider`` (and its ``ExpressionContextProvider``) on ``wrapper``
    without the batched traversal libcst wraps them in.

    Both do all their work in ``visit_Module``, with a visit of their own over the module; libcst
    then goes on visiting every node of the module once per provider to call the visitor methods
    they do not have (on a 5,000-line script, two traversals of ~100,000 nodes for nothing,
    about a second). Here ``visit_Module`` is called directly, in the provider's dependency
    context, as the batched visit would call it; a provider with any other visitor method (another
    libcst version) is left to ``wrapper.resolve``. ``text``: the module's source, when known
    (a module that never writes ``typing`` has no call to ``typing.cast`` and the like).
    ``metadata``: the module's printing; the scope visitor then reads the STORE names from it
    (:meth:`SourceMetadata.store_names`) and the expression contexts are worked out only if
    asked (nothing in the fixer asks: a third of the time this took).
    """
    cache = getattr(wrapper, "_metadata", None)
    if not isinstance(cache, dict):
        return
    if (
        metadata is not None
        and _FAST_VISITS
        and ExpressionContextProvider not in cache
        and ScopeProvider not in cache
        and _only_visits_module(ExpressionContextProvider)
        and _only_visits_module(ScopeProvider)
    ):
        stores = metadata.store_names()
        if stores is not None:
            cache[ExpressionContextProvider] = _ContextsOnAsk(wrapper.module, text)
            scopes = ScopeProvider()
            scopes.metadata = {
                ExpressionContextProvider: cast(Mapping[cst.CSTNode, object], stores)
            }  # (as resolve() sets)
            try:
                _visit_module_without_rebuilding(scopes, wrapper.module, text)
            finally:
                scopes.metadata = {}
            cache[ScopeProvider] = MappingProxyType(scopes._computed)
            return
    for provider_type in (ExpressionContextProvider, ScopeProvider):
        if provider_type in cache:
            continue
        provider = provider_type()
        if not _only_visits_module(provider_type):
            wrapper.resolve(provider_type)
            continue
        with provider.resolve(wrapper):
            if _FAST_VISITS:
                _visit_module_without_rebuilding(provider, wrapper.module, text)
            else:
                provider.visit_Module(wrapper.module)
        cache[provider_type] = MappingProxyType(provider._computed)


def release_scopes(wrapper: MetadataWrapper) -> None:
    """Break the reference cycles of ``wrapper``'s resolved libcst scopes, once nothing asks them.

    libcst 1.9's scope objects hold each other in cycles (an assignment lists its accesses and
    each access its assignments, a scope its assignments and accesses and they their scope), and
    through them the nodes they name (an ``Assignment`` of a ``def`` holds the whole function):
    left as they are, a file's scopes and those subtrees wait for the cyclic collector, which
    then walks them after the file (a thousand objects a fixture script). Emptied here, reference
    counting frees them with the tree. Another libcst version: left alone."""
    cache = getattr(wrapper, "_metadata", None)
    if not _FAST_VISITS or not isinstance(cache, dict):
        return
    scopes = cache.get(ScopeProvider)
    if scopes is None:
        return
    values = scopes.values()
    for scope in dict(zip(map(id, values), values)).values():  # (each scope once, without its Python __hash__)
        if scope is None:
            continue
        _release_scope(scope)
        parent = getattr(scope, "parent", None)
        if parent is not None and parent is not scope:
            _release_scope(parent)  # (the builtin scope: in no node's mapping)


def _release_scope(scope: object) -> None:
    for attribute in ("_assignments", "_accesses_by_name", "_accesses_by_node"):
        table = getattr(scope, attribute, None)
        if not isinstance(table, dict):
            continue
        for found in table.values():
            for item in found:
                for inner in ("_BaseAssignment__accesses", "_Access__assignments"):
                    linked = getattr(item, inner, None)
                    if isinstance(linked, set):
                        linked.clear()
        table.clear()
    overwrites = getattr(scope, "_scope_overwrites", None)
    if isinstance(overwrites, dict):
        overwrites.clear()


def _only_visits_module(provider_type: type) -> bool:
    """The provider does all its work in ``visit_Module`` (inspect.getmembers of ~400 names: once per class)."""
    only_module = _ONLY_VISIT_MODULE.get(provider_type)
    if only_module is None:
        only_module = _ONLY_VISIT_MODULE[provider_type] = set(provider_type().get_visitors()) == {"visit_Module"}
    return only_module


#: libcst versions whose two providers' ``visit_Module`` is the one replayed below
_FAST_VISITS = _libcst_version().startswith("1.9.")


def _visit_module_without_rebuilding(
    provider: ExpressionContextProvider | ScopeProvider, module: cst.Module, text: str | None = None
) -> None:
    """What ``provider.visit_Module(module)`` does (libcst 1.9), with its visitor walking the
    tree without rebuilding it.

    A libcst visit rebuilds (and validates) every node it passes even for a visitor that changes
    nothing; that was most of the providers' cost. :func:`_walking` makes the visitor walk the
    children itself, field by field in libcst's order, calling the same hooks with the same
    arguments (``visit_X``/``leave_X``, ``visit_X_field``/``leave_X_field``), so it records the same
    scopes, assignments and accesses. Subtrees the providers visit with new visitors of their own
    (assignment targets, annotations) keep libcst's traversal.
    """
    from libcst.metadata.expression_context_provider import ExpressionContext, ExpressionContextVisitor
    from libcst.metadata.scope_provider import ScopeVisitor

    if isinstance(provider, ScopeProvider):
        visitor = _walking(ScopeVisitor, _record_scope)(provider)
        # libcst's visit_Call asks every call's qualified names for typing.cast, TypeVar and
        # NewType: none can resolve there in a module that never writes "typing" (an import
        # names the module); the call is then entered as that method enters a plain call
        visitor._no_typing = text is not None and "typing" not in text
        module.visit(visitor)
        visitor.infer_accesses()
    else:
        module.visit(_walking(ExpressionContextVisitor, None)(provider, ExpressionContext.LOAD))


#: Formatting nodes: whitespace, comments, punctuation, operators and number literals. None of
#: them holds a name, a string or anything else either provider looks at, and neither visitor
#: has a hook for one: visiting them only gives each the scope it is in (the scope visitor's
#: ``on_leave``). They are more than half of a module's nodes (42,000 ``SimpleWhitespace`` of
#: 97,000 nodes in a 4,800-line script).
_FORMATTING: frozenset[type] = frozenset(
    kind
    for kind in vars(cst).values()
    if isinstance(kind, type)
    and issubclass(kind, cst.CSTNode)
    and not getattr(kind, "__abstractmethods__", None)
    and (
        issubclass(
            kind,
            (
                cst.BaseParenthesizableWhitespace,
                cst.Newline,
                cst.TrailingWhitespace,
                cst.EmptyLine,
                cst.Comment,
                cst.Comma,
                cst.Dot,
                cst.Colon,
                cst.Semicolon,
                cst.AssignEqual,
                cst.LeftParen,
                cst.RightParen,
                cst.LeftSquareBracket,
                cst.RightSquareBracket,
                cst.LeftCurlyBrace,
                cst.RightCurlyBrace,
                cst.BaseBinaryOp,
                cst.BaseBooleanOp,
                cst.BaseCompOp,
                cst.BaseUnaryOp,
                cst.BaseAugOp,
                cst.ImportStar,
            ),
        )
        or kind in (cst.Integer, cst.Float, cst.Imaginary)
    )
)
#: formatting node types without a node inside (each one a leaf of the tree)
_LEAVES: frozenset[type] = frozenset({cst.SimpleWhitespace, cst.Newline, cst.Comment, cst.ImportStar})


def _record_scope(visitor: cst.CSTVisitor, node: cst.CSTNode) -> None:
    """What visiting the formatting node ``node`` does in the scope visitor: every node of it,
    children first, gets the visitor's current scope (in the order ``on_leave`` would give it)."""
    _give_scope(node, visitor.provider._computed, visitor.scope)  # type: ignore[attr-defined]


def _give_scope(node: cst.CSTNode, computed: dict, scope: object) -> None:
    if type(node) not in _LEAVES:
        for field in _fields(node):
            value = getattr(node, field)
            kind_of_value = type(value)
            if kind_of_value is tuple or kind_of_value is list:
                for child in value:
                    _give_scope(child, computed, scope)
            else:
                node_value = _IS_NODE.get(kind_of_value)
                if node_value is None:
                    node_value = _IS_NODE[kind_of_value] = issubclass(kind_of_value, cst.CSTNode)
                if node_value:
                    _give_scope(value, computed, scope)
    computed[node] = scope


_WALKING: dict[type, type] = {}
_IS_NODE: dict[type, bool] = {}
_ATTRIBUTE_HOOK = re.compile(r"(?:visit|leave)_([A-Za-z0-9]+)_(\w+)$")
#: the fields a node's children are visited by, in libcst's order, by node type and by which of
#: its optional fields are None (libcst skips a None ``format_spec`` altogether, hooks included);
#: by node type alone for a type without optional fields
_FIELDS: dict[tuple[type, tuple[bool, ...]] | type, tuple[str, ...]] = {}
#: the fields of each node type that may hold None
_OPTIONAL: dict[type, tuple[str, ...]] = {}


class _FieldProbe(cst.CSTVisitor):
    """Records the fields ``_visit_and_replace_children`` visits, without going deeper."""

    def __init__(self) -> None:
        self.fields: list[str] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        return False

    def on_visit_attribute(self, node: cst.CSTNode, attribute: str) -> None:
        self.fields.append(attribute)


def _fields(node: cst.CSTNode) -> tuple[str, ...]:
    kind = type(node)
    optional = _OPTIONAL.get(kind)
    if optional is None:
        optional = _OPTIONAL[kind] = tuple(
            f.name for f in dataclasses.fields(kind) if "Optional" in str(f.type) or "None" in str(f.type)
        )
    if not optional:  # (most types: one lookup)
        found = _FIELDS.get(kind)
        if found is None:
            probe = _FieldProbe()
            node._visit_and_replace_children(probe)
            found = _FIELDS[kind] = tuple(probe.fields)
        return found
    key = (kind, tuple(getattr(node, name) is None for name in optional))
    found = _FIELDS.get(key)
    if found is None:
        probe = _FieldProbe()
        node._visit_and_replace_children(probe)
        found = _FIELDS[key] = tuple(probe.fields)
    return found


def _walking(
    visitor_type: type[cst.CSTVisitor], formatting: Callable[[cst.CSTVisitor, cst.CSTNode], None] | None
) -> type:
    """``visitor_type`` (a ``CSTVisitor``) visiting each node's children itself: libcst's visit
    then neither rebuilds nor revalidates the node. A child that is a formatting node
    (:data:`_FORMATTING`, when the visitor has no hook for any of them) is not visited:
    ``formatting(visitor, child)`` does what its visit would have done (None: nothing)."""
    found = _WALKING.get(visitor_type)
    if found is not None:
        return found
    hooks = {
        name
        for name in dir(visitor_type)
        if name.startswith(("visit_", "leave_")) and not getattr(getattr(visitor_type, name), "_is_no_op", False)
    }
    skipped = frozenset(
        kind
        for kind in _FORMATTING
        if f"visit_{kind.__name__}" not in hooks
        and f"leave_{kind.__name__}" not in hooks
        and not any(name.startswith((f"visit_{kind.__name__}_", f"leave_{kind.__name__}_")) for name in hooks)
    )

    # the attribute hooks are libcst's, which call visit_<Type>_<field> / leave_<Type>_<field>
    # when the visitor has them: the others are not called at all
    plain_hooks = (
        visitor_type.on_visit_attribute is cst.CSTVisitor.on_visit_attribute
        and visitor_type.on_leave_attribute is cst.CSTVisitor.on_leave_attribute
    )
    hooked = {
        (match.group(1), match.group(2))
        for match in map(_ATTRIBUTE_HOOK.match, dir(visitor_type))
        if match is not None and not getattr(getattr(visitor_type, match.group(0)), "_is_no_op", False)
    }
    is_node = _IS_NODE
    # the visitor's own visit_<Type> / leave_<Type> per node type (None: it has none, or libcst's
    # no-op): what ``CSTVisitor.on_visit`` / ``on_leave`` look up by name on every node
    visits: dict[type, Callable | None] = {}
    leaves: dict[type, Callable | None] = {}

    def hook_of(table: dict[type, Callable | None], prefix: str, kind: type) -> Callable | None:
        found = getattr(walking, f"{prefix}_{kind.__name__}", None)
        if getattr(found, "_is_no_op", False):
            found = None
        table[kind] = found
        return found

    def on_visit(self, node: cst.CSTNode) -> bool:
        node_type = type(node)
        visit = visits[node_type] if node_type in visits else hook_of(visits, "visit", node_type)
        if visit is not None and visit(self, node) is False:
            return False
        kind = node_type.__name__
        for field in _fields(node):
            hook = not plain_hooks or (kind, field) in hooked
            if hook:
                self.on_visit_attribute(node, field)
            value = getattr(node, field)
            kind_of_value = type(value)
            if kind_of_value is tuple or kind_of_value is list:
                for child in value:
                    if type(child) in skipped:
                        if formatting is not None:
                            formatting(self, child)
                    else:  # child.visit(self), without its checks of what it already knows
                        self.on_visit(child)
                        self.on_leave(child)
            elif kind_of_value in skipped:
                if formatting is not None:
                    formatting(self, value)
            else:
                node_value = is_node.get(kind_of_value)
                if node_value is None:  # (an ABC's isinstance is slow: once per type)
                    node_value = is_node[kind_of_value] = issubclass(kind_of_value, cst.CSTNode)
                if node_value:
                    self.on_visit(value)
                    self.on_leave(value)
            if hook:
                self.on_leave_attribute(node, field)
        return False  # (done: libcst goes on to on_leave)

    def leave_hook(self, node: cst.CSTNode) -> None:
        node_type = type(node)
        leave = leaves[node_type] if node_type in leaves else hook_of(leaves, "leave", node_type)
        if leave is not None:
            leave(self, node)

    members: dict[str, object] = {"on_visit": on_visit}
    if visitor_type.on_leave is cst.CSTVisitor.on_leave:
        members["on_leave"] = leave_hook
    elif visitor_type.__name__ == "ScopeVisitor" and _FAST_VISITS:
        from libcst.metadata.scope_provider import _ASSIGNMENT_LIKE_NODES

        assignment_like: dict[type, bool] = {}

        def on_leave(self, node: cst.CSTNode) -> None:
            # libcst 1.9's ScopeVisitor.on_leave, its isinstance of 13 ABCs asked once per type
            scope = self.scope
            self.provider._computed[node] = scope
            node_type = type(node)
            counts = assignment_like.get(node_type)
            if counts is None:
                counts = assignment_like[node_type] = issubclass(node_type, _ASSIGNMENT_LIKE_NODES)
            if counts:
                scope._assignment_count += 1
            leave_hook(self, node)

        members["on_leave"] = on_leave

        def visit_Call(self, node: cst.Call) -> bool | None:
            if not self._no_typing:
                return visitor_type.visit_Call(self, node)
            # (libcst 1.9's ScopeVisitor.visit_Call for a call that is none of the three)
            self._ScopeVisitor__top_level_attribute_stack.append(None)
            self._ScopeVisitor__in_type_hint_stack.append(False)
            return True

        members["visit_Call"] = visit_Call
        members["_no_typing"] = False
    walking = _WALKING[visitor_type] = type(visitor_type.__name__, (visitor_type,), members)
    found = walking
    return found
