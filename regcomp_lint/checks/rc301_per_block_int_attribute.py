"""RC301 per-block-int-attribute."""

from __future__ import annotations

import ast
from dataclasses import dataclass

from regcomp_lint.analysis import reachability
from regcomp_lint.analysis.containers import Containers, Node
from regcomp_lint.analysis.reachability import ModuleClass, Reachability
from regcomp_lint.checks.base import Invalid, Rule
from regcomp_lint.diagnostics import Severity
from regcomp_lint.files.parsing import children, walk

#: Arithmetic that keeps one value per block (``i + 1``, ``2 * i``, ``i // 2``); ``%`` and
#: comparisons fold the index into a few values and are left alone.
PER_BLOCK_OPS = (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv)
MAX_HOPS = 4
RECOMPILE_LIMIT = 8

_HEAD = "import torch\nfrom torch import nn\n"


def _model(block_init: str, block_forward: str, build: str, block_methods: str = "") -> str:
    return (
        _HEAD + "class Block(nn.Module):\n    def __init__(self, dim, layer_idx=None):\n        super().__init__()\n"
        "        self.fc = nn.Linear(dim, dim)\n"
        + "".join(f"        {line}\n" for line in block_init.splitlines())
        + "    def forward(self, x):\n"
        + "".join(f"        {line}\n" for line in block_forward.splitlines())
        + "".join(f"    {line}\n" for line in block_methods.splitlines())
        + "class Net(nn.Module):\n    def __init__(self, n=12):\n        super().__init__()\n"
        + "".join(f"        {line}\n" for line in build.splitlines())
        + "    def forward(self, x):\n        for block in self.blocks:\n            x = block(x)\n        return x\n"
    )


@dataclass(frozen=True)
class _Stored:
    """``self.<attr>`` of ``cls`` holds a per-block value, built by ``call`` in the parent."""

    cls: ModuleClass
    attr: str
    call: ast.Call
    count: int | None


