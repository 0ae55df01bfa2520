"""RC210 fullgraph-blocked."""

from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass

from regcomp_lint.analysis import callsites
from regcomp_lint.analysis.file_context import is_true, keyword_value, method_receiver
from regcomp_lint.analysis.reachability import FUNCTION_DEFS, ModuleClass, Reachability, top_level_statements
from regcomp_lint.checks.base import Invalid, Rule
from regcomp_lint.checks.forward_rule import ForwardRule, breaks_in
from regcomp_lint.diagnostics import Severity
from regcomp_lint.files.source import Positioned
from regcomp_lint.knowledge.accelerate_api import MODEL_PREPARE_METHODS
from regcomp_lint.knowledge.model_classes import FACTORY_METHODS
from regcomp_lint.knowledge.torch_api import DATA_PARALLEL, SAME_MODULE_METHODS

MAX_DEPTH = 20

_MODEL = (
    "import torch\nfrom torch import nn\n"
    "class Block(nn.Module):\n    def forward(self, x):\n        print(x.shape)\n        return x\n"
    "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
    "        self.blocks = nn.ModuleList([Block() for _ in range(2)])\n"
    "    def forward(self, x):\n        for b in self.blocks:\n            x = b(x)\n        return x\n"
)
_CLEAN = (
    "import torch\nfrom torch import nn\nclass Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
    "        self.fc = nn.Linear(4, 4)\n    def forward(self, x):\n        return self.fc(x)\n"
)


