"""A model's module tree as ``accelerate.utils.compile_regions`` will see it, read from the code.

Regional compilation only looks at containers: a ``ModuleList`` whose children are all of one
class is "repeated blocks" and each child is compiled on its own; every other child of a module
on the way to such a list is compiled whole; a model without one is compiled whole. This module
rebuilds that tree statically, for RC301 and RC502:

- :func:`class_children` lists what a module class's ``__init__`` (and its other non-forward
  methods) assigns to ``self``: a local block (``self.attn = Attention(cfg)``), a ``torch.nn``
  layer, or a container (``nn.ModuleList`` / ``nn.Sequential`` / ``nn.ModuleDict``) with its
  elements. Elements are followed through list names (``layers = [...]``, ``layers += [...]``,
  ``layers.append(...)`` in a loop), ``*layers``, comprehensions (one element standing for
  many), ``[Block()] * n``, ``dict(...)`` displays and helper methods that return a container
  (torchvision's ``self.layer1 = self._make_layer(...)``).
- Each :class:`Node` keeps the call that builds it and, for an element built in a loop, the loop
  variables that are ints (``for i in range(n)``, the index of ``enumerate``): RC301 reads them.

Nothing is imported and only ``__init__``-like methods are walked; forward is never read here.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from regcomp_lint.analysis.models import iteration_count
from regcomp_lint.analysis.reachability import (
    FUNCTION_DEFS,
    TORCH_NN_NOT_MODULES,
    ModuleClass,
    ParsedModule,
    Reachability,
)
from regcomp_lint.files.parsing import walk
from regcomp_lint.knowledge.torch_api import MODULE_CONTAINERS, TORCH_STACKS

MAX_DEPTH = 8


@dataclass(eq=False)
class Node:
    """One module of the tree, or one entry of a container standing for one or many modules.

    ``kind``: ``"container"`` (``container`` says which), ``"local"`` (``cls`` is a class of the
    project), ``"torch"`` (``qualname`` such as ``torch.nn.Linear``), ``"choice"`` (``A() if c
    else B()``: ``elements`` are both; ``varies`` when ``c`` reads a loop int, so a loop builds
    both) or ``"unknown"``.
    """

    kind: str
    at: ast.expr | ast.stmt
    container: str | None = None
    cls: ModuleClass | None = None
    qualname: str | None = None
    elements: list[Node] = field(default_factory=list)
    #: Built in a comprehension or a loop: stands for any number of modules.
    many: bool = False
    #: How many, when ``many`` and the loop is a literal ``range(n)``.
    count: int | None = None
    #: Int loop variables in scope where the element is built (``i`` in ``for i in range(n)``).
    loop_ints: frozenset[str] = frozenset()
    #: The key of a ``ModuleDict`` entry (``h`` in ``nn.ModuleDict(dict(h=...))``).
    key: str | None = None
    varies: bool = False
    #: The file ``at`` is in.
    path: str | None = None

    @property
    def label(self) -> str:
        if self.kind == "container":
            return f"nn.{self.container}"
        if self.kind == "local" and self.cls is not None:
            return self.cls.name
        if self.kind == "torch" and self.qualname is not None:
            return "nn." + self.qualname.rsplit(".", 1)[-1]
        if self.kind == "choice":
            return " or ".join(e.label for e in self.elements)
        return "?"

    def identity(self) -> object:
        """What makes two entries "the same class" to ``is_repeated_blocks``."""
        if self.kind == "local":
            return self.cls
        if self.kind == "torch":
            return self.qualname
        return None


@dataclass(eq=False)
class Child:
    """``self.<attr>`` of a module class: what it holds and where it is assigned."""

    attr: str
    node: Node
    at: ast.AST


class Containers:
    """Per-file memo of class children (one instance per linted file, built on demand)."""

    def __init__(self, reach: Reachability) -> None:
        self.reach = reach
        self._children: dict[int, dict[str, Child]] = {}

    # -- classes ----------------------------------------------------------------------------
    def class_children(self, cls: ModuleClass) -> dict[str, Child]:
        """``self.<attr>`` modules of ``cls`` and its local bases (a subclass wins)."""
        key = id(cls)
        if key in self._children:
            return self._children[key]
        self._children[key] = {}  # in progress: a class that contains itself adds nothing
        found: dict[str, Child] = {}
        for owner in reversed(cls.mro()):
            for name, method in owner.local_methods.items():
                if name != "forward":
                    _Reader(self, owner, method).read_into(found)
        self._children[key] = found
        return found

    def node_of(
        self,
        value: ast.expr,
        owner: ModuleClass,
        method: ast.AST,
        loop_ints: frozenset[str] = frozenset(),
        depth: int = 0,
    ) -> Node:
        return _Reader(self, owner, method, depth).node(value, loop_ints)


class _Reader:
    """Reads one method of ``owner``: its list names, its ``self.<attr>`` assignments."""

    def __init__(self, containers: Containers, owner: ModuleClass, method: ast.AST, depth: int = 0) -> None:
        self.containers = containers
        self.owner = owner
        self.module: ParsedModule = owner.module
        self.method = method
        self.depth = depth
        self._lists: dict[str, list[_Entry]] | None = None
        self._appended: dict[str, list[_Entry]] = {}

    # -- collecting ---------------------------------------------------------------------------
    def read_into(self, found: dict[str, Child]) -> None:
        self.lists()  # also fills self._appended
        for attr, items in self._appended.items():
            if attr.startswith("self."):
                name = attr[5:]
                existing = found.get(name)
                if existing is not None and existing.node.kind == "container":
                    existing.node.elements.extend(self._entry_nodes(items))
        for stmt, attr, value in self._self_assignments():
            if not _may_be_module(value):
                continue
            node = self.node(value, frozenset())
            if node.kind == "container" and f"self.{attr}" in self._appended:
                node.elements.extend(self._entry_nodes(self._appended[f"self.{attr}"]))
            if node.kind != "unknown" or attr not in found:
                found[attr] = Child(attr, node, stmt)

    def _self_assignments(self):
        for stmt in walk(self.method):
            if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                for target in targets:
                    if isinstance(target, ast.Attribute) and _is_self(target.value):
                        yield stmt, target.attr, stmt.value
            elif (
                isinstance(stmt, ast.Call)
                and isinstance(stmt.func, ast.Attribute)
                and _is_self(stmt.func.value)
                and stmt.func.attr in ("add_module", "register_module")
                and len(stmt.args) == 2
            ):
                key = stmt.args[0]
                if isinstance(key, ast.Constant) and isinstance(key.value, str):
                    yield stmt, key.value, stmt.args[1]

    def _entry_nodes(self, entries: list[_Entry]) -> list[Node]:
        return [n for e in entries for n in self._items(e.value, e.ints, e.looped, count=e.count)]

    def lists(self) -> dict[str, list[_Entry]]:
        """Local list names and ``self.x.append`` targets: their items with loop ints and
        whether they were added in a loop."""
        if self._lists is not None:
            return self._lists
        lists: dict[str, list[_Entry]] = {}
        self._lists = lists
        self._scan(
            self.method.body if isinstance(self.method, FUNCTION_DEFS) else [],
            _Loop(frozenset(), False, None),
            lists,
        )
        return lists

    def _scan(self, body: list[ast.stmt], where: _Loop, lists: dict[str, list[_Entry]]) -> None:
        """``where``: the loop context."""
        for stmt in body:
            if isinstance(stmt, (ast.For, ast.AsyncFor)):
                inner = _Loop(where.ints | _int_targets(stmt.target, stmt.iter), True, iteration_count(stmt.iter))
                self._scan(stmt.body, inner, lists)
                self._scan(stmt.orelse, where, lists)
                continue
            if isinstance(stmt, ast.While):
                self._scan(stmt.body, _Loop(where.ints, True, None), lists)
                continue
            if isinstance(stmt, (ast.If, ast.With, ast.AsyncWith, ast.Try)):
                for part in ("body", "orelse", "finalbody"):
                    self._scan(getattr(stmt, part, []) or [], where, lists)
                for handler in getattr(stmt, "handlers", []) or []:
                    self._scan(handler.body, where, lists)
                continue
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                lists[stmt.targets[0].id] = [where.with_value(stmt.value)]
            elif isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name) and isinstance(stmt.op, ast.Add):
                lists.setdefault(stmt.target.id, []).append(where.with_value(stmt.value))
            elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
                call = stmt.value
                func = call.func
                if isinstance(func, ast.Attribute) and func.attr in ("append", "extend", "insert") and call.args:
                    key = _target_key(func.value)
                    if key is not None:
                        added = call.args[-1]
                        if func.attr == "extend":
                            value = ast.List([ast.Starred(added, ast.Load())], ast.Load())  # spread like `+=`
                        else:
                            value = ast.List([added], ast.Load())
                        entry = where.with_value(value)
                        if key.startswith("self."):
                            self._appended.setdefault(key, []).append(entry)
                        else:
                            lists.setdefault(key, []).append(entry)

    # -- evaluating ---------------------------------------------------------------------------
    def node(self, value: ast.expr, ints: frozenset[str], many: bool = False, count: int | None = None) -> Node:
        """What ``value`` builds, for a module-valued expression."""
        found = self._node(value, ints, many, count)
        if found.path is None:
            found.path = self.module.path
        return found

    def _node(self, value: ast.expr, ints: frozenset[str], many: bool, count: int | None) -> Node:
        if self.depth > MAX_DEPTH:
            return Node("unknown", value)
        if isinstance(value, ast.List) and len(value.elts) == 1 and not isinstance(value.elts[0], ast.Starred):
            value = value.elts[0]  # an appended item
        if isinstance(value, ast.Call):
            node = self._call(value, ints, many)
            if many and node.count is None:
                node.count = count
            return node
        if isinstance(value, ast.IfExp):
            body, orelse = self.node(value.body, ints, many), self.node(value.orelse, ints, many)
            if body.identity() is not None and body.identity() == orelse.identity():
                return body
            varies = any(isinstance(n, ast.Name) and n.id in ints for n in walk(value.test))
            return Node("choice", value, elements=[body, orelse], many=many, varies=varies)
        return Node("unknown", value, many=many, loop_ints=ints)

    def _call(self, call: ast.Call, ints: frozenset[str], many: bool) -> Node:
        func = call.func
        if isinstance(func, ast.Attribute) and _is_self(func.value):
            return self._helper_method(call, func.attr, ints, many)
        resolved = self.containers.reach.resolve_class(func, self.module)
        if isinstance(resolved, ModuleClass):
            if resolved.is_module:
                return Node("local", call, cls=resolved, many=many, loop_ints=ints)
            return Node("unknown", call, many=many)
        if isinstance(resolved, str) and resolved.startswith("torch.nn."):
            last = resolved.rsplit(".", 1)[-1]
            if last in TORCH_NN_NOT_MODULES:
                return Node("unknown", call, many=many)
            if last in MODULE_CONTAINERS:
                node = Node("container", call, container=last, many=many, loop_ints=ints)
                node.elements = self._elements(call, last, ints)
                return node
            if last[:1].isupper():
                return Node("torch", call, qualname=resolved, many=many, loop_ints=ints)
        if _is_deepcopy(func, self.module) and call.args:
            inner = self.node(call.args[0], ints, many)
            return inner if inner.kind != "unknown" else Node("unknown", call, many=many)
        return Node("unknown", call, many=many, loop_ints=ints)

    def _helper_method(self, call: ast.Call, name: str, ints: frozenset[str], many: bool) -> Node:
        """``self._make_layer(...)``: what the method returns (one return value only)."""
        found = self.owner.method(name)
        if found is None:
            return Node("unknown", call, many=many)
        defining, method = found
        returns = [n.value for n in walk(method) if isinstance(n, ast.Return) and n.value is not None]
        if len(returns) != 1:
            return Node("unknown", call, many=many)
        inner = _Reader(self.containers, defining, method, self.depth + 1)
        node = inner.node(returns[0], frozenset())
        node.many = node.many or many
        return node

    def _elements(self, call: ast.Call, kind: str, ints: frozenset[str]) -> list[Node]:
        args = list(call.args)
        if kind == "ModuleDict":
            return [n for arg in args[:1] for n in self._dict_values(arg, ints)]
        if kind == "ModuleList":
            return [n for arg in args[:1] for n in self._items(arg, ints, False)]
        return [n for arg in args for n in self._items(arg, ints, False)]  # Sequential(*layers) or Sequential(a, b)

    def _dict_values(self, arg: ast.expr, ints: frozenset[str]) -> list[Node]:
        if isinstance(arg, ast.Dict):
            return [
                dataclass_replace(
                    self.node(v, ints),
                    key=k.value if isinstance(k, ast.Constant) and isinstance(k.value, str) else None,
                )
                for k, v in zip(arg.keys, arg.values)
                if k is not None
            ]
        if isinstance(arg, ast.Call) and isinstance(arg.func, ast.Name) and arg.func.id == "dict":
            return [
                dataclass_replace(self.node(kw.value, ints), key=kw.arg) for kw in arg.keywords if kw.arg is not None
            ]
        if isinstance(arg, ast.DictComp):
            return [self.node(arg.value, ints | _comprehension_ints(arg), True)]
        return [Node("unknown", arg)]

    def _items(
        self, arg: ast.expr, ints: frozenset[str], many: bool, depth: int = 0, count: int | None = None
    ) -> list[Node]:
        """The modules a list-valued expression holds."""
        if depth > MAX_DEPTH:
            return [Node("unknown", arg)]
        if isinstance(arg, ast.Starred):
            return self._items(arg.value, ints, many, depth + 1, count)
        if isinstance(arg, (ast.List, ast.Tuple)):
            found = []
            for elt in arg.elts:
                if isinstance(elt, ast.Starred):
                    found += self._items(elt.value, ints, many, depth + 1, count)
                else:
                    found.append(self.node(elt, ints, many, count))
            return found
        if isinstance(arg, (ast.ListComp, ast.GeneratorExp)):
            gen = arg.generators[0]
            inner = iteration_count(gen.iter) if len(arg.generators) == 1 and not gen.ifs else None
            return [self.node(arg.elt, ints | _comprehension_ints(arg), True, inner)]
        if isinstance(arg, ast.BinOp) and isinstance(arg.op, ast.Add):
            return self._items(arg.left, ints, many, depth + 1) + self._items(arg.right, ints, many, depth + 1)
        if isinstance(arg, ast.BinOp) and isinstance(arg.op, ast.Mult):
            seq = arg.left if isinstance(arg.left, (ast.List, ast.Tuple)) else arg.right
            return [dataclass_replace(n, many=True) for n in self._items(seq, ints, True, depth + 1)]
        if isinstance(arg, ast.Name):
            entries = self.lists().get(arg.id)
            if entries is None:
                return [Node("unknown", arg)]
            found = []
            for entry in entries:
                found += self._items(entry.value, entry.ints, many or entry.looped, depth + 1, entry.count)
            return found
        if isinstance(arg, ast.Call):
            node = self._call(arg, ints, many)
            if node.kind == "container":
                return node.elements
            return [node]
        return [Node("unknown", arg)]


@dataclass(frozen=True)
class _Loop:
    """Where a value is added to a list: int loop variables, inside a loop at all, and the
    loop's literal count."""

    ints: frozenset[str]
    looped: bool
    count: int | None

    def with_value(self, value: ast.expr) -> _Entry:
        return _Entry(value, self.ints, self.looped, self.count)