class PerBlockIntAttribute(Rule):
    """## What it does
    Reports blocks of one class built in an `nn.ModuleList` with a different int each
    (`[Block(cfg, layer_idx=i) for i in range(n)]`, `Block(cfg, i)` appended in a `for` loop,
    the index of `enumerate`, or `i + 1`-style arithmetic of it) when the block stores that int
    on `self` (directly, or in a submodule it passes the int to, such as
    `Attention(cfg, layer_idx)`) and code reached from its `forward` reads the attribute.

    Not reported: an index used only in `__init__` (depth-scaled initialisation) or in methods
    `forward` never reaches (`extra_repr`), reads on an optional path (inside `if cache is not
    None:`, after `cache is not None and ...`, or under a test of an argument defaulting to
    `None`/`False` such as `if use_cache:`: a training step does not run it, so dynamo never
    guards on it), and values derived with `%` or a comparison
    (`self.is_first = layer_idx == 0`: two values, one recompilation). The block class must be
    defined in the linted file (its bases may come from local modules).

    ## Why is this bad
    Dynamo treats int attributes of an `nn.Module` as constants and guards on them. Identical
    blocks share one code object, so under regional compilation (`compile_regions`, or
    `TorchDynamoPlugin(use_regional_compilation=True)`) block 1 fails block 0's guard
    `self.layer_idx == 0` and recompiles, block 2 fails both, and so on. Measured with torch
    2.13 on 12 blocks compiled one by one: any read in forward recompiles per block — compute
    (`h * self.layer_idx`), a branch (`if self.layer_idx == 0:`, `if self.layer_idx % 2:`), an
    `is None` test, indexing a list or a tensor, `float(self.layer_idx)` — eight compilations,
    then `torch._dynamo hit config.recompile_limit (8)` and the last four blocks run
    **uncompiled**, silently. An attribute that is never read in forward costs nothing; a
    derived bool costs one recompilation; a string attribute (`f"block{i}"`) recompiles per
    block like an int. A whole-model `torch.compile` inlines every block with its own constant
    and does not recompile, which is why this shows up only after switching to regional
    compilation.

    ## Example
    ```python
    class Attention(nn.Module):
        def __init__(self, cfg, layer_idx):
            super().__init__()
            self.layer_idx = layer_idx

        def forward(self, x):
            scores = self.scores(x) / float(self.layer_idx + 1)
            ...

    self.h = nn.ModuleList([Block(cfg, layer_idx=i) for i in range(cfg.n_layer)])
    ```

    ## Use instead
    Let dynamo treat module ints as dynamic (measured: 2 compilations for 12 blocks instead of
    8 + 4 eager; indexing a Python list with the int still specializes), or store the value as a
    buffer, which is a tensor input rather than a guarded constant (measured: 1 compilation):
    ```python
    torch._dynamo.config.allow_unspec_int_on_nn_module = True

    self.register_buffer("layer_scale", torch.tensor(1.0 / (layer_idx + 1)), persistent=False)
    ```
    Raising the limit (`torch._dynamo.config.recompile_limit = n_layer`, or
    `torch.compile(..., recompile_limit=...)`) keeps every block compiled but still compiles
    each block separately, which is the cold start regional compilation was meant to save.

    ## Fix safety
    No fix: which remedy fits depends on how the value is used.

    ## References
    - [Recompilation (torch.compile programming model)](https://docs.pytorch.org/docs/main/user_guide/torch_compiler/compile/programming_model.recompilation.html)
    - [Reducing torch.compile cold start with regional compilation](https://docs.pytorch.org/tutorials/recipes/regional_compilation.html)
    - `torch._dynamo.config.allow_unspec_int_on_nn_module`, `recompile_limit`
    """

    code = "RC301"
    name = "per-block-int-attribute"
    severity = Severity.WARNING
    needs_compiled_module = True
    message = (
        "an int attribute that differs per block is read in forward: every block recompiles under regional compilation"
    )
    triggers = ("ModuleList",)

    valid = [
        # the index is only used in __init__
        _model(
            "nn.init.normal_(self.fc.weight, std=0.02 / (layer_idx + 1))",
            "return self.fc(x)",
            "self.blocks = nn.ModuleList([Block(8, layer_idx=i) for i in range(n)])",
        ),
        # stored but never read in forward (only in extra_repr)
        _model(
            "self.layer_idx = layer_idx",
            "return self.fc(x)",
            "self.blocks = nn.ModuleList([Block(8, i) for i in range(n)])",
            "def extra_repr(self):\n    return f'layer_idx={self.layer_idx}'",
        ),
        # a derived bool: two values, one recompilation
        _model(
            "self.is_first = layer_idx == 0",
            "return self.fc(x) if self.is_first else x",
            "self.blocks = nn.ModuleList([Block(8, layer_idx=i) for i in range(n)])",
        ),
        # the same int for every block
        _model(
            "self.layer_idx = layer_idx",
            "return self.fc(x) * self.layer_idx",
            "self.blocks = nn.ModuleList([Block(8, layer_idx=n) for i in range(n)])",
        ),
        # the loop variable is not an int
        _model(
            "self.layer_idx = layer_idx",
            "return self.fc(x) * self.layer_idx",
            "self.blocks = nn.ModuleList([Block(8, layer_idx=k) for k in ('a', 'b')])",
        ),
    ]
    invalid = [
        Invalid(
            _model(
                "self.layer_idx = layer_idx",
                "return self.fc(x) * self.layer_idx",
                "self.blocks = nn.ModuleList([Block(8, layer_idx=i) for i in range(n)])",
            ),
            message="`self.layer_idx`",
        ),
        # positional argument, appended in a loop, read in a branch
        Invalid(
            _model(
                "self.idx = layer_idx",
                "if self.idx == 0:\n    x = x * 2\nreturn self.fc(x)",
                "self.blocks = nn.ModuleList()\nfor i in range(12):\n    self.blocks.append(Block(8, i))",
            ),
            message="12 blocks",
        ),
        # arithmetic of the index, enumerate, read in a helper method
        Invalid(
            _model(
                "self.depth = layer_idx + 1",
                "return self._scale(self.fc(x))",
                "self.blocks = nn.ModuleList([Block(8, layer_idx=i) for i, _ in enumerate(range(n))])",
                "def _scale(self, h):\n    return h / self.depth",
            ),
            message="Block._scale",
        ),
    ]

    def finish(self) -> None:
        reach = self.ctx.semantic.reachability()
        if not reach.classes:
            return
        containers = Containers(reach)
        reads = _ForwardReads(reach)
        reported: set[tuple[int, str]] = set()
        for parent in reach.classes.values():
            if not _builds_block_lists(parent):
                continue  # cheap test first: most classes hold no container of local blocks
            for child in containers.class_children(parent).values():
                for element, count in _list_elements(child.node):
                    if element.path != reach.module.path:
                        continue  # built in a base class of another file: reported there
                    for stored in _stored_per_block(containers, element, count):
                        key = (id(stored.cls), stored.attr)
                        if key in reported:
                            continue
                        found = reads.first(stored.cls, stored.attr)
                        if found is not None:
                            reported.add(key)
                            self._report(stored, *found)

    def _report(self, stored: _Stored, node: ast.Attribute, label: str, chain: reachability.Chain, local: bool) -> None:
        source = self.ctx.source
        built = (
            source.segment(stored.call) if stored.call.end_lineno == stored.call.lineno else f"{stored.cls.name}(...)"
        )
        count = f" ({stored.count} blocks)" if stored.count is not None else ""
        over = (
            f"; past `recompile_limit` ({RECOMPILE_LIMIT}) the rest run uncompiled"
            if stored.count is None or stored.count > RECOMPILE_LIMIT
            else ""
        )
        message = (
            f"`self.{stored.attr}` differs per block (`{built}`, line {stored.call.lineno}) and `{label}` reads it: "
            f"under regional compilation each block recompiles{count}{over}. Set "
            f"`torch._dynamo.config.allow_unspec_int_on_nn_module = True` or keep it in a buffer ({chain})"
        )
        self.report(node if local else stored.call, message)


