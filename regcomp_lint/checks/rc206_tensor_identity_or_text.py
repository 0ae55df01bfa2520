"""RC206 tensor-identity-or-text."""

from __future__ import annotations

import ast

from regcomp_lint.checks.base import Invalid
from regcomp_lint.checks.forward_rule import Break, ForwardRule, Scope
from regcomp_lint.diagnostics import Severity
from regcomp_lint.knowledge.graph_breaks import RULE_BREAKS
from regcomp_lint.knowledge.model_classes import DEEPCOPY

#: Expressions that use a lazily built string (``len()`` is the Call) or a data pointer at once.
_CONSUMED_TEXT = (ast.Compare, ast.BinOp, ast.Call)
_CONSUMED_POINTER = (ast.Compare, ast.BinOp)

_HEAD = "import copy\nimport torch\nfrom torch import nn\nclass Net(nn.Module):\n    def forward(self, x):\n"


def _net(body: str) -> str:
    return _HEAD + "".join(f"        {line}\n" for line in body.splitlines())


class TensorIdentityOrText(ForwardRule[ast.Call | ast.JoinedStr]):
    """## What it does
    Reports code reached from an `nn.Module`'s `forward` that needs a tensor's identity or its
    printed text: `copy.deepcopy(t)`, `str(t)`, `repr(t)`, and an f-string or `str.format` of a
    tensor or `t.data_ptr()` whose result is used right there: measured (`len(f"{t}")`),
    concatenated (`"x=" + f"{t}"`) or compared (`f"{t}" == s`, `t.data_ptr() == u.data_ptr()`).

    Not reported: text of a shape, dtype or device (`f"{x.shape}"`); an f-string or `format`
    that is only stored or passed on (dynamo builds it lazily and, measured with torch 2.13,
    does not break until the text is used); a message built only to be raised or asserted;
    `"%s" % t`, which stops dynamo too (`GB0208`, whole frame skipped) but is not looked for.

    ## Why is this bad
    A traced tensor is a fake: it has no data to print, no storage address and cannot be
    deep-copied. `copy.deepcopy` breaks the graph (`GB4198`), `str`/`repr` break it (`GB0059`,
    `GB0569`) and comparing data pointers is unsupported (`GB5976`). Using the text of an
    f-string or `format` raises inside dynamo (`GB0088` "Observed exception" when measured,
    `GB3934` when concatenated, `GB9648` when compared), and then dynamo gives up on the **whole
    frame** and runs it eagerly without saying so (measured with torch 2.13: no graph at all).

    ## Example
    ```python
    def forward(self, x):
        self.cache = copy.deepcopy(x)
        if x.data_ptr() == self.last_ptr:
            return self.cached
        return self.proj(x)
    ```

    ## Use instead
    ```python
    def forward(self, x):
        self.cache = x.detach().clone()
        return self.proj(x)
    ```
    Keep identity checks and debug text outside the compiled module, or format shapes and
    dtypes (`f"{tuple(x.shape)}"`), which are known while tracing.

    ## Fix safety
    No fix: `clone()` is not a deep copy of everything a caller may rely on.

    ## References
    - [GB4198 copy.deepcopy a tensor](https://meta-pytorch.github.io/compile-graph-break-site/gb/gb4198.html)
    - [GB0088 Observed exception](https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0088.html)
    - [GB0569 repr() on tensor](https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0569.html)
    - [GB5976 Data pointer comparison](https://meta-pytorch.github.io/compile-graph-break-site/gb/gb5976.html)
    """

    code = "RC206"
    name = "tensor-identity-or-text"
    severity = Severity.WARNING
    message = "a tensor's identity or text is needed in code reached from `forward`: graph break"
    triggers = ("deepcopy", "str(", "repr(", 'f"', "f'", ".format(", "data_ptr")
    graph_break_ids = RULE_BREAKS["RC206"]
    node_types = (ast.Call, ast.JoinedStr)

    valid = [
        _net("msg = f'shape={x.shape} dtype={x.dtype} n={x.size(0)}'\nreturn x * len(msg)"),
        _net("name = str(x.device) + repr(x.dtype) + '{}'.format(x.ndim)\nreturn x"),
        _net("cfg = copy.deepcopy(self.config)\nreturn x.clone()"),
        _net("key = id(x)\nreturn x"),
        # built lazily and never used as text: no break
        _net("self.tag = f'x={x}'\nself.fmt = 'x={}'.format(x)\nself.ptr = x.data_ptr()\nreturn x"),
        # error paths
        _net("if x.dim() != 2:\n    raise ValueError(f'bad input {x}')\nassert x.dim() == 2, f'{x}'\nreturn x"),
        # `%`-formatting a tensor also breaks (GB0208) but is not looked for
        _net("tag = 'x=%s' % x\nreturn x % 2"),
        # outside forward
        "import copy\nimport torch\nx = torch.ones(2)\nprint(f'{x}', str(x), x.data_ptr())\ny = copy.deepcopy(x)\n",
    ]
    invalid = [
        Invalid(_net("self.cache = copy.deepcopy(x)\nreturn x"), message="GB4198"),
        Invalid(_net("tag = str(x) + repr(x)\nreturn x"), count=2),
        Invalid(_net("n = len(f'x={x}')\nreturn x * n"), message="whole frame"),
        Invalid(_net("tag = 'x=' + 'y={}'.format(x.sum())\nreturn x"), message="GB3934"),
        Invalid(_net("same = f'{x}' == 'abc'\nreturn x"), message="GB9648"),
        Invalid(_net("if x.data_ptr() == self.last.data_ptr():\n    x = x.clone()\nreturn x"), message="GB5976"),
    ]

    @classmethod
    def candidate(cls, node: ast.Call | ast.JoinedStr) -> bool:
        if isinstance(node, ast.JoinedStr):
            return True
        func = node.func
        if type(func) is ast.Name:
            return func.id in ("str", "repr", "deepcopy") and len(node.args) == 1
        return type(func) is ast.Attribute and func.attr in ("deepcopy", "format", "data_ptr")

    @classmethod
    def accepts(cls, node: ast.Call | ast.JoinedStr, ancestors: list[ast.AST]) -> bool:
        for anc in reversed(ancestors):
            if isinstance(anc, (ast.Raise, ast.Assert)):
                return False  # a message built only on the error path: never traced into a graph
            if isinstance(anc, ast.stmt):
                break
        if _lazy(node):
            return _consumer(node, ancestors) is not None
        return True

    @classmethod
    def judge(cls, node: ast.Call | ast.JoinedStr, scope: Scope) -> Break | None:
        oracle = scope.tensors
        if isinstance(node, ast.JoinedStr):
            if any(isinstance(part, ast.FormattedValue) and oracle.is_tensor(part.value) for part in node.values):
                return _used("the text of an f-string of a tensor", node, scope)
            return None
        func = node.func
        if isinstance(func, ast.Name) and func.id in ("str", "repr") and scope.builtin(func, func.id):
            if oracle.is_tensor(node.args[0]):
                gb = "GB0059" if func.id == "str" else "GB0569"
                return Break(
                    f"`{func.id}()` of a tensor needs its data: graph break ({gb}); format its shape or dtype instead",
                    gb,
                )
            return None
        if scope.resolves_to(func, *DEEPCOPY):
            if node.args and oracle.is_tensor(node.args[0]):
                return Break("`copy.deepcopy` of a tensor: graph break (GB4198); use `t.detach().clone()`", "GB4198")
            return None
        if isinstance(func, ast.Attribute) and func.attr == "format":
            if isinstance(func.value, ast.Constant) and isinstance(func.value.value, str):
                if any(oracle.is_tensor(a) for a in [*node.args, *(k.value for k in node.keywords)]):
                    return _used("the text of `str.format` of a tensor", node, scope)
            return None
        if (
            isinstance(func, ast.Attribute)
            and func.attr == "data_ptr"
            and not node.args
            and oracle.is_tensor(func.value)
        ):
            return _used("a tensor's `.data_ptr()`", node, scope)
        return None


