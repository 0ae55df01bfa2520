"""RC201 tensor-to-python."""

from __future__ import annotations

import ast

from regcomp_lint.checks.base import Invalid
from regcomp_lint.checks.forward_rule import Break, ForwardRule, Scope
from regcomp_lint.diagnostics import Severity
from regcomp_lint.knowledge.graph_breaks import RULE_BREAKS

CONVERSIONS = ("int", "float", "bool", "complex")
DATA_DEPENDENT = ("torch.equal", "torch.allclose")
CANDIDATE_METHODS = frozenset({"item", "tolist", "equal", "allclose"})

_GPT = (
    "import torch\nfrom torch import nn\n"
    "class Net(nn.Module):\n"
    "    def __init__(self):\n        super().__init__()\n        self.fc = nn.Linear(4, 4)\n"
    "    def forward(self, x, mask=None, scale: float = 1.0):\n"
)


def _net(body: str) -> str:
    return _GPT + "".join(f"        {line}\n" for line in body.splitlines())


class TensorToPython(ForwardRule[ast.Call]):
    """## What it does
    Reports code reached from an `nn.Module`'s `forward` that turns a tensor into a Python value:
    `t.item()`, `int(t)`, `float(t)`, `bool(t)`, `t.tolist()`, a conversion of `t.numpy()`
    (`float(t.numpy().sum())`), and `torch.equal` / `torch.allclose` (a Python `bool` read from
    the data). Only values known to be tensors count: shapes (`int(x.shape[0])`, `x.size(-1)`,
    `x.numel()`), config values and plain numbers are never reported.

    ## Why is this bad
    The value lives on the device and is only known when the kernels run, so dynamo stops the
    graph there, runs the code eagerly, and starts a new graph after it (graph ids
    `GB0124`, `GB0109`, `GB0033`). Each break costs a device sync and splits the graph the
    compiler can optimise. With `fullgraph=True`, `torch.compile` turns on
    `capture_scalar_outputs`, so `.item()`/`int(t)` are captured as unbacked symbols, but a float
    `.tolist()` and `torch.equal`/`allclose` still raise `Unsupported`, and branching on the
    captured number fails with a data-dependent guard error.

    ## Example
    ```python
    def forward(self, x):
        scale = x.abs().max().item()
        return x / scale
    ```

    ## Use instead
    ```python
    def forward(self, x):
        scale = x.abs().amax()  # stay a tensor
        return x / scale
    ```
    Or let dynamo capture the scalar: `torch._dynamo.config.capture_scalar_outputs = True`
    (the graph then carries an unbacked symbol; later Python branches on it still break).

    ## Fix safety
    No fix: keeping a value a tensor changes types downstream.

    ## References
    - [GB0124 Tensor.item()](https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0124.html)
    - [GB0109 Tensor.tolist()](https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0109.html)
    - [GB0033 Data dependent operator](https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0033.html)
    - [`capture_scalar_outputs`](https://docs.pytorch.org/docs/stable/torch.compiler_troubleshooting.html)
    """

    code = "RC201"
    name = "tensor-to-python"
    severity = Severity.WARNING
    message = "a tensor is turned into a Python value in code reached from `forward`: graph break"
    triggers = (".item(", "int(", "float(", "bool(", "complex(", ".tolist(", ".numpy(", "equal", "allclose")
    graph_break_ids = RULE_BREAKS["RC201"]
    node_types = (ast.Call,)

    valid = [
        # shape logic is plain Python
        _net("n = int(x.shape[0])\nd = float(x.size(-1))\nk = int(x.numel())\nreturn x * n * d * k"),
        _net("b = bool(x.dim() == 2)\nreturn x if b else x * 2"),
        # config values, literals, annotated non-tensors
        _net("s = float(scale)\nh = int(self.fc.in_features)\nreturn x * s * h"),
        # .item() outside forward (training loop, __init__) is not traced
        "import torch\nfrom torch import nn\nclass Net(nn.Module):\n    def forward(self, x):\n        return x\n"
        "model = Net()\nloss = model(torch.ones(2)).sum()\nprint(loss.item())\n",
        # a method never reached from forward
        _net("return self.fc(x)") + "    def report(self, x):\n        return x.sum().item()\n",
        # not a module
        "import torch\nclass Meter:\n    def forward(self, x):\n        return x.sum().item()\n",
        # the numpy array itself is fine (numpy on tensors is traced)
        _net("a = x.numpy() * 2\nreturn torch.from_numpy(a)"),
        # skipped while compiling
        _net("if not torch.compiler.is_compiling():\n    self.last = x.sum().item()\nreturn x"),
        # a local name rebound to a non-tensor
        _net("n = x.sum()\nn = 3\nreturn x * int(n)"),
        # dict.items() and friends
        _net("d = {}\nfor k, v in d.items():\n    pass\nreturn x"),
        # a disabled helper is skipped (RC207 reports the call)
        "import torch\nfrom torch import nn\n@torch.compiler.disable\ndef stat(x):\n    return x.sum().item()\n"
        "class Net(nn.Module):\n    def forward(self, x):\n        stat(x)\n        return x\n",
    ]
    invalid = [
        Invalid(_net("scale = x.abs().max().item()\nreturn x / scale"), message="`.item()`"),
        Invalid(_net("return x * int(x.sum())"), message="`int(...)`"),
        Invalid(_net("return x * float(self.fc(x).mean())")),
        Invalid(_net("return x if bool((x > 0).all()) else -x")),
        Invalid(_net("return x.tolist()"), message="GB0109"),
        Invalid(_net("return x * float(x.numpy().sum())"), message="numpy"),
        Invalid(_net("same = torch.equal(x, self.fc.weight)\nreturn x"), message="GB0033"),
        Invalid(_net("return x if x.allclose(x * 2) else -x")),
        # annotated Optional tensor, reached through a helper and a submodule
        Invalid(
            "import torch\nfrom torch import nn\nfrom typing import Optional\n"
            "def peak(t):\n    return t.max().item()\n"
            "class Block(nn.Module):\n    def forward(self, h, mask: Optional[torch.Tensor] = None):\n"
            "        return h * peak(h) * mask.sum().item()\n"
            "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            "        self.blocks = nn.ModuleList([Block() for _ in range(2)])\n"
            "    def forward(self, x):\n        for b in self.blocks:\n            x = b(x)\n        return x\n",
            count=2,
            message="reached via Net.forward → Block.forward → peak",
        ),
        # a parameter stored on self
        Invalid(
            "import torch\nfrom torch import nn\nclass Net(nn.Module):\n    def __init__(self):\n"
            "        super().__init__()\n        self.temp = nn.Parameter(torch.ones(1))\n"
            "    def forward(self, x):\n        return x / self.temp.item()\n",
        ),
    ]

    @classmethod
    def candidate(cls, node: ast.Call) -> bool:
        func = node.func
        if type(func) is ast.Attribute:
            return func.attr in CANDIDATE_METHODS
        return type(func) is ast.Name and func.id in CONVERSIONS and len(node.args) == 1 and not node.keywords

    @classmethod
    def judge(cls, node: ast.Call, scope: Scope) -> Break | None:
        func = node.func
        oracle = scope.tensors
        if isinstance(func, ast.Name):
            if not scope.builtin(func, *CONVERSIONS):
                return None
            arg = node.args[0]
            if oracle.is_tensor(arg):
                return Break(
                    f"`{func.id}(...)` of a tensor reads its value: graph break (GB0124); keep it a tensor or set "
                    "`torch._dynamo.config.capture_scalar_outputs = True`",
                    "GB0124",
                )
            if _numpy_of_tensor(arg, oracle):
                return Break(
                    f"`{func.id}(...)` of a tensor's `.numpy()` reads its data: graph break (GB0033); stay in torch",
                    "GB0033",
                )
            return None
        if not isinstance(func, ast.Attribute):  # (candidate() lets only names and attributes through)
            return None
        if func.attr in ("equal", "allclose"):
            if scope.resolves_to(func, *DATA_DEPENDENT) and any(oracle.is_tensor(a) for a in node.args):
                return Break(
                    f"`torch.{func.attr}` returns a Python bool read from tensor data: graph break (GB0033), also under "
                    "`fullgraph=True`; compare with tensor ops (`(a == b).all()`) and keep the result a tensor",
                    "GB0033",
                )
            if not scope.imports.root_is_import(func.value) and oracle.is_tensor(func.value):
                return Break(
                    f"`.{func.attr}()` returns a Python bool read from tensor data: graph break (GB0033), also under "
                    "`fullgraph=True`; keep the comparison a tensor",
                    "GB0033",
                )
            return None
        if node.args or node.keywords:
            return None
        receiver = func.value
        if func.attr == "item":
            if oracle.is_tensor(receiver):
                return Break(
                    "`.item()` copies a tensor's value to Python: graph break (GB0124); keep it a tensor or set "
                    "`torch._dynamo.config.capture_scalar_outputs = True`",
                    "GB0124",
                )
            if _numpy_of_tensor(receiver, oracle):
                return Break(
                    "`.item()` of a tensor's `.numpy()` reads its data: graph break (GB0033); stay in torch", "GB0033"
                )
            return None
        if oracle.is_tensor(receiver):
            return Break(
                "`.tolist()` copies a tensor to Python lists: graph break (GB0109 for floating-point tensors, GB0033 "
                "for integer ones); keep it a tensor",
                "GB0109",
            )
        return None


def _numpy_of_tensor(expr: ast.AST, oracle) -> bool:
    """``t.numpy()``, possibly followed by numpy calls, subscripts or attributes."""
    while isinstance(expr, (ast.Call, ast.Attribute, ast.Subscript)):
        if isinstance(expr, ast.Call):
            func = expr.func
            if (
                isinstance(func, ast.Attribute)
                and func.attr == "numpy"
                and not expr.args
                and oracle.is_tensor(func.value)
            ):
                return True
            expr = func
        else:
            expr = expr.value
    return False
