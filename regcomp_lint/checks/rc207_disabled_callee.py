"""RC207 disabled-callee."""

from __future__ import annotations

import ast

from regcomp_lint.analysis.reachability import DISABLE
from regcomp_lint.checks.base import Invalid
from regcomp_lint.checks.forward_rule import Break, ForwardRule, Scope
from regcomp_lint.diagnostics import Severity
from regcomp_lint.knowledge.graph_breaks import RULE_BREAKS

GRAPH_BREAK = ("torch._dynamo.graph_break",)

_HEAD = "import torch\nfrom torch import nn\n"


class DisabledCallee(ForwardRule[ast.Call]):
    """## What it does
    Reports, in code reached from an `nn.Module`'s `forward`, calls of functions, methods or
    submodules whose code is decorated with `@torch.compiler.disable` / `@torch._dynamo.disable`
    (or wrapped: `fast = torch.compiler.disable(slow)`), and explicit
    `torch._dynamo.graph_break()` calls. Findings inside a disabled function are not reported
    by the other RC2xx rules: dynamo does not trace it.

    ## Why is this bad
    A disabled callee is run eagerly: the graph ends before the call and a new one starts after
    it (`GB0098` "Skip calling `torch.compiler.disable()`d function"). That may be the intent,
    but inside every block of a deep model it splits each block in two, and `fullgraph=True`
    raises `Unsupported`. `torch._dynamo.graph_break()` (`GB0025`) is the explicit form, often
    left over from debugging.

    ## Example
    ```python
    @torch.compiler.disable
    def route(x, experts):
        ...

    class MoE(nn.Module):
        def forward(self, x):
            return route(x, self.experts)
    ```

    ## Use instead
    Make the callee traceable (see the other RC2xx findings it would have), or keep the
    disabled call at the edge of the model, outside the repeated blocks, so the blocks still
    compile whole. Remove leftover `torch._dynamo.graph_break()` calls.

    ## Fix safety
    No fix: the function may be disabled on purpose.

    ## References
    - [GB0098 Skip calling a disabled function](https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0098.html)
    - [GB0025 torch._dynamo.graph_break()](https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0025.html)
    - [`torch.compiler.disable`](https://docs.pytorch.org/docs/stable/generated/torch.compiler.disable.html)
    """

    code = "RC207"
    name = "disabled-callee"
    severity = Severity.WARNING
    message = "a call of a `torch.compiler.disable`d function in code reached from `forward`: graph break"
    triggers = ("disable", "graph_break")
    graph_break_ids = RULE_BREAKS["RC207"]
    node_types = (ast.Call,)

    valid = [
        # the disabled function is called from the training loop only
        _HEAD + "@torch.compiler.disable\ndef log_stats(x):\n    return x\nclass Net(nn.Module):\n"
        "    def forward(self, x):\n        return x * 2\nlog_stats(Net()(torch.ones(2)))\n",
        # disable() with a name that is not torch's
        "from torch import nn\nfrom mylib import disable\n@disable\ndef f(x):\n    return x\n"
        "class Net(nn.Module):\n    def forward(self, x):\n        return f(x)\n",
        # a local graph_break function
        "from torch import nn\ndef graph_break():\n    pass\nclass Net(nn.Module):\n    def forward(self, x):\n"
        "        graph_break()\n        return x\n",
        # the whole forward is disabled: nothing is traced in it
        _HEAD + "class Net(nn.Module):\n    @torch.compiler.disable\n    def forward(self, x):\n"
        "        torch._dynamo.graph_break()\n        return x\n",
    ]
    invalid = [
        Invalid(
            _HEAD + "@torch.compiler.disable\ndef route(x):\n    return x\nclass Net(nn.Module):\n"
            "    def forward(self, x):\n        return route(x)\n",
            message="GB0098",
        ),
        Invalid(
            _HEAD + "import torch._dynamo\nclass Net(nn.Module):\n    def forward(self, x):\n        y = x * 2\n"
            "        torch._dynamo.graph_break()\n        return y\n",
            message="GB0025",
        ),
        Invalid(
            _HEAD + "class Net(nn.Module):\n    def forward(self, x):\n        return self.slow(x)\n"
            "    @torch._dynamo.disable(recursive=False)\n    def slow(self, x):\n        return x\n"
        ),
        Invalid(
            _HEAD + "def slow(x):\n    return x\nfast = torch.compiler.disable(slow)\nclass Net(nn.Module):\n"
            "    def forward(self, x):\n        return fast(x)\n"
        ),
        Invalid(
            _HEAD
            + "class Router(nn.Module):\n    @torch.compiler.disable\n    def forward(self, x):\n        return x\n"
            "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.router = Router()\n"
            "    def forward(self, x):\n        return self.router(x)\n",
            message="`self.router`",
        ),
    ]

    def finish(self) -> None:
        if not any(word in self.ctx.source.text for word in self._NATIVE):
            # Active only because the file imports something (``ForwardRule`` adds the
            # ``import`` trigger): only a call of an imported name can run a disabled function.
            imports = self.ctx.imports
            self._keep = lambda node: _imported_root(node.func, imports)
        super().finish()

    _NATIVE = ("disable", "graph_break")

    @classmethod
    def judge(cls, node: ast.Call, scope: Scope) -> Break | None:
        func = node.func
        if scope.resolves_to(func, *GRAPH_BREAK):
            return Break(
                "`torch._dynamo.graph_break()` splits the graph here (GB0025), and `fullgraph=True` raises; "
                "remove it unless the split is wanted",
                "GB0025",
            )
        wrapped = scope.module_value(func)
        if isinstance(wrapped, ast.Call) and scope.resolves_to(wrapped.func, *DISABLE):
            return _disabled(func)
        if any(target.disabled for target in scope.call_targets(func)):
            return _disabled(func)
        return None


def _disabled(func: ast.AST) -> Break:
    return Break(
        f"`{ast.unparse(func)}` runs a `torch.compiler.disable`d function: the graph breaks around the call "
        "(GB0098), and `fullgraph=True` raises",
        "GB0098",
    )


def _imported_root(func: ast.AST, imports) -> bool:
    while type(func) is ast.Attribute:
        func = func.value
    return type(func) is ast.Name and imports.imported(func.id)