def _lazy(node: ast.Call | ast.JoinedStr) -> bool:
    """Values dynamo builds lazily: they break only where they are used."""
    if isinstance(node, ast.JoinedStr):
        return True
    func = node.func
    return type(func) is ast.Attribute and func.attr in ("format", "data_ptr")


def _consumer(node: ast.Call | ast.JoinedStr, ancestors: list[ast.AST]) -> type | None:
    """The kind of expression that uses ``node`` right away: a comparison, ``+``/``%``, ``len()``."""
    if not ancestors:
        return None
    parent = ancestors[-1]
    # (a lazy call is a method call: see _lazy)
    pointer = isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "data_ptr"
    consumers = _CONSUMED_POINTER if pointer else _CONSUMED_TEXT
    if type(parent) is ast.Call and not (isinstance(parent.func, ast.Name) and parent.func.id == "len"):
        return None
    return type(parent) if type(parent) in consumers else None


def _used(what: str, node: ast.AST, scope: Scope) -> Break:
    if what.endswith("`.data_ptr()`"):
        return Break(
            f"{what} compared or computed with while tracing: dynamo cannot (GB5976 for a comparison, GB0088 "
            "otherwise, which skips the whole frame silently); keep identity checks outside the compiled module",
            "GB5976",
        )
    return Break(
        f"{what} is used (measured, concatenated or compared) while tracing: dynamo raises (GB0088, GB3934 or "
        "GB9648) and skips the whole frame silently; format shapes or dtypes instead",
        "GB0088",
    )