@dataclass(frozen=True)
class _Entry:
    """A value added to a list, with its loop context (see :class:`_Loop`)."""

    value: ast.expr
    ints: frozenset[str]
    looped: bool
    count: int | None


def dataclass_replace(node: Node, **changes) -> Node:
    fields = dict(node.__dict__)
    fields.update(changes)
    return Node(**fields)


# -- what compile_regions does with a tree ---------------------------------------------------


def is_repeated(node: Node) -> bool | None:
    """``accelerate.utils.other.is_repeated_blocks``: a ModuleList of one class (None: unknown)."""
    if node.kind != "container" or node.container != "ModuleList" or not node.elements:
        return False
    if any(e.kind == "choice" and e.varies for e in node.elements):
        return False  # the loop builds both classes
    identities = [e.identity() for e in node.elements]
    known = [i for i in identities if i is not None]
    if len(set(map(id, known))) > 1:
        return False
    if len(known) < len(identities):
        return None
    return True


def mixes_classes(node: Node) -> bool:
    """A container whose entries are certainly of more than one class."""
    if node.kind != "container":
        return False
    if any(e.kind == "choice" and e.varies for e in node.elements):
        return True
    known = {id(e.identity()) for e in node.elements if e.identity() is not None}
    return len(known) > 1


class Tree:
    """Questions about a module tree, for one file (memoized per class)."""

    def __init__(self, containers: Containers) -> None:
        self.containers = containers
        self._has: dict[int, bool | None] = {}

    def children(self, node: Node) -> list[tuple[str, Node]]:
        if node.kind == "container":
            return [(e.key or str(i), e) for i, e in enumerate(node.elements)]
        if node.kind == "local" and node.cls is not None:
            return [(attr, child.node) for attr, child in self.containers.class_children(node.cls).items()]
        return []

    def has_repeated(self, node: Node, depth: int = 0) -> bool | None:
        """``has_repeated_blocks``: a one-class ModuleList anywhere below (None: cannot tell)."""
        if depth > MAX_DEPTH:
            return None
        if node.kind == "local":
            key = id(node.cls)
            if key in self._has:
                return self._has[key]
            self._has[key] = False  # in progress
            found = self._any_repeated(node, depth)
            self._has[key] = found
            return found
        if node.kind == "torch" and node.qualname is not None:
            return None if node.qualname.rsplit(".", 1)[-1] in TORCH_STACKS else False
        if node.kind == "unknown":
            return None
        if node.kind == "choice":
            answers = [self.has_repeated(e, depth + 1) for e in node.elements]
            return True if any(answers) else None if None in answers else False
        return self._any_repeated(node, depth)

    def _any_repeated(self, node: Node, depth: int) -> bool | None:
        if is_repeated(node):
            return True
        unknown = is_repeated(node) is None
        for _, child in self.children(node):
            found = self.has_repeated(child, depth + 1)
            if found:
                return True
            unknown = unknown or found is None
        return None if unknown else False


