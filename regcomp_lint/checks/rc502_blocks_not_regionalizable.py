"""RC502 blocks-not-regionalizable."""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass

from regcomp_lint.analysis import callsites
from regcomp_lint.analysis.bindings import Where
from regcomp_lint.analysis.containers import Containers, Node, Tree, is_repeated, mixes_classes
from regcomp_lint.analysis.file_context import is_true, keyword_value, method_receiver
from regcomp_lint.analysis.reachability import ModuleClass, Reachability
from regcomp_lint.checks.base import Invalid, Rule
from regcomp_lint.diagnostics import Severity
from regcomp_lint.files.parsing import children, walk
from regcomp_lint.knowledge.accelerate_api import MODEL_PREPARE_METHODS, REGIONAL_FIELD
from regcomp_lint.knowledge.torch_api import SAME_MODULE_METHODS

MAX_DEPTH = 12
#: Calls that iterate their argument: ``iter(OptimizedModule)`` raises.
ITERATING_CALLS = frozenset(
    {"enumerate", "zip", "list", "tuple", "iter", "reversed", "sorted", "map", "filter", "sum", "any", "all"}
)
#: Container methods ``OptimizedModule`` forwards to the original module: what they return runs eagerly.
FORWARDED_METHODS = frozenset({"values", "items", "children", "named_children", "modules", "named_modules"})
SUGGESTION = (
    "keep repeated blocks in an `nn.ModuleList` of one class, or compile each block in place (`block.compile()`)"
)

_HEAD = "import torch\nfrom torch import nn\nfrom accelerate.utils import compile_regions\n"
_BLOCK = (
    "class Block(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.fc = nn.Linear(4, 4)\n"
    "    def forward(self, x):\n        return self.fc(x)\n"
)


def _net(init: str, forward: str, tail: str = "model = compile_regions(Net())\n") -> str:
    return (
        _HEAD
        + _BLOCK
        + "class Other(Block):\n    pass\n"
        + "class Net(nn.Module):\n    def __init__(self, n=6):\n        super().__init__()\n"
        + "".join(f"        {line}\n" for line in init.splitlines())
        + "    def forward(self, x):\n"
        + "".join(f"        {line}\n" for line in forward.splitlines())
        + tail
    )


@dataclass(frozen=True)
class _Request:
    """Where regional compilation is asked for, and the model expression it applies to."""

    at: ast.expr
    model: ast.expr
    where: Where


