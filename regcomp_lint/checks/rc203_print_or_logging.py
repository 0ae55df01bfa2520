"""RC203 print-or-logging."""

from __future__ import annotations

import ast

from regcomp_lint.checks.base import Invalid
from regcomp_lint.checks.forward_rule import Break, ForwardRule, Scope
from regcomp_lint.diagnostics import Severity
from regcomp_lint.knowledge.graph_breaks import RULE_BREAKS

LOG_METHODS = frozenset(
    {
        "debug",
        "info",
        "warning",
        "warn",
        "error",
        "exception",
        "critical",
        "fatal",
        "log",
        "warning_once",
        "info_once",
        "warning_advice",
    }
)
LOGGING_FUNCTIONS = tuple(
    f"logging.{name}" for name in ("debug", "info", "warning", "warn", "error", "exception", "critical", "fatal", "log")
)
WARN = ("warnings.warn", "warnings.warn_explicit")
LOGGER_FACTORIES = frozenset({"getLogger", "get_logger"})

_HEAD = "import logging\nimport warnings\nimport torch\nfrom torch import nn\nlogger = logging.getLogger(__name__)\n"


def _net(body: str) -> str:
    return (
        _HEAD
        + "class Net(nn.Module):\n    def forward(self, x):\n"
        + "".join(f"        {line}\n" for line in body.splitlines())
    )


