"""Read-only questions about one parsed script: what a name resolves to, where a node sits.

Wraps the libcst metadata the conversion needs (``ScopeProvider``, and the qualified names it
gives, ``ParentNodeProvider``, ``PositionProvider``) so the planner asks "which function holds this
call?" or "which statement of this block contains it?" instead of walking parents itself.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Iterator
from typing import TypeGuard, TypeVar, cast, overload

import libcst as cst
from libcst.metadata import (
    BaseAssignment,
    MetadataWrapper,
    ParentNodeProvider,
    PositionProvider,
    QualifiedName,
    QualifiedNameSource,
    ScopeProvider,
)

from regcomp_lint.analysis.own_callees import Spelling
from regcomp_lint.codemod.source_metadata import _FORMATTING, _IS_NODE, code_for_node
from regcomp_lint.codemod.source_metadata import _fields as fields_visited
from regcomp_lint.knowledge.torch_api import STAR_EXPORTED_MODULES

N = TypeVar("N", bound=cst.CSTNode)
M = TypeVar("M", bound=cst.CSTNode)
T = TypeVar("T")
Block = cst.Module | cst.IndentedBlock
Function = cst.FunctionDef | cst.Module  # the module stands for top-level code


def code(node: cst.CSTNode) -> str:
    """Source text of a node on its own (a name without parentheses is its value: what its
    printing gives, without setting one up; the planner asks for thousands of names). During a
    conversion each node is printed once: the planners ask about the same nodes again and again
    (2,814 printings of 944 nodes on the fixture scripts)."""
    if type(node) is cst.Name and not node.lpar and not node.rpar:
        return node.value
    if not _INDEX:  # (outside a conversion nothing would clear a cache)
        return code_for_node(node)
    hit = _CODE.get(id(node))
    if hit is not None and hit[0] is node:
        return hit[1]
    text = code_for_node(node)
    _CODE[id(node)] = (node, text)  # (the node kept in the entry: its id cannot be reused)
    return text


def header(stmt: cst.CSTNode) -> str:
    """The first line of a statement as a message quotes it: ``if ddp:`` for a whole ``if`` block
    (without the comments above it or after its colon, nor its body), the code of a simple one."""
    if isinstance(stmt, cst.BaseCompoundStatement):
        stub = cst.IndentedBlock(body=[cst.SimpleStatementLine(body=[cst.Expr(cst.Ellipsis())])])
        stmt = stmt.with_changes(leading_lines=(), body=stub)
    elif isinstance(stmt, cst.SimpleStatementLine):
        stmt = stmt.with_changes(leading_lines=())
    return code_for_node(stmt).strip().splitlines()[0]


def is_main_guard(stmt: cst.CSTNode) -> TypeGuard[cst.If]:
    """``if __name__ == "__main__":``: where a script starts, not a condition of what it does."""
    return isinstance(stmt, cst.If) and "__name__" in code(stmt.test) and "__main__" in code(stmt.test)


def dotted(node: cst.CSTNode) -> str | None:
    """``a.b.c`` for a chain of names and attributes, else None."""
    kind = type(node)  # (``type(x) is``: see key_of)
    if kind is cst.Name:
        return node.value  # type: ignore[attr-defined]
    if kind is cst.Attribute:
        base = dotted(node.value)  # type: ignore[attr-defined]
        return None if base is None else f"{base}.{node.attr.value}"  # type: ignore[attr-defined]
    return None


def key_of(node: cst.CSTNode) -> str | None:
    """The handle the planner tracks an object by: a local name or ``self.attr``."""
    # (``type(x) is`` for libcst's concrete node classes, which have no subclasses: an
    # ``isinstance`` that fails goes through ``ABCMeta.__instancecheck__``, a Python call; the
    # planner asks this of every name and call it meets)
    kind = type(node)
    if kind is cst.Name:
        return node.value  # type: ignore[attr-defined]
    if kind is cst.Attribute and type(node.value) is cst.Name and node.value.value == "self":  # type: ignore[attr-defined]
        return f"self.{node.attr.value}"  # type: ignore[attr-defined]
    return None


def single_target(stmt: cst.CSTNode) -> tuple[str, cst.BaseExpression] | None:
    """``(key, value)`` for ``key = value`` with one trackable target, else None."""
    if isinstance(stmt, cst.Assign) and len(stmt.targets) == 1:
        key = key_of(stmt.targets[0].target)
        if key is not None:
            return key, stmt.value
    return None


def methods_of(cls: cst.ClassDef) -> list[cst.FunctionDef]:
    """The methods a class body defines directly, in source order (nested defs are not methods)."""
    return [m for m in cls.body.body if isinstance(m, cst.FunctionDef)]


def method_named(cls: cst.ClassDef | None, name: str) -> cst.FunctionDef | None:
    """The method ``name`` that ``cls`` defines itself (not one it inherits), or None."""
    if cls is None:
        return None
    return next((m for m in methods_of(cls) if m.name.value == name), None)


#: The converter's spelling of a class for :mod:`~regcomp_lint.analysis.own_callees`.
CST: Spelling[cst.FunctionDef, cst.ClassDef] = Spelling(
    methods=methods_of,
    name=lambda function: function.name.value,
    base_names=lambda cls: [b.value.value for b in cls.bases if isinstance(b.value, cst.Name)],
)


def built_class(value: cst.BaseExpression) -> cst.Name | None:
    """``Cls`` of a value ``Cls(...)``, ``.to(device)`` and the like after it (what ``model = ...`` builds)."""
    while (
        isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and isinstance(value.func.value, cst.Call)
    ):
        value = value.func.value  # Cls(...).to(device)
    return value.func if isinstance(value, cst.Call) and isinstance(value.func, cst.Name) else None


def init_of(cls: cst.ClassDef) -> cst.FunctionDef | None:
    """The ``__init__`` a class defines itself, or None."""
    return method_named(cls, "__init__")


class Tree:
    """One script's syntax tree plus the metadata the planner reads."""

    def __init__(
        self,
        wrapper: MetadataWrapper,
        filename: str | None = None,
        text: str | None = None,
        preorder: tuple[list[cst.CSTNode], dict[int, int], list[int]] | None = None,
    ) -> None:
        self.wrapper = wrapper
        #: the script's path (its local modules are read next to it); None for text without one
        self.filename = filename
        self.module = wrapper.module
        self._parents = parents = wrapper.resolve(ParentNodeProvider)
        #: each node's parent by the node's id (a node's own hash is a Python call): the printing's
        #: (SourceMetadata), or made here from libcst's mapping (the nodes live as long as the tree)
        by_id = getattr(parents, "by_id", None)
        self._parent_of: dict[int, cst.CSTNode] = (
            by_id if by_id is not None else {id(child): parent for child, parent in parents.items()}
        )
        self._positions = wrapper.resolve(PositionProvider)
        self._scopes = wrapper.resolve(ScopeProvider)
        self._qualnames: dict[cst.CSTNode, Collection[QualifiedName]] = {}
        #: id of a node -> the node and its imported names (:meth:`imported_names`; by id, as
        #: :attr:`_function_of`: a node's own hash is a Python call, and the planner asks tens of
        #: thousands of times a fixture round)
        self._imported: dict[int, tuple[cst.CSTNode, set[str]]] = {}
        #: id of a node -> the node and the function it runs in (:meth:`function_of`)
        self._function_of: dict[int, tuple[cst.CSTNode, Function]] = {}
        self._star: bool | None = None  # whether the script has a `from ... import *`, asked once
        #: the module's source, printed once (``module.code`` prints the whole tree on every call);
        #: ``text``: the caller's printing of it
        self.text = self.module.code if text is None else text
        self._lines = self.text.splitlines()
        _index_module(self.module, self._parents, preorder)

    # -- names -----------------------------------------------------------------------------
    def qualnames(self, node: cst.CSTNode) -> set[str]:
        return {q.name for q in self._qualified_names(node)}

    def imported_names(self, node: cst.CSTNode) -> set[str]:
        """Qualified names of ``node`` that come from an import (not local variables). Worked
        out once per node (the planner asks about the same calls many times); not to be changed."""
        kept = self._imported.get(id(node))
        if kept is not None and kept[0] is node:
            return kept[1]
        found = {
            q.name
            for q in self._qualified_names(node)
            if q.source in (QualifiedNameSource.IMPORT, QualifiedNameSource.BUILTIN)
        } or self._star_exported(node)
        self._imported[id(node)] = (node, found)
        return found

    def _star_exported(self, node: cst.CSTNode) -> set[str]:
        """``torch.save`` where ``torch`` is bound nowhere in the script but a star import may bring
        it (:data:`~regcomp_lint.knowledge.torch_api.STAR_EXPORTED_MODULES`): the dotted name."""
        name = dotted(node)
        root = node
        while isinstance(root, cst.Attribute):
            root = root.value
        if name is None or not isinstance(root, cst.Name) or root.value not in STAR_EXPORTED_MODULES:
            return set()
        if not self._has_star_import() or self.assignments_of(root):
            return set()
        return {name}

    def _has_star_import(self) -> bool:
        if self._star is None:
            self._star = any(
                isinstance(small, cst.ImportFrom) and isinstance(small.names, cst.ImportStar)
                for small in find_all(self.module, cst.ImportFrom)
            )
        return self._star

    def _qualified_names(self, node: cst.CSTNode) -> Collection[QualifiedName]:
        """What libcst's ``QualifiedNameProvider`` gives ``node``, asked of its scope only for the
        nodes the planner looks at (the provider visits every node of the file to do the same)."""
        names = self._qualnames.get(node)
        if names is None:
            scope = self._scopes.get(node)
            names = self._qualnames[node] = scope.get_qualified_names_for(node) if scope else set()
        return names

    def resolves_to(self, node: cst.CSTNode, *names: str) -> bool:
        return not self.imported_names(node).isdisjoint(names)

    def resolves_under(self, node: cst.CSTNode, *prefixes: str) -> str | None:
        """The imported qualified name of ``node`` that starts with one of ``prefixes``."""
        for name in self.imported_names(node):
            if any(name == p or name.startswith(p + ".") for p in prefixes):
                return name
        return None

    def is_module_reference(self, node: cst.CSTNode) -> bool:
        """True for ``torch.autograd`` and other chains rooted at an imported module."""
        root = node
        while type(root) is cst.Attribute:  # (``type(x) is``: see key_of)
            root = root.value
        if type(root) is not cst.Name:
            return False
        scope = self._scopes.get(root)
        if scope is None:
            return False
        for assignment in scope[root.value]:
            if isinstance(getattr(assignment, "node", None), (cst.Import, cst.ImportFrom)):
                return True
        return False

    def assignments_of(self, name: cst.Name) -> list[BaseAssignment]:
        """What binds ``name`` where it is read (its scope's, then the enclosing scopes'), builtins included."""
        scope = self._scopes.get(name)
        return list(scope[name.value]) if scope is not None else []

    def function_named(self, call: cst.Call) -> cst.FunctionDef | None:
        """The ``def`` a plain-name call refers to, through scope resolution."""
        if type(call.func) is not cst.Name:  # (see key_of)
            return None
        scope = self._scopes.get(call.func)
        if scope is None:
            return None
        for assignment in scope[call.func.value]:
            node = getattr(assignment, "node", None)
            if isinstance(node, cst.FunctionDef):
                return node
        return None

    def references_to(self, func: cst.FunctionDef) -> list[cst.CSTNode]:
        """Every name node that reads the function ``func`` defines."""
        scope = self._scopes.get(func)
        if scope is None:
            return []
        found: list[cst.CSTNode] = []
        for assignment in scope.assignments[func.name.value]:
            if getattr(assignment, "node", None) is func:
                found.extend(access.node for access in assignment.references)
        return found

    def is_parameter(self, name: str, function: Function) -> bool:
        if isinstance(function, cst.Module):
            return False
        params = function.params
        every = [*params.posonly_params, *params.params, *params.kwonly_params]
        for extra in (params.star_arg, params.star_kwarg):
            if isinstance(extra, cst.Param):
                every.append(extra)
        return any(p.name.value == name for p in every)

    # -- structure -------------------------------------------------------------------------
    def parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
        return self._parent_of.get(id(node))

    def ancestors(self, node: cst.CSTNode) -> Iterator[cst.CSTNode]:
        parent_of = self._parent_of
        current = parent_of.get(id(node))
        while current is not None:
            yield current
            current = parent_of.get(id(current))

    def line(self, node: cst.CSTNode) -> int:
        return self._positions[node].start.line

    def in_source_order(self, functions: Iterable[Function]) -> list[Function]:
        """``functions`` (a set, ordered by object identity) as they stand in the file, the
        module first: what is said about them comes out the same from run to run."""
        return sorted(functions, key=lambda f: 0 if isinstance(f, cst.Module) else self.line(f))

    def function_of(self, node: cst.CSTNode) -> Function:
        """The function whose code runs ``node`` (lambdas and comprehensions count as inline).
        Kept per node (the planners ask about the same nodes again and again, and each ask
        climbed the parents, a libcst node hash per step); the node is kept with its answer."""
        kept = self._function_of.get(id(node))
        if kept is None or kept[0] is not node:
            found: Function = self.module
            for anc in self.ancestors(node):
                if type(anc) is cst.FunctionDef:  # (see key_of)
                    found = anc
                    break
            kept = self._function_of[id(node)] = (node, found)
        return kept[1]

    def class_of(self, function: Function) -> cst.ClassDef | None:
        """The class a method is defined in (None for plain functions and the module)."""
        if isinstance(function, cst.Module):
            return None
        parent = self.parent(function)
        if isinstance(parent, cst.IndentedBlock):
            owner = self.parent(parent)
            if isinstance(owner, cst.ClassDef):
                return owner
        return None

    def enclosing_functions(self, node: cst.CSTNode) -> list[cst.FunctionDef]:
        return [anc for anc in self.ancestors(node) if type(anc) is cst.FunctionDef]

    def body_of(self, function: Function) -> Block:
        if isinstance(function, cst.Module):
            return function
        # only a one-line ``def f(): ...`` has a SimpleStatementSuite; the planner asks for the
        # body of the function that builds the model and runs the training loop, a compound statement
        return cast(cst.IndentedBlock, function.body)

    def statement_in(self, block: Block, node: cst.CSTNode) -> int | None:
        """Index of the statement of ``block`` that contains ``node`` (None when outside)."""
        child: cst.CSTNode = node
        for anc in [node, *self.ancestors(node)]:
            if anc is block:
                for i, stmt in enumerate(block.body):
                    if stmt is child:
                        return i
                return None
            child = anc
        return None

    def block_of(self, stmt: cst.CSTNode) -> Block | None:
        parent = self.parent(stmt)
        return parent if isinstance(parent, (cst.Module, cst.IndentedBlock)) else None

    def line_of(self, node: cst.CSTNode) -> cst.CSTNode:
        """The statement line (or compound statement) that holds ``node``."""
        for anc in [node, *self.ancestors(node)]:
            if is_kind(anc, _STATEMENT_LINES):
                return anc
        raise ValueError("node is not inside a statement")

    def call_line(self, call: cst.Call) -> cst.SimpleStatementLine | None:
        """The line ``call`` is the whole of (``save(state)`` alone on it), or None when its result
        is used or the line holds more: only such a line can be put under an ``if`` as it is."""
        expr = self.parent(call)
        line = self.parent(expr) if expr is not None else None
        if isinstance(expr, cst.Expr) and isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1:
            return line
        return None

    def indentation(self, stmt: cst.CSTNode) -> str:
        """The exact leading whitespace of the line a statement starts on (tabs kept)."""
        row = self._positions[stmt].start.line
        line = self._lines[row - 1] if row - 1 < len(self._lines) else ""
        return line[: len(line) - len(line.lstrip(" \t"))]

    def contains(self, outer: cst.CSTNode, inner: cst.CSTNode) -> bool:
        return outer is inner or any(anc is outer for anc in self.ancestors(inner))