class FullgraphBlocked(Rule):
    """## What it does
    Reports `fullgraph=True` (on `torch.compile(model, ...)`, `model.compile(...)`,
    `@torch.compile` on a `forward`, or a `TorchDynamoPlugin` whose accelerator prepares the
    model) when the model's class is known (defined in the file or in a local module it
    imports) and the code its `forward` reaches has a graph break that `fullgraph=True` does not
    absorb: any RC202, RC203, RC205, RC206, RC207, RC208 or RC209 finding, or a float
    `.tolist()` / `torch.equal` from RC201. The message points at the first breaking line.

    Breaks that `fullgraph=True` captures instead of raising (`.item()`, `int(t)`, `nonzero`,
    `x[mask]`: with `fullgraph=True` torch turns on `capture_scalar_outputs` and
    `capture_dynamic_output_shape_ops`) do not count.

    ## Why is this bad
    With `fullgraph=True` the first graph break raises `torch._dynamo.exc.Unsupported` at the
    first forward pass, typically after the job has been scheduled, the data loaded and the
    model moved to the GPU. The linter sees the same break without running anything.

    ## Example
    ```python
    class Block(nn.Module):
        def forward(self, x):
            print(x.shape)  # RC203
            return x

    model = torch.compile(Net(), fullgraph=True)
    ```

    ## Use instead
    Remove the breaks the message names (each has its own RC2xx finding and advice), or drop
    `fullgraph=True` and accept the split graphs.

    ## Fix safety
    No fix: which side to change is the author's call.

    ## References
    - [`torch.compile(fullgraph=...)`](https://docs.pytorch.org/docs/stable/generated/torch.compile.html)
    - [Accelerate `TorchDynamoPlugin`](https://huggingface.co/docs/accelerate/package_reference/utilities)
    """

    code = "RC210"
    name = "fullgraph-blocked"
    severity = Severity.ERROR
    message = "`fullgraph=True` will raise `torch._dynamo.exc.Unsupported`: the model has a graph break"
    #: the ``fullgraph=True`` keyword, not ``_can_compile_fullgraph = True`` (in every transformers model)
    triggers = (re.compile(r"fullgraph(?<!\wfullgraph)(?:=True| = True)"), "TorchDynamoPlugin(")

    valid = [
        _CLEAN + "model = torch.compile(Net(), fullgraph=True)\n",
        # fullgraph off, or not a literal True
        _MODEL + "model = torch.compile(Net())\nmodel2 = torch.compile(Net(), fullgraph=False)\n",
        # breaks fullgraph=True captures: .item() and boolean masks
        "import torch\nfrom torch import nn\nclass Net(nn.Module):\n    def forward(self, x):\n"
        "        return x[x > 0] * x.sum().item()\nmodel = torch.compile(Net(), fullgraph=True)\n",
        # a model of unknown class
        "import torch\nfrom mylib import build\nmodel = torch.compile(build(), fullgraph=True)\n",
        # a compile of a different, clean model
        _MODEL
        + _CLEAN.replace("class Net", "class Clean").split("import torch\nfrom torch import nn\n", 1)[1]
        + "model = Clean()\nmodel = torch.compile(model, fullgraph=True)\n",
    ]
    invalid = [
        Invalid(
            _MODEL + "model = torch.compile(Net(), fullgraph=True)\n", message="`Net` breaks the graph at line 5: RC203"
        ),
        Invalid(
            _MODEL + "model = Net().to('cuda')\nmodel = torch.compile(model, mode='max-autotune', fullgraph=True)\n",
            message="reached via Net.forward → Block.forward",
        ),
        Invalid(_MODEL + "model = Net()\nmodel.compile(fullgraph=True)\n"),
        Invalid(
            "from accelerate import Accelerator\nfrom accelerate.utils import TorchDynamoPlugin\n"
            + _MODEL
            + "plugin = TorchDynamoPlugin(backend='inductor', fullgraph=True)\n"
            "accelerator = Accelerator(dynamo_plugin=plugin)\nmodel = accelerator.prepare(Net())\n"
        ),
        Invalid(
            "import torch\nfrom torch import nn\nclass Net(nn.Module):\n    @torch.compile(fullgraph=True)\n"
            "    def forward(self, x):\n        if x.sum() > 0:\n            x = -x\n        return x\n",
            message="RC202",
        ),
    ]

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        #: (the ``fullgraph`` value to point at, the model expression or None, where it is, a class name)
        self._sites: list[tuple[ast.expr, ast.expr | None, _Where | None, str | None]] = []
        self._prepared: list[tuple[ast.expr, _Where]] = []

    def _here(self, node: Positioned) -> _Where:
        ancestors = self.ctx.ancestors
        defs = tuple(a for a in ancestors if isinstance(a, FUNCTION_DEFS))
        classes = [a for a in ancestors if isinstance(a, ast.ClassDef)]
        return _Where(defs, classes[-1] if classes else None, (node.lineno, node.col_offset))

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        parent = self.ctx.parent()
        if node.name != "forward" or not isinstance(parent, ast.ClassDef) or not node.decorator_list:
            return
        for decorator in node.decorator_list:
            call = callsites.decorator_compile_call(self.ctx, decorator)
            fullgraph = keyword_value(call, "fullgraph") if isinstance(call, ast.Call) else None
            if is_true(fullgraph):
                self._sites.append((fullgraph, None, None, parent.name))

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if type(func) is ast.Attribute and func.attr in MODEL_PREPARE_METHODS:
            where = self._here(node)
            self._prepared.extend((arg, where) for arg in node.args if not isinstance(arg, ast.Starred))
        fullgraph = keyword_value(node, "fullgraph")
        plugin_like = (
            len(node.args) > 2 and (getattr(func, "attr", None) or getattr(func, "id", None)) == "TorchDynamoPlugin"
        )
        if fullgraph is None and not plugin_like:
            return  # the cheap exit for almost every call
        site = callsites.classify(self.ctx, node)
        if site is callsites.Site.DYNAMO_PLUGIN:
            fullgraph = callsites.plugin_argument(node, "fullgraph")
        if not is_true(fullgraph):
            return
        if site is callsites.Site.TORCH_COMPILE and node.args:
            self._sites.append((fullgraph, node.args[0], self._here(node), None))
        elif site is callsites.Site.MODULE_COMPILE and callsites.is_torch_module_compile(self.ctx, node):
            self._sites.append((fullgraph, method_receiver(node), self._here(node), None))
        elif site is callsites.Site.DYNAMO_PLUGIN:
            self._sites.append((fullgraph, None, self._here(node), None))

    def finish(self) -> None:
        if not self._sites:
            return
        reach = self.ctx.semantic.reachability(deep=True)
        for at, model, where, class_name in self._sites:
            if class_name is not None:
                classes = [reach.classes[class_name]] if class_name in reach.classes else []
            elif model is not None and where is not None:  # (a model expression comes with its place)
                classes = _Resolver(reach, self.ctx).classes_of(model, where)
            else:  # a plugin: whatever the file prepares
                resolver = _Resolver(reach, self.ctx)
                classes = [c for expr, w in self._prepared for c in resolver.classes_of(expr, w)]
            for cls in _unique(classes):
                message = _blocked(reach, cls, self.ctx.filename)
                if message is not None:
                    self.report(at, message)
                    break


@dataclass(frozen=True)
class _Where:
    defs: tuple[ast.FunctionDef | ast.AsyncFunctionDef, ...]  # enclosing functions, outermost first
    cls: ast.ClassDef | None
    pos: tuple[int, int]


