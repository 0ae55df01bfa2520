"""RC205 untraceable-call."""

from __future__ import annotations

import ast

from regcomp_lint.checks.base import Invalid
from regcomp_lint.checks.forward_rule import Break, ForwardRule, Scope
from regcomp_lint.diagnostics import Severity
from regcomp_lint.knowledge.graph_breaks import EXTENSION_LIBRARIES, RULE_BREAKS, SKIPPED_THIRD_PARTY

#: Calls that dynamo skips (GB0007), each probed under torch 2.13. Not listed because they trace
#: on their own: random.randint/uniform/randrange, os.getenv, os.environ.get, os.path.join,
#: inspect.signature/isfunction, torch.seed, numpy.random.seed. (Mixing randint and uniform in
#: one expression, or `int()` of a randint, does fail in 2.13: not reported.)
SKIPPED = frozenset(
    {
        "time.time",
        "time.perf_counter",
        "time.monotonic",
        "time.time_ns",
        "time.perf_counter_ns",
        "time.monotonic_ns",
        "time.process_time",
        "time.sleep",
        "random.random",
        "random.choice",
        "random.choices",
        "random.shuffle",
        "random.sample",
        "random.gauss",
        "random.normalvariate",
        "random.getrandbits",
        "random.seed",
        "random.getstate",
        "random.setstate",
        "os.getpid",
        "os.urandom",
        "os.listdir",
        "os.cpu_count",
        "os.system",
        "os.makedirs",
        "os.mkdir",
        "os.remove",
        "os.stat",
        "os.scandir",
        "os.walk",
        "os.path.exists",
        "os.path.isfile",
        "os.path.isdir",
        "os.path.getsize",
        "inspect.stack",
        "inspect.currentframe",
        "inspect.getframeinfo",
        "inspect.getouterframes",
        "inspect.trace",
        "pdb.set_trace",
        "ipdb.set_trace",
        "torch.manual_seed",
        "torch.random.manual_seed",
        "torch.cuda.manual_seed",
        "torch.cuda.manual_seed_all",
    }
)
_LAST_NAMES = frozenset(name.rsplit(".", 1)[1] for name in SKIPPED)
#: Libraries a call on a tensor leaves the graph for (see knowledge.graph_breaks).
THIRD_PARTY = SKIPPED_THIRD_PARTY | EXTENSION_LIBRARIES
#: Method calls on a tensor that keep its data (the argument still carries it): ``x.cpu().numpy()``.
DATA_METHODS = frozenset({"cpu", "numpy", "detach", "tolist", "float", "double", "contiguous", "clone", "to"})
#: Builtins dynamo cannot trace (GB0059).
UNTRACEABLE_BUILTINS = frozenset({"breakpoint", "open", "input"})

_HEAD = "import os\nimport random\nimport time\nimport torch\nfrom torch import nn\nclass Net(nn.Module):\n    def forward(self, x):\n"


def _net(body: str) -> str:
    return _HEAD + "".join(f"        {line}\n" for line in body.splitlines())