#: find_all results by (root identity, kind, enter_functions). libcst trees are immutable, and the
#: planner asks for "every call / function of the module" once per function it looks at: without
#: this, a 250 KB script took minutes (quadratic). The root is kept in the entry so its id cannot be
#: reused; ``clear_find_cache`` (called after each conversion) lets the trees go.
_FOUND: dict[tuple[int, object, object], tuple[cst.CSTNode, list]] = {}


_DEFS = (cst.FunctionDef, cst.ClassDef)
#: what :meth:`Tree.line_of` climbs to
_STATEMENT_LINES = (cst.SimpleStatementLine, cst.BaseCompoundStatement)


class _NodeIndex:
    """The converted module's nodes in source order (pre-order), each with the end of its subtree.

    Built once from the parent map libcst's ``ParentNodeProvider`` already computed, so
    ``find_all`` inside the module is a slice scan instead of a libcst visit (which rebuilds every
    node it passes and cost most of the fixer's time on large scripts). The positions of each node
    type are listed on first ask, so a ``find_all`` costs what it finds (two bisections per type),
    not the size of the subtree it looks in (the planner asks thousands of them on a large script).
    """

    def __init__(self, module: cst.Module, parents, preorder=None) -> None:
        self.order: list[cst.CSTNode]
        #: each node's index in :attr:`order`, by the node's id (its own hash is a Python call;
        #: :attr:`order` keeps the nodes alive, and a look-up checks the node found is the one asked)
        self.start: dict[int, int]
        self.end: list[int]
        if preorder is not None:  # (SourceMetadata.preorder: from the printing that gave the parents)
            self.order, self.start, self.end = preorder
        else:
            self._build(module, parents)
        self._types = list(map(type, self.order))
        self._present = set(self._types)
        self._of_type: dict[type, list[int]] = {}
        self._where: dict[object, list[int]] = {}

    def _build(self, module: cst.Module, parents) -> None:
        children: dict[cst.CSTNode, list[cst.CSTNode]] = {}
        for child, parent in parents.items():  # a parent's children are recorded together, in order
            kids = children.get(parent)
            if kids is None:
                children[parent] = [child]
            else:
                kids.append(child)
        order: list[cst.CSTNode] = []
        stack: list[cst.CSTNode] = [module]
        while stack:
            node = stack.pop()
            order.append(node)
            kids = children.get(node)
            if kids:
                stack.extend(reversed(kids))
        self.order = order
        self.start = {id(node): i for i, node in enumerate(order)}
        # a subtree ends where its last child's does (a leaf: right after itself)
        end = [0] * len(order)
        start = self.start
        for i in range(len(order) - 1, -1, -1):
            kids = children.get(order[i])
            end[i] = end[start[id(kids[-1])]] if kids else i + 1
        self.end = end

    def _indices(self, kind) -> list[int]:
        """Where the nodes that are ``kind`` (a type or a tuple of types) sit, in order."""
        found = self._where.get(kind)
        if found is None:
            known = _SUBCLASS.get(kind)
            if known is None:
                known = _SUBCLASS[kind] = {}
            matching = []
            for t in self._present:
                hit = known.get(t)
                if hit is None:
                    hit = known[t] = issubclass(t, kind)
                if hit:
                    matching.append(t)
            if len(matching) == 1:
                found = self._of(matching[0])
            else:
                found = sorted(i for t in matching for i in self._of(t))
            self._where[kind] = found
        return found

    def _of(self, t: type) -> list[int]:
        if not self._of_type:  # every type's positions in one pass, on the first ask
            of_type: dict[type, list[int]] = {}
            for i, other in enumerate(self._types):
                where = of_type.get(other)
                if where is None:
                    of_type[other] = [i]
                else:
                    where.append(i)
            self._of_type = of_type
        return self._of_type.get(t, [])

    def find(self, root: cst.CSTNode, kind, enter_functions: bool, barriers=_DEFS) -> list | None:
        """What ``root`` holds of ``kind``; ``enter_functions=False``: not what lies inside a node
        of ``barriers`` (found itself) below ``root``. None: ``root`` is not a node of the module."""
        first = self.start.get(id(root))
        if first is None or self.order[first] is not root:
            return None
        end = self.end
        stop = end[first]
        where = self._indices(kind)
        hits = where[bisect_left(where, first) : bisect_left(where, stop)]
        if not enter_functions and hits:
            # leave out what lies inside a def or class nested in root (the def itself is found):
            # the outermost such defs' ranges, in order
            defs = self._indices(barriers)
            ranges: list[tuple[int, int]] = []
            for d in defs[bisect_left(defs, first + 1) : bisect_left(defs, stop)]:
                if not ranges or d >= ranges[-1][1]:
                    ranges.append((d, end[d]))
            if ranges:
                kept: list[int] = []
                k = 0
                for i in hits:
                    while k < len(ranges) and ranges[k][1] <= i:
                        k += 1
                    if k < len(ranges) and ranges[k][0] < i:
                        continue
                    kept.append(i)
                hits = kept
        order = self.order
        return [order[i] for i in hits]