class _Resolver:
    """Which module classes an expression holds: ``Net()``, ``model`` assigned earlier,
    ``model.to(device)``, ``self.model``, ``accelerator.prepare(model)``, DDP wrappers."""

    def __init__(self, reach: Reachability, ctx) -> None:
        self.reach = reach
        self.ctx = ctx

    def classes_of(self, expr: ast.AST | None, where: _Where, depth: int = 0) -> list[ModuleClass]:
        if expr is None or depth > MAX_DEPTH:
            return []
        if isinstance(expr, ast.Call):
            func = expr.func
            if isinstance(func, ast.Attribute):
                if func.attr in SAME_MODULE_METHODS:
                    return self.classes_of(func.value, where, depth + 1)
                if func.attr in MODEL_PREPARE_METHODS and len(expr.args) == 1:
                    return self.classes_of(expr.args[0], where, depth + 1)
                if func.attr in FACTORY_METHODS:
                    return []
            if self.ctx.resolves_to(func, *DATA_PARALLEL) and expr.args:
                return self.classes_of(expr.args[0], where, depth + 1)
            resolved = self.reach.resolve_class(func, self.reach.module)
            return [resolved] if isinstance(resolved, ModuleClass) and resolved.is_module else []
        found: list[ModuleClass] = []
        for value, index in self._values(expr, where):
            held = _element(value, index) if index is not None else value
            found.extend(self.classes_of(held, where, depth + 1))
        return found

    def _values(self, expr: ast.AST, where: _Where) -> list[tuple[ast.expr, int | None]]:
        """The value last assigned to a name (or ``self.attr``) before ``where``."""
        if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) and expr.value.id == "self":
            if where.cls is None:
                return []
            found: list[tuple[ast.expr, int | None]] = []
            for stmt in where.cls.body:
                if isinstance(stmt, FUNCTION_DEFS):
                    found.extend((v, None) for attr, v in self.reach.facts(stmt).self_assigns if attr == expr.attr)
            return found
        if not isinstance(expr, ast.Name):
            return []
        for scope in reversed(where.defs):
            bindings = self.reach.facts(scope).bindings.get(expr.id)
            if bindings:
                # (a "value" binding's value is always an expression)
                values = [(v, i) for kind, v, i in bindings if kind == "value" and isinstance(v, ast.expr)]
                return _last_before(values, where.pos)
        values = []
        for stmt in top_level_statements(self.ctx.tree.body):
            if isinstance(stmt, ast.Assign):
                for target in stmt.targets:
                    if isinstance(target, ast.Name) and target.id == expr.id:
                        values.append((stmt.value, None))
                    elif isinstance(target, (ast.Tuple, ast.List)):
                        values.extend(
                            (stmt.value, i)
                            for i, e in enumerate(target.elts)
                            if isinstance(e, ast.Name) and e.id == expr.id
                        )
        return _last_before(values, where.pos if not where.defs else (10**9, 0))


def _last_before(values: list[tuple[ast.expr, int | None]], pos: tuple[int, int]) -> list[tuple[ast.expr, int | None]]:
    before = [(v, i) for v, i in values if (v.lineno, v.col_offset) < pos]
    return before[-1:] if before else values[-1:]


def _element(value: ast.AST, index: int) -> ast.AST | None:
    """Element ``index`` of ``a, b = value``: a tuple display, or ``prepare(a, b)``."""
    if isinstance(value, (ast.Tuple, ast.List)) and index < len(value.elts):
        return value.elts[index]
    if (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and value.func.attr in MODEL_PREPARE_METHODS
        and index < len(value.args)
    ):
        return value.args[index]
    return None


def _unique(classes: list[ModuleClass]) -> list[ModuleClass]:
    seen: list[ModuleClass] = []
    for cls in classes:
        if cls not in seen:
            seen.append(cls)
    return seen


def _blocked(reach, cls: ModuleClass, filename: str) -> str | None:
    """The message for the first break of ``cls`` that ``fullgraph=True`` raises on, if any."""
    from regcomp_lint.checks import ALL_RULES  # the registry imports this module

    rules = [rule for code, rule in ALL_RULES.items() if issubclass(rule, ForwardRule) and "RC201" <= code <= "RC209"]
    found = [
        (rule, node, func, brk)
        for rule, node, func, brk in breaks_in(reach, reach.reached_from(cls), rules)
        if brk.blocks_fullgraph
    ]
    if not found:
        return None
    found.sort(
        key=lambda item: (
            item[2].module.path != reach.module.path,
            item[2].module.path or "",
            getattr(item[3].at or item[1], "lineno", 0),
        )
    )
    rule, node, func, brk = found[0]
    line = getattr(brk.at or node, "lineno", 0)
    if func.module.path == reach.module.path:
        place = f"line {line}"
    else:
        place = f"{_relative(func.module.path, filename)}:{line}"
    chain = dict(reach.reached_from(cls))[func]
    more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
    return (
        f"`fullgraph=True` will raise `torch._dynamo.exc.Unsupported`: `{cls.name}` breaks the graph at {place}: "
        f"{rule.code} {brk.gb_id}, {rule.name}{more} ({chain})"
    )


def _relative(path: str | None, filename: str) -> str:
    if not path:
        return "?"
    try:
        return os.path.relpath(path, os.path.dirname(os.path.abspath(filename)) or ".")
    except ValueError:
        return path
