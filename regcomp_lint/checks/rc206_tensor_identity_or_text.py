"""RC206 tensor-identity-or-text."""

from __future__ import annotations

import ast

from regcomp_lint.checks.base import Invalid
from regcomp_lint.checks.forward_rule import Break, ForwardRule, Scope
from regcomp_lint.knowledge.graph_breaks import RULE_BREAKS

DEEPCOPY = ("copy.deepcopy",)

_HEAD = "import copy\nimport torch\nfrom torch import nn\nclass Net(nn.Module):\n    def forward(self, x):\n"


def _net(body: str) -> str:
    return _HEAD + "".join(f"        {line}\n" for line in body.splitlines())


class TensorIdentityOrText(ForwardRule):
    """## What it does
    Reports code reached from an `nn.Module`'s `forward` that needs a tensor's identity or its
    printed text: `copy.deepcopy(t)`, `str(t)`, `repr(t)`, an f-string or `str.format` of a
    tensor (`f"{t}"`) and `t.data_ptr()`. Text of a shape, dtype or device (`f"{x.shape}"`) is
    fine, and so is a message built only to be raised (`raise ValueError(f"{x}")`, an `assert`
    message). `"%s" % t` breaks too (`GB0208`) but is not looked for.

    ## Why is this bad
    A traced tensor is a fake: it has no data to print, no storage address and cannot be
    deep-copied. `copy.deepcopy` breaks the graph (`GB4198`), `str`/`repr` break it
    (`GB0059`, `GB0569`). An f-string, `.format()` or `data_ptr()` raise inside dynamo
    (`GB0088` "Observed exception"): dynamo then gives up on the **whole frame** and runs it
    eagerly without saying so, so a debug f-string in a block silently un-compiles the block.

    ## Example
    ```python
    def forward(self, x):
        self.cache = copy.deepcopy(x)
        tag = f"x={x}"
        return self.proj(x)
    ```

    ## Use instead
    ```python
    def forward(self, x):
        self.cache = x.detach().clone()
        tag = f"x shape={tuple(x.shape)}"
        return self.proj(x)
    ```

    ## Fix safety
    No fix: `clone()` is not a deep copy of everything a caller may rely on.

    ## References
    - [GB4198 copy.deepcopy a tensor](https://meta-pytorch.github.io/compile-graph-break-site/gb/gb4198.html)
    - [GB0088 Observed exception](https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0088.html)
    - [GB0569 repr() on tensor](https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0569.html)
    """

    code = "RC206"
    name = "tensor-identity-or-text"
    message = "a tensor's identity or text is needed in code reached from `forward`: graph break"
    triggers = ("deepcopy", "str(", "repr(", "f\"", "f'", ".format(", "data_ptr")
    graph_break_ids = RULE_BREAKS["RC206"]
    node_types = (ast.Call, ast.JoinedStr)

    valid = [
        _net("msg = f'shape={x.shape} dtype={x.dtype} n={x.size(0)}'\nreturn x"),
        _net("name = str(x.device) + repr(x.dtype) + '{}'.format(x.ndim)\nreturn x"),
        _net("cfg = copy.deepcopy(self.config)\nreturn x.clone()"),
        # `%`-formatting a tensor also breaks (GB0208) but is not looked for: walking every
        # arithmetic operation for it would cost more than the rare finding is worth
        _net("tag = 'x=%s' % x\nreturn x % 2"),
        _net("key = id(x)\nreturn x"),
        _net("if x.dim() != 2:\n    raise ValueError(f'bad input {x}')\nassert x.dim() == 2, f'{x}'\nreturn x"),
        # outside forward
        "import copy\nimport torch\nx = torch.ones(2)\nprint(f'{x}', str(x), x.data_ptr())\ny = copy.deepcopy(x)\n",
    ]
    invalid = [
        Invalid(_net("self.cache = copy.deepcopy(x)\nreturn x"), message="GB4198"),
        Invalid(_net("tag = f'x={x}'\nreturn x"), message="whole frame"),
        Invalid(_net("tag = 'x={}'.format(x.sum())\nreturn x")),
        Invalid(_net("tag = str(x) + repr(x)\nreturn x"), count=2),
        Invalid(_net("if x.data_ptr() == 0:\n    pass\nreturn x"), message="GB0088"),
    ]

    def _collect(self, node: ast.AST) -> None:
        if not self.candidate(node):
            return
        for anc in reversed(self.ctx.ancestors):
            if isinstance(anc, (ast.Raise, ast.Assert)):
                return  # a message built only on the error path: never traced into a graph
            if isinstance(anc, ast.stmt):
                break
        super()._collect(node)

    @classmethod
    def candidate(cls, node: ast.AST) -> bool:
        if type(node) is ast.JoinedStr:
            return True
        func = node.func
        if type(func) is ast.Name:
            return func.id in ("str", "repr", "deepcopy") and len(node.args) == 1
        return type(func) is ast.Attribute and func.attr in ("deepcopy", "format", "data_ptr")

    @classmethod
    def judge(cls, node: ast.AST, scope: Scope) -> Break | None:
        oracle = scope.tensors
        if isinstance(node, ast.JoinedStr):
            for part in node.values:
                if isinstance(part, ast.FormattedValue) and oracle.is_tensor(part.value):
                    return _frame_skipped("an f-string of a tensor", part)
            return None
        func = node.func
        if isinstance(func, ast.Name) and func.id in ("str", "repr") and scope.builtin(func, func.id):
            if oracle.is_tensor(node.args[0]):
                gb = "GB0059" if func.id == "str" else "GB0569"
                return Break(f"`{func.id}()` of a tensor needs its data: graph break ({gb}); format its shape or dtype instead", gb)
            return None
        if scope.resolves_to(func, *DEEPCOPY):
            if node.args and oracle.is_tensor(node.args[0]):
                return Break("`copy.deepcopy` of a tensor: graph break (GB4198); use `t.detach().clone()`", "GB4198")
            return None
        if isinstance(func, ast.Attribute) and func.attr == "format":
            if isinstance(func.value, ast.Constant) and isinstance(func.value.value, str):
                if any(oracle.is_tensor(a) for a in [*node.args, *(k.value for k in node.keywords)]):
                    return _frame_skipped("`str.format` of a tensor")
            return None
        if isinstance(func, ast.Attribute) and func.attr == "data_ptr" and oracle.is_tensor(func.value):
            return _frame_skipped("`.data_ptr()`")
        return None


def _frame_skipped(what: str, at: ast.AST | None = None) -> Break:
    return Break(f"{what} raises inside dynamo (GB0088): the whole frame is skipped and runs eagerly, silently; "
                 "format shapes or dtypes, not tensors", "GB0088", at=at)