#: ``issubclass(node type, kind)`` by the kind, then the type: libcst's node classes are abstract
#: (``ABCMeta``), whose check is a slow Python call, and every tree asks it again for the same few
#: dozen pairs (by the kind first: a pair's hash hashed the kind's tuple of types on every ask)
_SUBCLASS: dict[object, dict[type, bool]] = {}


_INDEX: list[_NodeIndex] = []
#: :func:`code`'s printings during a conversion, by the node's id (cleared with the rest)
_CODE: dict[int, tuple[cst.CSTNode, str]] = {}


def _index_module(module: cst.Module, parents, preorder=None) -> None:
    _INDEX[:] = [_NodeIndex(module, parents, preorder)]


#: other modules' answers about a node, by (its id, the question): (the node, the answer)
_MEMO: dict[tuple[int, str], tuple[cst.CSTNode, object]] = {}


def memo_of(node: N, question: str, make: Callable[[N], T]) -> T:
    """``make(node)``, worked out once per node and question until :func:`clear_find_cache`
    (the end of a conversion): the planner asks the same things of the same function many times,
    and the tree does not change while it plans."""
    key = (id(node), question)
    hit = _MEMO.get(key)
    if hit is not None and hit[0] is node:
        return cast(T, hit[1])
    answer = make(node)
    _MEMO[key] = (node, answer)
    return answer


