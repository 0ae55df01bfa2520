"""RC204 dynamic-output-shape."""

from __future__ import annotations

import ast

from regcomp_lint.checks.base import Invalid
from regcomp_lint.checks.forward_rule import Break, ForwardRule, Scope
from regcomp_lint.diagnostics import Severity
from regcomp_lint.knowledge.graph_breaks import RULE_BREAKS

#: Ops whose output size depends on the data (function and method spellings).
DYNAMIC_OPS = frozenset({"nonzero", "argwhere", "unique", "unique_consecutive", "masked_select"})
#: Ops that make a boolean tensor from tensors.
BOOL_OPS = frozenset(
    {
        "isnan",
        "isinf",
        "isfinite",
        "isneginf",
        "isposinf",
        "isreal",
        "logical_and",
        "logical_or",
        "logical_not",
        "logical_xor",
        "eq",
        "ne",
        "gt",
        "lt",
        "ge",
        "le",
        "greater",
        "less",
        "greater_equal",
        "less_equal",
        "not_equal",
        "bool",
        "isin",
        "signbit",
    }
)
COMPARE_OPS = (ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE)

_HEAD = "import torch\nfrom torch import nn\nclass Net(nn.Module):\n    def forward(self, x, lengths):\n"


def _net(body: str) -> str:
    return _HEAD + "".join(f"        {line}\n" for line in body.splitlines())


class DynamicOutputShape(ForwardRule[ast.Call | ast.Subscript]):
    """## What it does
    Reports operations whose output size depends on tensor data, in code reached from an
    `nn.Module`'s `forward`: `torch.nonzero` / `x.nonzero()`, `argwhere`, `unique`,
    `unique_consecutive`, `masked_select`, one-argument `torch.where(cond)`,
    `repeat_interleave` with tensor repeats, and boolean-mask indexing `x[mask]` (read, not
    assignment: `x[mask] = 0` keeps the shape and is fine).

    ## Why is this bad
    The compiler has to know output shapes while tracing. These ops' shapes are only known
    after the kernel runs, so a default `torch.compile` breaks the graph (`GB0036` "Dynamic
    shape operator") and runs the op eagerly. `fullgraph=True` turns on
    `capture_dynamic_output_shape_ops` and captures them with unbacked sizes, but later shape
    checks on those sizes may still fail to trace.

    ## Example
    ```python
    def forward(self, x):
        keep = x[x > 0]
        return keep.sum()
    ```

    ## Use instead
    ```python
    def forward(self, x):
        return torch.where(x > 0, x, 0).sum()  # same result, static shape
    ```
    Or set `torch._dynamo.config.capture_dynamic_output_shape_ops = True` to trace the op with an
    unbacked size.

    ## Fix safety
    No fix: the static-shape rewrite depends on what the result is used for.

    ## References
    - [GB0036 Dynamic shape operator](https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0036.html)
    - [Dealing with data-dependent shapes](https://docs.pytorch.org/docs/stable/torch.compiler_dynamic_shapes.html)
    """

    code = "RC204"
    name = "dynamic-output-shape"
    severity = Severity.WARNING
    message = "an op with a data-dependent output shape in code reached from `forward`: graph break"
    triggers = ("nonzero", "argwhere", "unique", "masked_select", "where(", "repeat_interleave", "[")
    graph_break_ids = RULE_BREAKS["RC204"]
    node_types = (ast.Call, ast.Subscript)

    valid = [
        _net("return torch.where(x > 0, x, 0)"),
        _net("y = x.clone()\ny[y > 0] = 0\nreturn y"),
        _net("return torch.repeat_interleave(x, 2, dim=0) + x.repeat_interleave(3)"),
        _net("i = x.shape[0] > 1\nreturn x[0] + x[:, 1] + x[..., None] + x[lengths]"),
        # a list or dict indexed by a bool is not a mask
        _net("flags = [1, 2]\nreturn x * flags[x.shape[0] > 1]"),
        # outside forward
        "import torch\nx = torch.ones(3)\nidx = torch.nonzero(x)\nprint(x[x > 0])\n",
        # numpy's unique on a non-tensor
        "import numpy as np\nfrom torch import nn\nclass Net(nn.Module):\n    def forward(self, x):\n"
        "        labels = np.unique([1, 2, 2])\n        return x * len(labels)\n",
    ]
    invalid = [
        Invalid(_net("return torch.nonzero(x > 0)"), message="GB0036"),
        Invalid(_net("return (x > 0).nonzero()")),
        Invalid(_net("return x[x > 0].sum()"), message="boolean mask"),
        Invalid(_net("mask = torch.isnan(x)\nreturn x[~mask]")),
        Invalid(_net("return torch.unique(x) + x.unique_consecutive()"), count=2),
        Invalid(_net("return torch.masked_select(x, x > 0)")),
        Invalid(_net("rows, cols = torch.where(x > 0)\nreturn rows")),
        Invalid(_net("return torch.repeat_interleave(x, lengths)")),
        Invalid(_net("return x.repeat_interleave(lengths.long(), dim=0)")),
        Invalid(_net("return torch.argwhere(x)"), message="capture_dynamic_output_shape_ops"),
    ]

    @classmethod
    def candidate(cls, node: ast.Call | ast.Subscript) -> bool:
        if isinstance(node, ast.Subscript):
            return type(node.ctx) is ast.Load and type(node.slice) in (
                ast.Compare,
                ast.UnaryOp,
                ast.Name,
                ast.Call,
                ast.BinOp,
            )
        func = node.func
        if type(func) is not ast.Attribute:
            return False
        return (
            func.attr in DYNAMIC_OPS
            or func.attr == "repeat_interleave"
            or (func.attr == "where" and len(node.args) == 1)
        )

    @classmethod
    def judge(cls, node: ast.Call | ast.Subscript, scope: Scope) -> Break | None:
        oracle = scope.tensors
        if isinstance(node, ast.Subscript):
            if oracle.is_tensor(node.value) and _is_bool_tensor(node.slice, scope):
                return _break("boolean mask indexing `x[mask]`")
            return None
        func = node.func
        if not isinstance(func, ast.Attribute):  # (candidate() lets only method-style calls through)
            return None
        op = func.attr
        is_torch = scope.resolves_to(func, f"torch.{op}")
        method = not is_torch and not scope.imports.root_is_import(func.value) and oracle.is_tensor(func.value)
        if op == "where":
            if is_torch and node.args and not node.keywords and oracle.is_tensor(node.args[0]):
                return _break("one-argument `torch.where(cond)`")
            return None
        if op == "repeat_interleave":
            repeats = _repeats(node, is_torch)
            if (is_torch or method) and repeats is not None and oracle.is_tensor(repeats):
                return _break("`repeat_interleave` with tensor repeats")
            return None
        if is_torch and node.args and oracle.is_tensor(node.args[0]):
            return _break(f"`torch.{op}`")
        if method:
            return _break(f"`.{op}()`")
        return None