def _builds_block_lists(cls: ModuleClass) -> bool:
    """A container of local module classes among the submodules reachability found."""
    return any(sub.container and sub.classes for c in cls.mro() for sub in c.submodules.values())


def _list_elements(node: Node, depth: int = 0):
    """(element, literal count) for every entry of a ``ModuleList`` in ``node`` (nested in
    ``ModuleDict``/``Sequential`` too), built in a loop."""
    if node.kind != "container" or depth > 4:
        return
    for element in node.elements:
        if element.kind == "container":
            yield from _list_elements(element, depth + 1)
        elif (
            node.container == "ModuleList"
            and element.kind == "local"
            and element.loop_ints
            and isinstance(element.at, ast.Call)
        ):
            yield element, element.count


def _stored_per_block(containers: Containers, element: Node, count: int | None) -> list[_Stored]:
    """Attributes of the element's class (or of submodules it hands the int to) holding it."""
    call, cls = element.at, element.cls
    found: list[_Stored] = []
    if not isinstance(call, ast.Call) or cls is None:  # (never: the caller picks local classes built by a call)
        return found
    for param in _varying_params(cls, call, element.loop_ints):
        _follow(containers, cls, param, call, count, found, 0)
    return found


def _varying_params(cls: ModuleClass, call: ast.Call, ints: frozenset[str]) -> list[str]:
    """``__init__`` parameters of ``cls`` that ``call`` gives a per-block int."""
    found = cls.method("__init__")
    if found is None:
        return []
    params = [a.arg for a in (*found[1].args.posonlyargs, *found[1].args.args)][1:]
    names = []
    for i, arg in enumerate(call.args):
        if isinstance(arg, ast.Starred):
            break
        if i < len(params) and _per_block(arg, ints):
            names.append(params[i])
    names += [kw.arg for kw in call.keywords if kw.arg and _per_block(kw.value, ints)]
    return names


def _per_block(expr: ast.AST, ints: frozenset[str]) -> bool:
    """``i``, ``i + 1``, ``2 * i``, ``int(i)``, ``str(i)``, ``f"layer{i}"``: one value per block."""
    if isinstance(expr, ast.Name):
        return expr.id in ints
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, PER_BLOCK_OPS):
        return (_per_block(expr.left, ints) and _constant_like(expr.right)) or (
            _per_block(expr.right, ints) and _constant_like(expr.left)
        )
    if (
        isinstance(expr, ast.Call)
        and isinstance(expr.func, ast.Name)
        and expr.func.id in ("int", "str")
        and len(expr.args) == 1
    ):
        return _per_block(expr.args[0], ints)
    if isinstance(expr, ast.JoinedStr):
        return any(isinstance(v, ast.FormattedValue) and _per_block(v.value, ints) for v in expr.values)
    return False


def _constant_like(expr: ast.AST) -> bool:
    """A literal or a name/attribute (a config value: the same for every block)."""
    return isinstance(expr, (ast.Constant, ast.Name, ast.Attribute))


def _follow(
    containers: Containers,
    cls: ModuleClass,
    param: str,
    call: ast.Call,
    count: int | None,
    found: list[_Stored],
    hops: int,
) -> None:
    """Where ``cls.__init__`` puts its parameter ``param``: on ``self``, or into a submodule."""
    method = cls.method("__init__")
    if method is None or hops > MAX_HOPS:
        return
    owner, init = method
    ints = frozenset({param})
    for node in walk(init):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Attribute) and _is_self(target.value) and _per_block(node.value, ints):
                    found.append(_Stored(cls, target.attr, call, count))
        if isinstance(node, ast.Call):
            if _is_super_init(node.func):
                for base in cls.mro()[1:]:
                    if base.init is not None:
                        for name in _varying_params(base, node, ints):
                            _follow_init(containers, cls, base, name, call, count, found, hops + 1)
                        break
                continue
            resolved = containers.reach.resolve_class(node.func, owner.module)
            if isinstance(resolved, ModuleClass) and resolved.is_module and resolved is not cls:
                for name in _varying_params(resolved, node, ints):
                    _follow(containers, resolved, name, call, count, found, hops + 1)