#: conversions ended so far (:func:`clear_find_cache`): what a node was handed out in is told by it
_ENDED = [0]


def clear_find_cache() -> None:
    _FOUND.clear()
    _INDEX.clear()
    _CODE.clear()
    _MEMO.clear()
    _ENDED[0] += 1


def conversions_ended() -> int:
    """How many conversions have ended in this process: two asks with the same answer are
    inside the same conversion (or outside any)."""
    return _ENDED[0]


def parameter_names(function: cst.FunctionDef, *, keyword_only: bool = True) -> list[str]:
    """The names a ``def`` binds as parameters, in order (``*args``/``**kwargs`` not included)."""
    params = function.params
    every = [*params.posonly_params, *params.params, *(params.kwonly_params if keyword_only else ())]
    return [p.name.value for p in every]


def argument_for(tree: Tree, function: cst.FunctionDef, call: cst.Call, name: str) -> cst.BaseExpression | None:
    """What ``call`` passes for ``function``'s parameter ``name`` (None when it leaves the default
    or a star argument hides it)."""
    params = parameter_names(function, keyword_only=False)
    if tree.class_of(function) is not None and isinstance(call.func, cst.Attribute) and params:
        params = params[1:]  # self.step(...) binds self
    for index, arg in enumerate(call.args):
        if arg.star:
            return None
        if (arg.keyword.value if arg.keyword is not None else params[index] if index < len(params) else None) == name:
            return arg.value
    return None