class UntraceableCall(ForwardRule[ast.Call]):
    """## What it does
    Reports calls dynamo cannot trace, in code reached from an `nn.Module`'s `forward`: clocks
    (`time.time`, `time.perf_counter`, `time.sleep`...), Python's `random` state
    (`random.random`, `choice`, `shuffle`, `sample`, `seed`...), process and file-system calls
    (`os.getpid`, `os.urandom`, `os.listdir`, `os.path.exists`...), frame inspection
    (`inspect.stack`, `inspect.currentframe`), debuggers (`pdb.set_trace()`, `breakpoint()`),
    `open()` and seeding (`torch.manual_seed`, `torch.cuda.manual_seed`).

    Also calls into a third-party library that dynamo cannot trace, when they are given a tensor
    or its data (`x.cpu().numpy()`, `x.tolist()`): the libraries torch 2.13 lists in
    `THIRDPARTY_SKIPLIST` (`networkx`, `pandas`, `sklearn`, `tqdm`...; numpy is traced) and
    libraries that work in compiled extensions (`scipy`, `cv2`, `PIL`, `skimage`, `numba`,
    `faiss`). Calls into torch, numpy, the standard library and the project's own modules are
    not reported here, and neither are calls that get no tensor data.

    Each listed call was probed under torch 2.13; calls that trace fine are not reported:
    `random.randint`, `random.uniform`, `os.getenv`, `os.environ.get`, `os.path.join`,
    `inspect.signature`, `torch.seed`.

    ## Why is this bad
    These functions are on dynamo's skip list (`GB0007` "Attempted to call function marked as
    skipped") or are builtins it cannot model (`GB0059`): the graph breaks at the call, and
    `fullgraph=True` raises `Unsupported`. Timing or seeding inside `forward` also measures or
    reseeds at trace time, not at run time, once the code is compiled.

    ## Example
    ```python
    def forward(self, x):
        start = time.perf_counter()
        y = self.body(x)
        self.elapsed = time.perf_counter() - start
        return y
    ```

    ## Use instead
    ```python
    def forward(self, x):
        return self.body(x)

    start = time.perf_counter()  # time the compiled call from outside
    y = model(x)
    ```
    Use `torch.rand`/`torch.randint` (traced, seeded by `torch.manual_seed` outside) instead
    of Python's `random` for values that feed tensor math. A random value that decides a Python
    branch (`if random.random() < p:`) still breaks when drawn with `torch.rand` (branching on a
    tensor's value is RC202's break): draw it outside `forward` and pass the decision in, or keep
    both arms as tensors with `torch.where`.

    ## Fix safety
    No fix: moving the call out of `forward` is a design change.

    ## References
    - [GB0007 Attempted to call function marked as skipped](https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0007.html)
    - [GB0059 Failed to trace builtin operator](https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0059.html)
    """

    code = "RC205"
    name = "untraceable-call"
    severity = Severity.WARNING
    message = "a call dynamo cannot trace in code reached from `forward`: graph break"
    triggers = ("time", "random", "os.", "inspect", "pdb", "breakpoint(", "open(", "input(", "manual_seed")
    graph_break_ids = RULE_BREAKS["RC205"]
    node_types = (ast.Call,)

    valid = [
        _net("r = random.randint(0, 3)\nreturn x * r"),
        _net("if os.getenv('DEBUG') or os.environ.get('X'):\n    x = x * 2\nreturn x * len(os.path.join('a', 'b'))"),
        _net("noise = torch.rand_like(x)\nreturn x + noise"),
        # the training loop may time and seed
        _HEAD + "        return x\ntorch.manual_seed(0)\nstart = time.time()\nprint(time.time() - start)\n",
        # a local function or attribute named like a module function
        "import torch\nfrom torch import nn\nclass Net(nn.Module):\n    def forward(self, x):\n        time = self.clock\n"
        "        return x * time.time()\n",
        _net("if not torch.compiler.is_compiling():\n    self.t0 = time.perf_counter()\nreturn x"),
        # third-party calls on no tensor data, numpy (traced), and the project's own helpers
        "import scipy.special\nimport numpy as np\nfrom torch import nn\nclass Net(nn.Module):\n"
        "    def forward(self, x):\n        c = scipy.special.comb(5, 2)\n        y = np.sqrt(x.numpy())\n"
        "        return x * c\n",
    ]
    invalid = [
        # a library dynamo cannot trace, on a tensor's data (issue 13)
        Invalid(
            "import torch\nfrom scipy.optimize import linear_sum_assignment\nfrom torch import nn\n"
            "class Matcher(nn.Module):\n    def forward(self, cost):\n"
            "        rows, cols = linear_sum_assignment(cost.detach().cpu().numpy())\n        return cost[rows, cols]\n",
            message="`scipy`",
        ),
        Invalid(
            "import networkx as nx\nfrom torch import nn\nclass Net(nn.Module):\n    def forward(self, x):\n"
            "        g = nx.from_numpy_array(x.cpu().numpy())\n        return x\n",
            message="dynamo skips it",
        ),
        Invalid(_net("t0 = time.perf_counter()\nreturn x"), message="GB0007"),
        Invalid(_net("return x * random.random()")),
        Invalid(_net("torch.manual_seed(0)\nreturn x")),
        Invalid(_net("import pdb; pdb.set_trace()\nreturn x")),
        Invalid(_net("breakpoint()\nreturn x"), message="GB0059"),
        Invalid(_net("with open('/tmp/log', 'a') as f:\n    f.write('x')\nreturn x")),
        Invalid(_net("if os.path.exists('/tmp/stop'):\n    x = x * 0\nreturn x")),
        Invalid(
            "from time import perf_counter\nfrom torch import nn\nclass Net(nn.Module):\n"
            "    def forward(self, x):\n        self.t = perf_counter()\n        return x\n"
        ),
        Invalid(
            "import inspect\nfrom torch import nn\nclass Net(nn.Module):\n    def forward(self, x):\n"
            "        caller = inspect.stack()[1]\n        return x\n"
        ),
    ]

    @classmethod
    def candidate(cls, node: ast.Call) -> bool:
        func = node.func
        if type(func) is ast.Attribute:
            return func.attr in _LAST_NAMES or (bool(node.args or node.keywords) and _root_name(func) is not None)
        return type(func) is ast.Name and (
            func.id in UNTRACEABLE_BUILTINS or func.id in _LAST_NAMES or bool(node.args or node.keywords)
        )

    @classmethod
    def judge(cls, node: ast.Call, scope: Scope) -> Break | None:
        func = node.func
        if isinstance(func, ast.Name) and scope.builtin(func, *UNTRACEABLE_BUILTINS):
            return Break(f"`{func.id}()` cannot be traced: graph break (GB0059); keep it out of `forward`", "GB0059")
        if not scope.imports.root_is_import(func):
            return None
        qualname = scope.imports.qualname(func)
        if qualname in SKIPPED and scope.resolves_to(func, qualname):
            return Break(f"`{qualname}` is skipped by dynamo: graph break (GB0007); keep it out of `forward`", "GB0007")
        if qualname and qualname.split(".")[0] in THIRD_PARTY and _takes_tensor_data(node, scope):
            library = qualname.split(".")[0]
            why = "dynamo skips it" if library in SKIPPED_THIRD_PARTY else "it runs compiled code dynamo cannot trace"
            return Break(
                f"`{qualname}` is a call into `{library}` on tensor data, and {why}: graph break (GB0007); "
                "do it outside `forward`, or with torch ops",
                "GB0007",
            )
        return None


def _root_name(func: ast.Attribute) -> str | None:
    """``scipy`` of ``scipy.optimize.linear_sum_assignment``; None for ``self.x.f`` or a call chain."""
    node: ast.expr = func
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) and node.id != "self" else None


def _takes_tensor_data(call: ast.Call, scope: Scope) -> bool:
    """An argument is a tensor, or a tensor's data (``t.cpu().numpy()``, ``t.detach().tolist()``)."""
    oracle = scope.tensors
    for arg in (*call.args, *(k.value for k in call.keywords)):
        value = arg.value if isinstance(arg, ast.Starred) else arg
        while (
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Attribute)
            and value.func.attr in DATA_METHODS
            and not oracle.is_tensor(value)
        ):
            value = value.func.value
        if oracle.is_tensor(value):
            return True
    return False
