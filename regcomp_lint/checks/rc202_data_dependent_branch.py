"""RC202 data-dependent-branch."""

from __future__ import annotations

import ast

from regcomp_lint.analysis.reachability import traced_operands
from regcomp_lint.checks.base import Invalid
from regcomp_lint.checks.forward_rule import Break, ForwardRule, Scope
from regcomp_lint.diagnostics import Severity
from regcomp_lint.knowledge.graph_breaks import RULE_BREAKS

_HEAD = "import torch\nfrom torch import nn\nclass Net(nn.Module):\n"
_INIT = (
    "    def __init__(self, config):\n        super().__init__()\n        self.config = config\n"
    "        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])\n"
)


def _net(body: str, signature: str = "self, x, mask=None, use_cache: bool = False") -> str:
    return (
        _HEAD + _INIT + f"    def forward({signature}):\n" + "".join(f"        {line}\n" for line in body.splitlines())
    )


#: Parents whose test is a condition: an ``and``/``or`` directly in one is reported there.
_TEST_PARENTS = (ast.If, ast.While, ast.IfExp, ast.Assert, ast.comprehension)


#: What branches: the rule's ``node_types``.
Branching = ast.If | ast.While | ast.IfExp | ast.comprehension | ast.BoolOp


class DataDependentBranch(ForwardRule[Branching]):
    """## What it does
    Reports a condition on a tensor's value in code reached from an `nn.Module`'s `forward`:
    the test of an `if`, `while`, conditional expression or comprehension filter, and the
    operands of `and`/`or`, when Python has to call `bool()` on a tensor
    (`if y.abs().max() > 1e3:`, `while (x > 0).any():`, `mask.any() and x`).

    Never reported: shape logic (`x.shape[0] > 1`, `x.size(-1) == d`, `x.dim()`, `x.ndim`,
    `x.numel()`, `len(x)`), `x.dtype` / `x.device`, `isinstance`, `is None` / `is not None`,
    `self.training`, config attributes, loop counters, flags such as `use_cache`, and `assert`
    on a tensor (dynamo traces it since torch 2.1).

    ## Why is this bad
    The branch taken depends on numbers that only exist when the kernels run, so dynamo cannot
    put both paths in one graph: it breaks the graph (`GB0170` "Data-dependent branching"),
    runs the condition eagerly, and resumes in a new frame. Under `fullgraph=True` it raises
    `torch._dynamo.exc.Unsupported`. There is no config flag for this one.

    ## Example
    ```python
    def forward(self, x):
        if x.abs().max() > 1e3:
            x = x / x.abs().max()
        return self.proj(x)
    ```

    ## Use instead
    ```python
    def forward(self, x):
        peak = x.abs().amax()
        x = torch.where(peak > 1e3, x / peak, x)  # both sides computed, no Python branch
        return self.proj(x)
    ```
    For branches with different work, `torch.cond(pred, true_fn, false_fn, operands)` traces
    both functions into one graph.

    ## Fix safety
    No fix: `torch.where` evaluates both sides, which changes cost and may change errors.

    ## References
    - [GB0170 Data-dependent branching](https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0170.html)
    - [`torch.cond`](https://docs.pytorch.org/docs/stable/cond.html)
    """

    code = "RC202"
    name = "data-dependent-branch"
    severity = Severity.WARNING
    message = "a branch depends on a tensor's value in code reached from `forward`: graph break"
    triggers = ("if ", "while ", " and ", " or ")
    graph_break_ids = RULE_BREAKS["RC202"][:1]
    node_types = (ast.If, ast.While, ast.IfExp, ast.comprehension, ast.BoolOp)

    valid = [
        _net("if x.shape[0] > 1 and x.size(-1) == 4:\n    x = x * 2\nreturn x"),
        _net("if x.dim() == 3 or x.ndim == 2 or x.numel() > 0 or len(x) > 1:\n    x = x * 2\nreturn x"),
        _net("if x.dtype == torch.float16 and x.device.type == 'cuda':\n    x = x.float()\nreturn x"),
        _net("if mask is not None and isinstance(x, torch.Tensor):\n    x = x * mask\nreturn x"),
        _net("if self.training and self.config.dropout > 0:\n    x = x * 2\nreturn x"),
        _net(
            "if use_cache:\n    x = x * 2\nfor i, layer in enumerate(self.layers):\n    if i % 2 == 0:\n        x = layer(x)\nreturn x"
        ),
        _net("x = x if mask is None else x * mask\nn = len(self.layers)\nwhile n > 0:\n    n -= 1\nreturn x"),
        # assert on a tensor is traced
        _net("assert (x > -1e9).all()\nreturn x"),
        # not reached from forward
        _HEAD
        + "    def forward(self, x):\n        return x\n    def check(self, x):\n        if x.sum() > 0:\n            return 1\n",
        # a training loop is not forward
        "import torch\nloss = torch.ones(1)\nif loss.item() > 0:\n    pass\nwhile loss > 0:\n    loss = loss - 1\n",
        # skipped while compiling
        _net(
            "if not torch.compiler.is_compiling():\n    if x.isnan().any():\n        raise ValueError('nan')\nreturn x"
        ),
        # `and` stops at the guard while compiling: the tensor test is never evaluated
        _net("if not torch.compiler.is_compiling() and x.isnan().any():\n    raise ValueError('nan')\nreturn x"),
        # parameters with defaults are flags, not tensors
        _net("if flag and mode == 'fast':\n    x = x * 2\nreturn x", "self, x, flag=True, mode='fast'"),
        # a submodule's int argument from a loop counter
        "import torch\nfrom torch import nn\nclass Block(nn.Module):\n    def forward(self, x, idx):\n"
        "        if idx > 0:\n            x = x * 2\n        return x\nclass Net(nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        self.blocks = nn.ModuleList([Block() for _ in range(4)])\n"
        "    def forward(self, x):\n        for i, b in enumerate(self.blocks):\n            x = b(x, i)\n        return x\n",
    ]
    invalid = [
        Invalid(_net("if x.abs().max() > 1e3:\n    x = x / 2\nreturn x"), message="GB0170"),
        Invalid(_net("while (x > 0).any():\n    x = x - 1\nreturn x")),
        Invalid(_net("return x * 2 if x.sum() else x")),
        Invalid(_net("if not torch.isnan(x).any():\n    x = x * 2\nreturn x")),
        Invalid(_net("y = (x.sum() > 0) and x\nreturn y")),
        Invalid(
            _net(
                "if mask is not None and mask.any():\n    x = x * mask\nreturn x", "self, x, mask: torch.Tensor = None"
            )
        ),
        Invalid(_net("h = self.layers[0](x)\nif h.mean() < 0:\n    h = -h\nreturn h")),
        Invalid(_net("return [r for r in x if r.sum() > 0]")),
        Invalid(_net("if x.sum() > 0:\n    x = x * 2\nelif x.sum() < -1:\n    x = -x\nreturn x"), count=2),
    ]

    @classmethod
    def candidate(cls, node: Branching) -> bool:
        if isinstance(node, ast.comprehension):
            return bool(node.ifs)
        return True

    @classmethod
    def judge(cls, node: Branching, scope: Scope) -> Break | None:
        oracle = scope.tensors
        hit: ast.expr | None
        if isinstance(node, ast.comprehension):
            hit = next((test for test in node.ifs if oracle.reads_tensor_value(test)), None)
            what = "a comprehension filter"
        elif isinstance(node, ast.BoolOp):
            hit = node if any(oracle.reads_tensor_value(v) for v in traced_operands(node)[:-1]) else None
            what = f"`{'and' if isinstance(node.op, ast.And) else 'or'}`"
        else:
            hit = node.test if oracle.reads_tensor_value(node.test) else None
            what = {ast.If: "`if`", ast.While: "`while`", ast.IfExp: "a conditional expression"}[type(node)]
        if hit is None:
            return None
        return Break(
            f"{what} branches on a tensor's value: data-dependent graph break (GB0170), also under `fullgraph=True`; "
            "use `torch.where` or `torch.cond`",
            "GB0170",
            at=hit,
        )

    @classmethod
    def accepts(cls, node: Branching, ancestors: list[ast.AST]) -> bool:
        if type(node) is ast.BoolOp and ancestors:
            parent = ancestors[-1]
            if isinstance(parent, _TEST_PARENTS + (ast.BoolOp, ast.UnaryOp)):
                return False  # judged as part of the enclosing condition
        return True