#: ``self.x = <value>`` values that are never modules (numbers, config fields, tensors, text).
_NOT_MODULE_VALUES = (
    ast.Constant,
    ast.Attribute,
    ast.Subscript,
    ast.BinOp,
    ast.Compare,
    ast.BoolOp,
    ast.UnaryOp,
    ast.JoinedStr,
    ast.Tuple,
    ast.List,
    ast.Dict,
    ast.Set,
    ast.Lambda,
    ast.ListComp,
    ast.DictComp,
)


def _may_be_module(value: ast.expr) -> bool:
    if isinstance(value, _NOT_MODULE_VALUES):
        return False
    if isinstance(value, ast.Call):
        func = value.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
        self_method = isinstance(func, ast.Attribute) and _is_self(func.value)
        if not name:
            return False
        return name[:1].isupper() or self_method or name == "deepcopy"
    return True


def _int_targets(target: ast.AST, iterable: ast.AST) -> frozenset[str]:
    """Loop variables that are ints: ``i`` of ``range(...)``, the index of ``enumerate(...)``."""
    if not (isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Name)):
        return frozenset()
    if iterable.func.id == "range" and isinstance(target, ast.Name):
        return frozenset({target.id})
    if (
        iterable.func.id == "enumerate"
        and isinstance(target, ast.Tuple)
        and target.elts
        and isinstance(target.elts[0], ast.Name)
    ):
        return frozenset({target.elts[0].id})
    return frozenset()


def _comprehension_ints(comp: ast.DictComp | ast.ListComp | ast.GeneratorExp) -> frozenset[str]:
    found: frozenset[str] = frozenset()
    for gen in comp.generators:
        found |= _int_targets(gen.target, gen.iter)
    return found


def _target_key(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute) and _is_self(node.value):
        return f"self.{node.attr}"
    return None


def _is_self(node: ast.AST) -> bool:
    return isinstance(node, ast.Name) and node.id == "self"


def _is_deepcopy(func: ast.AST, module: ParsedModule) -> bool:
    return module.imports.resolves_to(func, "copy.deepcopy")