# The overloads give callers the node types they asked for (a pair of kinds: either of the two).
@overload
def find_all(root: cst.CSTNode, kind: type[N], *, enter_functions: bool = True) -> list[N]: ...
@overload
def find_all(root: cst.CSTNode, kind: tuple[type[N], type[M]], *, enter_functions: bool = True) -> list[N | M]: ...
@overload
def find_all(root: cst.CSTNode, kind: tuple[type[N], ...], *, enter_functions: bool = True) -> list[N]: ...
def find_all(root: cst.CSTNode, kind: type | tuple[type, ...], *, enter_functions: bool = True) -> list:
    """All descendants of ``root`` (itself included) of a node type, in source order."""
    key = (id(root), kind, enter_functions)
    hit = _FOUND.get(key)
    if hit is not None and hit[0] is root:
        return list(hit[1])
    indexed = _INDEX[0].find(root, kind, enter_functions) if _INDEX else None
    found = indexed if indexed is not None else _find_all(root, kind, enter_functions)
    _FOUND[key] = (root, found)
    return list(found)


def find_own(root: cst.CSTNode, kind, stop_at: tuple[type, ...]) -> list:
    """The descendants of ``root`` (itself included) of ``kind``, in source order, without what
    lies inside a node of ``stop_at`` below ``root`` (that node is found itself): the statements
    of a loop that are not those of a nested loop, ``stop_at=(For, While, FunctionDef, ClassDef)``."""
    key = (id(root), kind, stop_at)
    hit = _FOUND.get(key)
    if hit is not None and hit[0] is root:
        return list(hit[1])
    indexed = _INDEX[0].find(root, kind, False, stop_at) if _INDEX else None
    found = indexed if indexed is not None else _find_all(root, kind, False, stop_at)
    _FOUND[key] = (root, found)
    return list(found)