class BlocksNotRegionalizable(Rule):
    """## What it does
    Reports regional compilation — `accelerate.utils.compile_regions(model)` or
    `TorchDynamoPlugin(use_regional_compilation=True)` given to the `Accelerator` that prepares
    the model — of a model (a class of this file or of a local module) whose layout defeats
    it, as read from the model's `__init__`:

    - its repeated blocks (two or more instances of one class, or one built in a loop) sit in an
      `nn.Sequential` or in a `ModuleList` mixing classes, and no `ModuleList` of one class of
      blocks exists anywhere in the model;
    - a container (`ModuleDict`, `Sequential`, mixed `ModuleList`) sits beside the repeated
      blocks and `forward` indexes it (`self.heads[task]`), iterates it (`for layer in
      self.stem`), or reaches its members through `.values()`/`.items()` or by name.

    ## Why is this bad
    `compile_regions` (accelerate 1.15) compiles each child of a `ModuleList` whose children
    are all of one class, wraps every other child of the modules on the way there in its own
    `torch.compile`, and compiles the whole model when no such list exists. Measured with
    torch 2.13 and accelerate 1.15 (`backend="eager"`):

    - blocks in `nn.Sequential`, or in a `ModuleList` alternating two classes: the model comes
      back as one `OptimizedModule` — a whole-model compile whose cold start grows with depth,
      exactly what regional compilation was asked to avoid;
    - blocks in `nn.Sequential` that each hold a `ModuleList` of one class (heads, experts):
      only those inner layers are compiled, one by one; the blocks' own `forward` runs eagerly;
    - a `ModuleDict` of heads beside a `ModuleList` of blocks: `self.heads[task](x)` raises
      `TypeError: 'OptimizedModule' object is not subscriptable`; `for layer in self.stem`
      over an `nn.Sequential` raises `TypeError: 'OptimizedModule' object is not iterable`;
      `self.heads.values()` and `self.heads.name(x)` reach the original modules, which then
      run uncompiled. Calling the container (`self.stem(x)`) and `len()` work.

    ## Example
    ```python
    self.blocks = nn.Sequential(*[Block(cfg) for _ in range(cfg.n_layer)])
    self.heads = nn.ModuleDict({"sentiment": nn.Linear(d, 2), "topic": nn.Linear(d, 5)})
    ...
    model = compile_regions(model)
    ```

    ## Use instead
    ```python
    self.blocks = nn.ModuleList([Block(cfg) for _ in range(cfg.n_layer)])  # iterate it in forward
    ...
    for block in model.blocks:  # or keep the layout and compile each block in place
        block.compile()
    ```

    ## Fix safety
    No fix: changing a container changes the state-dict keys only for `ModuleDict` heads, but
    it changes how `forward` must iterate the blocks.

    ## References
    - [`compile_regions`](https://huggingface.co/docs/accelerate/package_reference/utilities)
    - [Reducing torch.compile cold start with regional compilation](https://docs.pytorch.org/tutorials/recipes/regional_compilation.html)
    """

    code = "RC502"
    name = "blocks-not-regionalizable"
    severity = Severity.WARNING
    message = "regional compilation of a model whose block layout defeats it"
    triggers = ("compile_regions", REGIONAL_FIELD)

    valid = [
        _net(
            "self.blocks = nn.ModuleList([Block() for _ in range(n)])", "for b in self.blocks:\n    x = b(x)\nreturn x"
        ),
        # a Sequential of plain layers beside the blocks, called as a whole
        _net(
            "self.stem = nn.Sequential(nn.Linear(4, 4), nn.ReLU())\nself.blocks = nn.ModuleList([Block() for _ in range(n)])",
            "x = self.stem(x)\nfor b in self.blocks:\n    x = b(x)\nreturn x",
        ),
        # no regional compilation asked for
        _net(
            "self.blocks = nn.Sequential(*[Block() for _ in range(n)])",
            "return self.blocks(x)",
            "model = torch.compile(Net())\n",
        ),
        # nothing repeated: a whole-model compile is all there is
        _net("self.fc = nn.Linear(4, 4)", "return self.fc(x)"),
        # a plain head module beside the blocks
        _net(
            "self.blocks = nn.ModuleList([Block() for _ in range(n)])\nself.head = nn.Linear(4, 2)",
            "for b in self.blocks:\n    x = b(x)\nreturn self.head(x)",
        ),
    ]
    invalid = [
        Invalid(
            _net("self.blocks = nn.Sequential(*[Block() for _ in range(n)])", "return self.blocks(x)"),
            message="compiles the whole model",
        ),
        Invalid(
            _net(
                "self.layers = nn.ModuleList([Block() if i % 2 else Other() for i in range(n)])",
                "for layer in self.layers:\n    x = layer(x)\nreturn x",
            ),
            message="mixing",
        ),
        Invalid(
            _net(
                "self.blocks = nn.ModuleList([Block() for _ in range(n)])\n"
                "self.heads = nn.ModuleDict({'a': nn.Linear(4, 2), 'b': nn.Linear(4, 3)})",
                "for b in self.blocks:\n    x = b(x)\nreturn self.heads['a'](x)",
            ),
            message="not subscriptable",
        ),
        Invalid(
            _net(
                "self.stem = nn.Sequential(nn.Linear(4, 4), nn.ReLU())\nself.blocks = nn.ModuleList([Block() for _ in range(n)])",
                "for layer in self.stem:\n    x = layer(x)\nfor b in self.blocks:\n    x = b(x)\nreturn x",
            ),
            message="not iterable",
        ),
        Invalid(
            _net(
                "self.blocks = nn.ModuleList([Block() for _ in range(n)])\nself.heads = nn.ModuleDict({'a': nn.Linear(4, 2)})",
                "for b in self.blocks:\n    x = b(x)\nreturn [h(x) for h in self.heads.values()]",
            ),
            message="uncompiled",
        ),
        # Accelerate: the plugin asks for regional compilation of the model it prepares
        Invalid(
            _net(
                "self.blocks = nn.Sequential(Block(), Block(), Block())",
                "return self.blocks(x)",
                "from accelerate import Accelerator\nfrom accelerate.utils import TorchDynamoPlugin\n"
                "plugin = TorchDynamoPlugin(backend='inductor', use_regional_compilation=True)\n"
                "accelerator = Accelerator(dynamo_plugin=plugin)\nmodel = accelerator.prepare(Net().cuda())\n",
            ),
            message="`Net.blocks`",
        ),
    ]

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.bindings = ctx.semantic.bindings
        self._regions: list[tuple[ast.Call, Where]] = []
        self._prepares: list[tuple[ast.Call, Where]] = []
        self._accelerators: set[int] = set()

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
        if name in MODEL_PREPARE_METHODS and isinstance(func, ast.Attribute):
            self._prepares.append((node, self.bindings.here(node)))
        elif (
            name == "compile_regions"
            or (isinstance(func, ast.Name) and self.ctx.imports.imported(func.id))
            or name == "Accelerator"
        ):
            if callsites.is_compile_regions(self.ctx, func) and node.args and not isinstance(node.args[0], ast.Starred):
                self._regions.append((node, self.bindings.here(node)))
            elif callsites.is_accelerator(self.ctx, func):
                self._accelerators.add(id(node))

    # -- judging ----------------------------------------------------------------------------
    def finish(self) -> None:
        requests = [_Request(call, call.args[0], where) for call, where in self._regions]
        requests += self._plugin_requests()
        if not requests:
            return
        reach = self.ctx.semantic.reachability(deep=True)  # the model often lives in model.py
        judge = _Judge(reach)
        for request in requests:
            cls = self._model_class(reach, request.model, request.where, 0)
            if cls is None:
                continue
            for message in judge.problems(cls):
                self.report(request.at, message)

    def _plugin_requests(self) -> list[_Request]:
        found = []
        for call, where in self._prepares:
            accelerator = self._value(method_receiver(call), where)
            if not (isinstance(accelerator, ast.Call) and id(accelerator) in self._accelerators):
                continue
            plugin = self._value(keyword_value(accelerator, "dynamo_plugin"), where)
            if not (isinstance(plugin, ast.Call) and callsites.is_dynamo_plugin(self.ctx, plugin.func)):
                continue
            regional = callsites.plugin_argument(plugin, REGIONAL_FIELD)
            if not is_true(regional):
                continue
            for arg in call.args:
                if isinstance(arg, ast.Starred):
                    break
                found.append(_Request(regional, arg, where))
        return found

    def _value(self, expr: ast.AST | None, where: Where) -> ast.AST | None:
        if expr is None or isinstance(expr, ast.Call):
            return expr
        bound = self.bindings.lookup(expr, where)
        return bound.value if bound is not None and bound.index is None else None

    def _model_class(self, reach: Reachability, expr: ast.AST | None, where: Where, depth: int) -> ModuleClass | None:
        """The local module class an expression holds an instance of (through names,
        ``.to(device)``-style calls, ``prepare`` and local functions that return one)."""
        if depth > MAX_DEPTH or expr is None:
            return None
        if isinstance(expr, ast.Call):
            func = expr.func
            if isinstance(func, ast.Attribute) and (
                func.attr in SAME_MODULE_METHODS or func.attr in MODEL_PREPARE_METHODS
            ):
                return self._model_class(
                    reach,
                    func.value if func.attr in SAME_MODULE_METHODS else (expr.args[0] if expr.args else None),
                    where,
                    depth + 1,
                )
            resolved = reach.resolve_class(func, reach.module)
            if isinstance(resolved, ModuleClass):
                return resolved if resolved.is_module else None
            bound = self.bindings.lookup(func, where) if isinstance(func, ast.Name) else None
            if bound is not None and isinstance(bound.value, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for value, at in self.bindings.returns(bound.value):
                    found = self._model_class(reach, value, at, depth + 1)
                    if found is not None:
                        return found
            return None
        for bound in self.bindings.candidates(expr, where):
            value = bound.value
            if (
                value is None
                or bound.index is not None
                or isinstance(value, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            ):
                continue
            found = self._model_class(reach, value, bound.where, depth + 1)
            if found is not None:
                return found
        return None


class _Judge:
    """What ``compile_regions`` will do with a model class, as messages (empty: fine)."""

    def __init__(self, reach: Reachability) -> None:
        self.reach = reach
        self.containers = Containers(reach)
        self.tree = Tree(self.containers)

    def problems(self, cls: ModuleClass) -> list[str]:
        root = Node("local", cls.node, cls=cls)
        found = self._misplaced_blocks(cls, root)
        if self.tree.has_repeated(root):
            found += self._wrapped_containers(root, cls, ())
        return found

    # -- blocks outside a one-class ModuleList --------------------------------------------------
    def _misplaced_blocks(self, cls: ModuleClass, root: Node) -> list[str]:
        holders: list[tuple[str, Node, ModuleClass, int | None]] = []
        local_lists = False
        for path, node in self._walk(root, cls.name):
            if node.kind != "container":
                continue
            if is_repeated(node) and any(e.kind == "local" for e in node.elements):
                local_lists = True
                continue
            if node.container == "Sequential" or mixes_classes(node):
                repeated = _repeated_local(node)
                if repeated is not None:
                    holders.append((path, node, *repeated))
        if local_lists or not holders:
            return []
        path, node, block, _ = holders[0]
        where = f"(`{path}`, {_line(node.at, None if node.path == self.reach.module.path else node.path)})"
        layout = (
            f"sit in an `nn.Sequential` {where}"
            if node.container == "Sequential"
            else f"sit in a `ModuleList` mixing {_classes(node)} {where}"
        )
        whole = self.tree.has_repeated(Node("local", cls.node, cls=cls))
        if whole is False:
            effect = "`compile_regions` finds no ModuleList of one class and compiles the whole model as one graph"
        elif whole:
            effect = (
                "`compile_regions` compiles only the one-class ModuleLists inside them, layer by layer, and runs the "
                "blocks' own `forward` eagerly"
            )
        else:
            effect = "`compile_regions` does not compile them as shared regions"
        return [
            f"regional compilation of `{cls.name}`: its repeated `{block.name}` blocks {layout}, so {effect}; {SUGGESTION}"
        ]

    def _walk(self, node: Node, path: str, depth: int = 0, seen: frozenset[int] = frozenset()):
        if depth > MAX_DEPTH:
            return
        yield path, node
        if node.kind == "local":
            if id(node.cls) in seen:
                return
            seen = seen | {id(node.cls)}
        elements = node.elements if node.kind == "choice" else [c for _, c in self.tree.children(node)]
        names = (
            [str(i) for i in range(len(elements))]
            if node.kind == "choice"
            else [k for k, _ in self.tree.children(node)]
        )
        for name, child in zip(names, elements):
            yield from self._walk(child, path if node.kind == "choice" else f"{path}.{name}", depth + 1, seen)

    # -- containers compiled whole beside the blocks --------------------------------------------
    def _wrapped_containers(self, node: Node, owner: ModuleClass, chain: tuple[str, ...], depth: int = 0) -> list[str]:
        if depth > MAX_DEPTH or is_repeated(node) or not self.tree.has_repeated(node):
            return []
        found = []
        for name, child in self.tree.children(node):
            if child.kind == "local" and child.cls is not None:
                found += self._wrapped_containers(child, child.cls, (), depth + 1)
                continue
            path = chain + (name,)
            if child.kind == "container" and not is_repeated(child) and self.tree.has_repeated(child) is False:
                if all(part.isidentifier() for part in path):
                    use = self._use(owner, path, child)
                    if use is not None:
                        found.append(_wrapped_message(owner, path, child, *use))
            elif child.kind == "container":
                found += self._wrapped_containers(child, owner, path, depth + 1)
        return found

    def _use(self, owner: ModuleClass, path: tuple[str, ...], container: Node) -> tuple[str, str, str] | None:
        """How the owner's forward code uses ``self.<path>``: (effect, function label, line)."""
        keys = {e.key for e in container.elements if e.key}
        best = None
        here = self.reach.module.path
        for defining, method in _forward_methods(owner):
            parents = _parents(method)
            for node in walk(method):
                if not (isinstance(node, ast.Attribute) and _self_path(node) == path):
                    continue
                effect = _effect(node, parents, keys)
                if effect is not None:
                    elsewhere = defining.module.path != here
                    rank = ("uncompiled" in effect, elsewhere, node.lineno)
                    if best is None or rank < best[0]:
                        label = f"{owner.name}.{method.name}"
                        best = (rank, (effect, label, _line(node, defining.module.path if elsewhere else None)))
        return best[1] if best else None


def _forward_methods(cls: ModuleClass) -> list[tuple[ModuleClass, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """``forward`` and the methods it calls through ``self.method(...)``, transitively (the
    model may come from another file, outside this file's call graph)."""
    found = cls.method("forward")
    if found is None:
        return []
    seen = {id(found[1])}
    methods = [found]
    for _, method in methods:
        for node in walk(method):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and _self_path(node.func.value) == ()
            ):
                callee = cls.method(node.func.attr)
                if callee is not None and id(callee[1]) not in seen:
                    seen.add(id(callee[1]))
                    methods.append(callee)
    return methods


def _wrapped_message(
    owner: ModuleClass, path: tuple[str, ...], container: Node, effect: str, label: str, line: str
) -> str:
    name = "self." + ".".join(path)
    return (
        f"regional compilation wraps `{name}` of `{owner.name}` (an {container.label}) in one `OptimizedModule` beside "
        f"the repeated blocks, and `{label}` {effect} ({line}); {SUGGESTION}"
    )


def _line(node: ast.expr | ast.stmt, path: str | None) -> str:
    """``line 12``, or ``model.py:12`` for code in another file."""
    return f"{os.path.basename(path)}:{node.lineno}" if path else f"line {node.lineno}"


def _effect(node: ast.Attribute, parents: dict[int, ast.AST], keys: set[str]) -> str | None:
    parent = parents.get(id(node))
    if isinstance(parent, ast.Subscript) and parent.value is node:
        return "indexes it: `TypeError: 'OptimizedModule' object is not subscriptable`"
    if isinstance(parent, (ast.For, ast.AsyncFor, ast.comprehension)) and parent.iter is node:
        return "iterates it: `TypeError: 'OptimizedModule' object is not iterable`"
    if isinstance(parent, ast.Starred):
        return "unpacks it: `TypeError: 'OptimizedModule' object is not iterable`"
    if (
        isinstance(parent, ast.Call)
        and node in parent.args
        and isinstance(parent.func, ast.Name)
        and parent.func.id in ITERATING_CALLS
    ):
        return f"passes it to `{parent.func.id}()`: `TypeError: 'OptimizedModule' object is not iterable`"
    if (
        isinstance(parent, ast.Attribute)
        and parent.value is node
        and (parent.attr in FORWARDED_METHODS or parent.attr in keys)
    ):
        return f"reaches its members through `.{parent.attr}`: they run uncompiled"
    return None


def _parents(root: ast.AST) -> dict[int, ast.AST]:
    parents = {}
    for node in walk(root):
        for child in children(node):
            parents[id(child)] = node
    return parents


def _self_path(node: ast.AST) -> tuple[str, ...] | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name) and node.id == "self":
        return tuple(reversed(parts))
    return None


def _repeated_local(node: Node) -> tuple[ModuleClass, int | None] | None:
    """A local class with two or more entries in the container (or one built in a loop)."""
    entries: list[Node] = []
    for element in node.elements:
        entries += element.elements if element.kind == "choice" else [element]
    counts: dict[int, tuple[ModuleClass, int, bool]] = {}
    for entry in entries:
        if entry.kind == "local" and entry.cls is not None:
            cls, n, many = counts.get(id(entry.cls), (entry.cls, 0, False))
            counts[id(entry.cls)] = (cls, n + 1, many or entry.many)
    for cls, n, many in counts.values():
        if n >= 2 or many:
            return cls, None
    return None


def _classes(node: Node) -> str:
    names = []
    for element in node.elements:
        for entry in element.elements if element.kind == "choice" else [element]:
            if entry.label not in names:
                names.append(entry.label)
    return " and ".join(f"`{n}`" for n in names[:3])
