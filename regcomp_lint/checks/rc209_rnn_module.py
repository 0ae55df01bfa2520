"""RC209 rnn-module."""

from __future__ import annotations

import ast

from regcomp_lint.analysis.reachability import Submodule
from regcomp_lint.checks.base import Invalid
from regcomp_lint.checks.forward_rule import Break, ForwardRule, Scope
from regcomp_lint.diagnostics import Severity
from regcomp_lint.files.parsing import walk
from regcomp_lint.knowledge.graph_breaks import RULE_BREAKS

RNN_CLASSES = frozenset({"LSTM", "GRU", "RNN"})

_HEAD = "import torch\nfrom torch import nn\n"


def _rnn_net(init: str, body: str) -> str:
    return (
        _HEAD
        + "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        + "".join(f"        {line}\n" for line in init.splitlines())
        + "    def forward(self, x):\n"
        + "".join(f"        {line}\n" for line in body.splitlines())
    )


class RnnModule(ForwardRule[ast.Call]):
    """## What it does
    Reports a call of an `nn.LSTM`, `nn.GRU` or `nn.RNN` submodule (built in `__init__`,
    directly or in a `ModuleList`) in code reached from an `nn.Module`'s `forward`. The cell
    versions (`nn.LSTMCell`, `nn.GRUCell`) are traced and not reported.

    ## Why is this bad
    Dynamo does not trace these modules by default (`GB0014` "Attempted to wrap RNN, GRU, or
    LSTM"): the frame that calls one falls back to eager entirely. Measured with torch 2.13:
    a model calling an `nn.LSTM` in `forward` compiles to **zero** graphs, silently, and
    `fullgraph=True` raises `Unsupported`.

    ## Example
    ```python
    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(256, 256, batch_first=True)

    def forward(self, x):
        out, _ = self.rnn(x)
        return self.head(out)
    ```

    ## Use instead
    Compile the parts around the RNN (`self.head.compile()`), keep the RNN eager (its cuDNN
    kernel is already fused), or opt in to dynamo's experimental support:
    `torch._dynamo.config.allow_rnn = True`. A hand-written loop over `nn.LSTMCell` also traces.

    ## Fix safety
    No fix.

    ## References
    - [GB0014 Attempted to wrap RNN, GRU, or LSTM](https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0014.html)
    """

    code = "RC209"
    name = "rnn-module"
    severity = Severity.WARNING
    message = "an `nn.LSTM`/`GRU`/`RNN` submodule called in code reached from `forward`: the frame is not compiled"
    triggers = ("LSTM", "GRU", "RNN")
    graph_break_ids = RULE_BREAKS["RC209"]
    node_types = (ast.Call,)

    valid = [
        _rnn_net("self.cell = nn.LSTMCell(4, 4)", "h, c = self.cell(x)\nreturn h"),
        _rnn_net("self.rnn = nn.LSTM(4, 4)", "return x * 2"),
        _rnn_net("self.rnn = MyLSTM(4, 4)", "return self.rnn(x)"),
        # called outside forward
        _rnn_net("self.rnn = nn.GRU(4, 4)", "return x") + "    def encode(self, x):\n        return self.rnn(x)\n",
    ]
    invalid = [
        # word_language_model: `getattr(nn, rnn_type)` (LSTM by default) or `nn.RNN`: the message
        # does not claim it is an `nn.RNN` (issue 13)
        Invalid(
            "import torch\nfrom torch import nn\nclass Net(nn.Module):\n    def __init__(self, rnn_type='LSTM'):\n"
            "        super().__init__()\n        if rnn_type in ['LSTM', 'GRU']:\n"
            "            self.rnn = getattr(nn, rnn_type)(4, 4)\n        else:\n            self.rnn = nn.RNN(4, 4)\n"
            "    def forward(self, x):\n        return self.rnn(x)\n",
            message="`self.rnn` may be an `nn.RNN` (one of the 2 ways",
        ),
        Invalid(
            _rnn_net("self.rnn = nn.LSTM(4, 4, batch_first=True)", "out, _ = self.rnn(x)\nreturn out"), message="GB0014"
        ),
        Invalid(
            _rnn_net(
                "self.layers = nn.ModuleList([nn.GRU(4, 4) for _ in range(2)])",
                "for layer in self.layers:\n    x, _ = layer(x)\nreturn x",
            )
        ),
        Invalid(
            "import torch.nn as nn\nfrom torch.nn import RNN\nclass Net(nn.Module):\n    def __init__(self):\n"
            "        super().__init__()\n        self.encoder = RNN(4, 4)\n    def forward(self, x):\n"
            "        return self.encoder(x)[0]\n",
            message="allow_rnn",
        ),
    ]

    @classmethod
    def candidate(cls, node: ast.Call) -> bool:
        return type(node.func) in (ast.Attribute, ast.Name, ast.Subscript)

    @classmethod
    def judge(cls, node: ast.Call, scope: Scope) -> Break | None:
        for sub in _called_submodules(node.func, scope, 0):
            for qualname in sub.external:
                last = qualname.rsplit(".", 1)[-1]
                if qualname.startswith("torch.nn.") and last in RNN_CLASSES:
                    ways = _assignments(scope.func.cls.node if scope.func.cls else None, sub.attr)
                    what = (
                        f"`self.{sub.attr}` may be an `nn.{last}` (one of the {ways} ways the class builds it; "
                        "every `nn.LSTM`/`GRU`/`RNN` behaves the same)"
                        if ways > 1
                        else f"`nn.{last}`"
                    )
                    return Break(
                        f"{what} is not traced by dynamo: the calling frame falls back to eager (GB0014), and "
                        "`fullgraph=True` raises; keep it out of the compiled region or set "
                        "`torch._dynamo.config.allow_rnn = True`",
                        "GB0014",
                    )
        return None


def _assignments(cls: ast.ClassDef | None, attr: str) -> int:
    """How many ``self.<attr> = ...`` statements the class has (one per way it is built)."""
    if cls is None:
        return 0
    return sum(
        1
        for node in walk(cls)
        if isinstance(node, ast.Assign)
        and any(
            isinstance(t, ast.Attribute) and t.attr == attr and isinstance(t.value, ast.Name) and t.value.id == "self"
            for t in node.targets
        )
    )


def _called_submodules(expr: ast.AST, scope: Scope, depth: int) -> list[Submodule]:
    """Submodules of ``self`` an expression holds: ``self.rnn``, ``self.layers[i]``, a loop variable."""
    cls = scope.func.cls
    if cls is None or depth > 3:
        return []
    if isinstance(expr, ast.Subscript):
        return _called_submodules(expr.value, scope, depth + 1)
    if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) and expr.value.id == "self":
        sub = cls.submodule(expr.attr)
        return [sub] if sub is not None and cls.method(expr.attr) is None else []
    if isinstance(expr, ast.Name):
        found: list[Submodule] = []
        for kind, value, index in scope.reach.facts(scope.func).bindings.get(expr.id, ()):
            bound: ast.AST | None = value
            if (
                kind == "iter"
                and isinstance(value, ast.Call)
                and isinstance(value.func, ast.Name)
                and value.func.id == "enumerate"
            ):
                bound, index = (value.args[0], None) if index == 1 and value.args else (None, index)
            if kind in ("iter", "value") and index is None and bound is not None:
                found.extend(_called_submodules(bound, scope, depth + 1))
        return found
    return []