def _find_all(root: cst.CSTNode, kind, enter_functions: bool, barriers: tuple[type, ...] = _DEFS) -> list:
    found: list = []

    class _Collect(cst.CSTVisitor):
        def on_visit(self, node: cst.CSTNode) -> bool:
            if isinstance(node, kind):
                found.append(node)
            if not enter_functions and isinstance(node, barriers) and node is not root:
                return False
            return True

    root.visit(_Collect())
    return found


def children_of(node: cst.CSTNode) -> list[cst.CSTNode]:
    """``node.children`` (libcst collects them with a visit that rebuilds ``node``): its fields'
    nodes in the order libcst visits them."""
    found: list[cst.CSTNode] = []
    for field in fields_visited(node):
        value = getattr(node, field)
        kind = type(value)
        if kind is tuple or kind is list:
            found.extend(value)
        else:
            is_node = _IS_NODE.get(kind)
            if is_node is None:  # (an ABC's isinstance is a Python call: asked once per type)
                is_node = _IS_NODE[kind] = issubclass(kind, cst.CSTNode)
            if is_node:
                found.append(value)
    return found


def found_in_rebuilt(root: cst.CSTNode, kind, skip: tuple[type, ...] = ()) -> list:
    """The nodes of ``kind`` in ``root``, a tree the conversion rebuilt, not looking inside nodes
    of ``skip`` (nor at them): the parts of it that are nodes of the parsed module are looked up
    in its index, only the new nodes are walked. In no particular order."""
    index = _INDEX[0] if _INDEX else None
    found: list = []
    stack = [root]
    while stack:
        node = stack.pop()
        if skip and is_kind(node, skip):
            continue
        hits = index.find(node, kind, not skip, skip) if index is not None else None
        if hits is not None:
            found.extend(hit for hit in hits if not is_kind(hit, skip)) if skip else found.extend(hits)
        else:
            if is_kind(node, kind):
                found.append(node)
            stack.extend(children_of(node))
    return found