class PrintOrLogging(ForwardRule[ast.Call]):
    """## What it does
    Reports `print(...)`, `logger.<level>(...)` (a module-level `logging.getLogger(...)` or
    transformers' `logging.get_logger(...)`, including `warning_once`), `logging.<level>(...)`
    and `warnings.warn(...)` in code reached from an `nn.Module`'s `forward`. Code under
    `if not torch.compiler.is_compiling():` is not reported: dynamo skips it.

    ## Why is this bad
    Dynamo cannot put I/O in a graph. Each call breaks the graph: `print` is an untraceable
    builtin (`GB0059`), a `Logger` method is unsupported (`GB0291`), `logging.info` fails on an
    object without `python_type()` (`GB4841`) and `warnings.warn` is a skipped function
    (`GB0007`). A warning inside every block splits every block's graph, and `fullgraph=True`
    raises `Unsupported`.

    ## Example
    ```python
    def forward(self, x):
        logger.warning_once("using the slow path")
        print("shape", x.shape)
        return self.proj(x)
    ```

    ## Use instead
    ```python
    def forward(self, x):
        if not torch.compiler.is_compiling():
            logger.warning_once("using the slow path")
        return self.proj(x)
    ```
    Or tell dynamo to move the calls out of the graph:
    `torch._dynamo.config.reorderable_logging_functions.add(print)` (also `warnings.warn`,
    `logging.info`...: they run after the graph with the values they were given). That works
    only when every argument is a tensor, a constant or a string, not a `torch.Size`:
    `print("shape", x.shape)` still breaks ("attempted to reorder a debugging function that
    can't actually be reordered"); print `x` itself or a constant. Or drop the calls:
    `torch._dynamo.config.ignore_logging_functions.add(logger.warning_once)`.

    ## Fix safety
    No fix: whether a message may be dropped or delayed is the author's call.

    ## References
    - [GB0059 Failed to trace builtin operator](https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0059.html)
    - [GB0291 logging.Logger method](https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0291.html)
    - [`reorderable_logging_functions`](https://docs.pytorch.org/docs/stable/torch.compiler_troubleshooting.html)
    """

    code = "RC203"
    name = "print-or-logging"
    severity = Severity.WARNING
    message = "print or logging in code reached from `forward`: graph break"
    triggers = ("print(", "log", "warn")
    graph_break_ids = RULE_BREAKS["RC203"]
    node_types = (ast.Call,)

    valid = [
        _net("if not torch.compiler.is_compiling():\n    print(x.shape)\n    logger.info('a')\nreturn x"),
        _net("if torch._dynamo.is_compiling():\n    pass\nelse:\n    warnings.warn('eager only')\nreturn x"),
        # print outside forward: the training loop
        _HEAD
        + "class Net(nn.Module):\n    def forward(self, x):\n        return x\nfor step in range(3):\n    print(step)\n    logger.info('step')\n",
        # a local print, a logger that is not a logging.Logger
        "import torch\nfrom torch import nn\ndef print(*a):\n    pass\nclass Net(nn.Module):\n    def forward(self, x):\n        print(x)\n        return x\n",
        _net("log = []\nlog.append(1)\nself.metrics.info('x')\nreturn x"),
        # a non-logging `.log` / `.warn` method and torch.log
        _net("y = torch.log(x)\nz = x.log()\nreturn y + z"),
        # __init__ is not traced
        _HEAD
        + "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n        print('building')\n"
        "        logger.warning('x')\n    def forward(self, x):\n        return x\n",
    ]
    invalid = [
        Invalid(_net("print('shape', x.shape)\nreturn x"), message="GB0059"),
        Invalid(_net("logger.warning('slow path')\nreturn x"), message="GB0291"),
        Invalid(_net("logger.warning_once('slow path')\nreturn x"), message="ignore_logging_functions"),
        Invalid(_net("logging.info('x')\nreturn x"), message="GB4841"),
        Invalid(_net("warnings.warn('deprecated')\nreturn x"), message="GB0007"),
        Invalid(
            "from torch import nn\nfrom transformers.utils import logging\nlogger = logging.get_logger(__name__)\n"
            "class Net(nn.Module):\n    def forward(self, x, use_cache=False):\n        if use_cache:\n"
            "            logger.warning_once('no cache')\n        return x\n"
        ),
        Invalid(
            _HEAD
            + "def check(x):\n    print(x.shape)\n    return x\nclass Block(nn.Module):\n    def forward(self, x):\n"
            "        return check(x)\nclass Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            "        self.block = Block()\n    def forward(self, x):\n        return self.block(x)\n",
            message="reached via Net.forward → Block.forward → check",
        ),
    ]

    @classmethod
    def candidate(cls, node: ast.Call) -> bool:
        func = node.func
        if type(func) is ast.Name:
            return func.id == "print"
        return type(func) is ast.Attribute and (func.attr in LOG_METHODS or func.attr == "warn_explicit")

    @classmethod
    def judge(cls, node: ast.Call, scope: Scope) -> Break | None:
        func = node.func
        if isinstance(func, ast.Name):
            if scope.builtin(func, "print"):
                return Break(
                    "`print` is an untraceable builtin: graph break (GB0059); guard it with "
                    "`if not torch.compiler.is_compiling():` or add it to "
                    "`torch._dynamo.config.reorderable_logging_functions`",
                    "GB0059",
                )
            return None
        if not isinstance(func, ast.Attribute):  # (candidate() lets only names and attributes through)
            return None
        if scope.resolves_to(func, *WARN):
            return Break(
                "`warnings.warn` is skipped by dynamo: graph break (GB0007); warn outside the compiled code or add it "
                "to `torch._dynamo.config.reorderable_logging_functions`",
                "GB0007",
            )
        if scope.resolves_to(func, *LOGGING_FUNCTIONS):
            return Break(
                f"`logging.{func.attr}` cannot be traced: graph break (GB4841); log outside the compiled code or add "
                "it to `torch._dynamo.config.ignore_logging_functions`",
                "GB4841",
            )
        if _is_logger(func.value, scope):
            return Break(
                f"`Logger.{func.attr}` is not supported by dynamo: graph break (GB0291); guard it with "
                "`if not torch.compiler.is_compiling():` or add it to "
                "`torch._dynamo.config.ignore_logging_functions`",
                "GB0291",
            )
        return None


def _is_logger(node: ast.AST, scope: Scope) -> bool:
    """A module-level ``logger = logging.getLogger(...)`` / ``logging.get_logger(...)``."""
    value = scope.module_value(node)
    if not isinstance(value, ast.Call):
        return False
    func = value.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
    if name not in LOGGER_FACTORIES:
        return False
    qualname = scope.imports.qualname(func) or ""
    return "logging" in qualname or qualname.endswith("get_logger")