def _follow_init(
    containers: Containers,
    cls: ModuleClass,
    base: ModuleClass,
    param: str,
    call: ast.Call,
    count: int | None,
    found: list[_Stored],
    hops: int,
) -> None:
    """``super().__init__(..., layer_idx)``: the base's assignments land on ``cls`` itself."""
    start = len(found)
    _follow(containers, base, param, call, count, found, hops)
    for i in range(start, len(found)):
        if found[i].cls is base:
            found[i] = _Stored(cls, found[i].attr, call, count)


class _ForwardReads:
    """``self.<attr>`` reads in the code each class's instances run from a forward."""

    def __init__(self, reach: Reachability) -> None:
        self.reach = reach
        self._by_class: dict[int, list[tuple[reachability.Function, reachability.Chain]]] | None = None

    def first(self, cls: ModuleClass, attr: str) -> tuple[ast.Attribute, str, reachability.Chain, bool] | None:
        best = None
        for func, chain in self._functions(cls):
            for node, optional in _reads(func.node, attr):
                if optional:
                    continue
                key = (not func.local, node.lineno, node.col_offset)
                if best is None or key < best[0]:
                    best = (key, (node, func.label, chain, func.local))
        return best[1] if best else None

    def _functions(self, cls: ModuleClass):
        if self._by_class is None:
            self._by_class = {}
            for func, chain in self.reach.reached():
                if func.cls is not None:
                    self._by_class.setdefault(id(func.cls), []).append((func, chain))
        return self._by_class.get(id(cls), [])


def _reads(func: ast.FunctionDef | ast.AsyncFunctionDef, attr: str):
    """``self.<attr>`` loads in ``func``, each with whether it sits on an optional path: the body
    of an ``if`` (or ``x if test else y``) whose test reads an argument defaulting to None/False."""
    optional_args = _optional_arguments(func)
    stack: list[tuple[ast.AST, bool]] = [(stmt, False) for stmt in func.body]
    while stack:
        node, optional = stack.pop()
        if (
            isinstance(node, ast.Attribute)
            and node.attr == attr
            and _is_self(node.value)
            and isinstance(node.ctx, ast.Load)
        ):
            yield node, optional
        if isinstance(node, (ast.If, ast.IfExp)) and _optional_test(node.test, optional_args):
            stack.append((node.test, optional))
            body = node.body if isinstance(node.body, list) else [node.body]
            orelse = node.orelse if isinstance(node.orelse, list) else [node.orelse]
            stack.extend((child, True) for child in body)
            stack.extend((child, optional) for child in orelse)
            continue
        if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And):
            after_test = optional
            for value in node.values:  # `cache is not None and cache.seen(self.idx)`: short-circuit
                stack.append((value, after_test))
                after_test = after_test or _optional_test(value, optional_args)
            continue
        stack.extend((child, optional) for child in children(node))


def _optional_arguments(func: ast.FunctionDef | ast.AsyncFunctionDef) -> frozenset[str]:
    args = func.args
    positional = [*args.posonlyargs, *args.args]
    pairs = list(zip(positional[len(positional) - len(args.defaults) :], args.defaults))
    pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]
    return frozenset(a.arg for a, d in pairs if isinstance(d, ast.Constant) and d.value in (None, False))


def _optional_test(test: ast.AST, optional_args: frozenset[str]) -> bool:
    """Reads an argument defaulting to None/False, or tests ``x is not None``."""
    for node in walk(test):
        if isinstance(node, ast.Name) and node.id in optional_args:
            return True
        if (
            isinstance(node, ast.Compare)
            and any(isinstance(op, ast.IsNot) for op in node.ops)
            and any(isinstance(c, ast.Constant) and c.value is None for c in node.comparators)
        ):
            return True
    return False


def _is_self(node: ast.AST) -> bool:
    return isinstance(node, ast.Name) and node.id == "self"


def _is_super_init(func: ast.AST) -> bool:
    return (
        isinstance(func, ast.Attribute)
        and func.attr == "__init__"
        and isinstance(func.value, ast.Call)
        and isinstance(func.value.func, ast.Name)
        and func.value.func.id == "super"
    )
