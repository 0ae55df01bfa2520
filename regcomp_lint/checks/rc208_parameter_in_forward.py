"""RC208 parameter-in-forward."""

from __future__ import annotations

import ast

from regcomp_lint.analysis.reachability import PARAMETER
from regcomp_lint.checks.base import Invalid
from regcomp_lint.checks.forward_rule import Break, ForwardRule, Scope
from regcomp_lint.diagnostics import Severity
from regcomp_lint.knowledge.graph_breaks import RULE_BREAKS

_HEAD = "import torch\nfrom torch import nn\nclass Net(nn.Module):\n"


class ParameterInForward(ForwardRule[ast.Call]):
    """## What it does
    Reports `nn.Parameter(...)` built in code reached from an `nn.Module`'s `forward` (any
    spelling: `torch.nn.Parameter`, `from torch.nn import Parameter`). Wrapping a forward input
    as is (`nn.Parameter(x)` with `x` a parameter of the function) is not reported: dynamo
    traces that.

    ## Why is this bad
    Dynamo does not support creating a parameter from a tensor computed in the graph
    (`GB0264` "Attempted to use `torch.nn.Parameter()` constructor with Dynamo", `GB0229` for
    `nn.Parameter(p.data)`): the graph breaks at every call, and `fullgraph=True` raises. A
    parameter made in `forward` is also new on every call, so an optimizer never sees it: it
    is almost always a bug.

    ## Example
    ```python
    def forward(self, x):
        self.scale = nn.Parameter(torch.ones(x.shape[-1]))
        return x * self.scale
    ```

    ## Use instead
    ```python
    def __init__(self, dim):
        super().__init__()
        self.scale = nn.Parameter(torch.ones(dim))  # created once, registered, optimised

    def forward(self, x):
        return x * self.scale
    ```
    For lazily sized layers use `nn.LazyLinear` / `nn.UninitializedParameter`, materialised by
    one eager call before compiling. If the parameter really must be built in `forward`,
    `torch._dynamo.config.graph_break_on_nn_param_ctor = False` lets dynamo trace the
    constructor (measured: `fullgraph=True` then compiles).

    ## Fix safety
    No fix: where the parameter belongs (and its size) needs the author.

    ## References
    - [GB0264 torch.nn.Parameter() constructor](https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0264.html)
    """

    code = "RC208"
    name = "parameter-in-forward"
    severity = Severity.WARNING
    message = "`nn.Parameter` created in code reached from `forward`: graph break"
    triggers = ("Parameter",)
    graph_break_ids = RULE_BREAKS["RC208"]
    node_types = (ast.Call,)

    valid = [
        _HEAD + "    def __init__(self):\n        super().__init__()\n        self.w = nn.Parameter(torch.ones(4))\n"
        "    def forward(self, x):\n        return x * self.w\n",
        _HEAD + "    def forward(self, x):\n        p = nn.Parameter(x)\n        return p * 2\n",
        "import torch\nfrom torch import nn\nclass Net(nn.Module):\n    def forward(self, x):\n        return x\n"
        "extra = nn.Parameter(torch.zeros(3))\n",
        "from torch import nn\nfrom mylib import Parameter\nclass Net(nn.Module):\n    def forward(self, x):\n"
        "        return Parameter(x * 2)\n",
    ]
    invalid = [
        Invalid(
            _HEAD + "    def forward(self, x):\n        self.scale = nn.Parameter(torch.ones(x.shape[-1]))\n"
            "        return x * self.scale\n",
            message="GB0264",
        ),
        Invalid(
            "import torch\nfrom torch.nn import Module, Parameter\nclass Net(Module):\n    def forward(self, x):\n"
            "        return x + Parameter(x * 2)\n"
        ),
        Invalid(
            _HEAD + "    def forward(self, x):\n        return self.build(x)\n    def build(self, x):\n"
            "        return torch.nn.Parameter(torch.zeros_like(x))\n",
            message="reached via Net.forward → Net.build",
        ),
    ]

    @classmethod
    def candidate(cls, node: ast.Call) -> bool:
        func = node.func
        return getattr(func, "attr", None) == "Parameter" or getattr(func, "id", None) == "Parameter"

    @classmethod
    def judge(cls, node: ast.Call, scope: Scope) -> Break | None:
        if not scope.resolves_to(node.func, *PARAMETER):
            return None
        data = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "data"), None)
        if isinstance(data, ast.Name):
            bindings = scope.reach.facts(scope.func).bindings.get(data.id, ())
            if bindings and all(kind == "param" for kind, _, _ in bindings):
                return None  # a forward input wrapped as is: traced
        return Break(
            "`nn.Parameter(...)` built while tracing: graph break (GB0264), and a fresh parameter on every call; "
            "create it in `__init__` (or set `torch._dynamo.config.graph_break_on_nn_param_ctor = False`)",
            "GB0264",
        )