def _break(what: str) -> Break:
    return Break(
        f"{what} has a data-dependent output shape: graph break (GB0036); keep shapes static (`torch.where`, "
        "masks) or set `torch._dynamo.config.capture_dynamic_output_shape_ops = True`",
        "GB0036",
    )


def _repeats(call: ast.Call, is_torch: bool) -> ast.AST | None:
    for kw in call.keywords:
        if kw.arg == "repeats":
            return kw.value
    if is_torch:
        if len(call.args) == 1 and not call.keywords:
            return call.args[0]  # torch.repeat_interleave(repeats)
        return call.args[1] if len(call.args) > 1 else None
    return call.args[0] if call.args else None


def _is_bool_tensor(expr: ast.AST, scope: Scope, depth: int = 0) -> bool:
    """A boolean tensor: a comparison of tensors, ``~mask``, ``a & b``, ``isnan(x)``, ``.bool()``..."""
    if depth > 8:
        return False
    oracle = scope.tensors
    if isinstance(expr, ast.Compare):
        return all(isinstance(op, COMPARE_OPS) for op in expr.ops) and oracle.is_tensor(expr)
    if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.Invert):
        return _is_bool_tensor(expr.operand, scope, depth + 1)
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, (ast.BitAnd, ast.BitOr, ast.BitXor)):
        return _is_bool_tensor(expr.left, scope, depth + 1) and _is_bool_tensor(expr.right, scope, depth + 1)
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr in BOOL_OPS:
        func = expr.func
        if scope.resolves_to(func, f"torch.{func.attr}"):
            return bool(expr.args) and oracle.is_tensor(expr.args[0])
        return not scope.imports.root_is_import(func.value) and oracle.is_tensor(func.value)
    if isinstance(expr, ast.Name):
        bindings = scope.reach.facts(scope.func).bindings.get(expr.id, ())
        return bool(bindings) and all(
            kind == "value" and index is None and _is_bool_tensor(value, scope, depth + 1)
            for kind, value, index in bindings
        )
    return False