def is_kind(node: cst.CSTNode, kind: type | tuple[type, ...]) -> bool:
    """``isinstance(node, kind)`` for libcst node types, answered per node type once: libcst's
    node classes are ABCs, and an ``isinstance`` of one that fails is a Python call
    (``ABCMeta.__instancecheck__``) each time."""
    known = _SUBCLASS.get(kind)
    if known is None:
        known = _SUBCLASS[kind] = {}
    node_type = type(node)
    hit = known.get(node_type)
    if hit is None:
        hit = known[node_type] = issubclass(node_type, kind)
    return hit


def read_keys(expr: cst.CSTNode) -> list[str]:
    """Keys an expression reads: ``args`` of ``args.compile``, ``self.loader`` of
    ``enumerate(self.loader)`` (attribute names and keyword names are not reads)."""
    found: list[str] = []
    # the nodes in the order a libcst visitor meets them (children in visit order), walked here
    # instead of by a visitor: libcst's visit rebuilds and revalidates every node it passes
    stack = [expr]
    while stack:
        node = stack.pop()
        kind = type(node)
        if kind is cst.Name:
            if node.value not in found:  # type: ignore[attr-defined]
                found.append(node.value)  # type: ignore[attr-defined]
        elif kind is cst.Attribute:
            key = key_of(node)
            if key is not None and key not in found:
                found.append(key)
            else:
                stack.append(node.value)  # type: ignore[attr-defined]  # (not its attribute name)
        elif kind is cst.Arg:
            stack.append(node.value)  # type: ignore[attr-defined]  # (not its keyword)
        elif kind not in _FORMATTING:  # (whitespace, punctuation, operators, numbers: no name inside)
            stack.extend(reversed(children_of(node)))
    return found


def comments_in(root: cst.CSTNode) -> list[str]:
    """Every comment's text in a subtree, in source order."""
    return [c.value for c in find_all(root, cst.Comment)]


def comment_counts(root: cst.CSTNode) -> Counter[str]:
    """``Counter(comments_in(root))`` for a subtree the conversion rebuilt: the parts of it that
    are nodes of the parsed module are looked up in its index, only the new nodes are walked
    (a libcst visit of a rebuilt ``def main():`` went through all of it again, once for each
    rebuilt statement around an edit)."""
    return Counter(comment.value for comment in found_in_rebuilt(root, cst.Comment))
