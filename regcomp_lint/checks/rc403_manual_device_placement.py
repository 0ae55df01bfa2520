"""RC403 manual-device-placement."""

from __future__ import annotations

import ast

from regcomp_lint.analysis.bindings import Where
from regcomp_lint.checks.base import Invalid, Rule
from regcomp_lint.diagnostics import Applicability, Edit, Fix, Severity


class ManualDevicePlacement(Rule):
    """## What it does
    Reports `.cuda()` and `.to(D)` where `D` is a fixed CUDA device (`"cuda"`, `"cuda:0"`,
    `f"cuda:{rank}"`, `torch.device("cuda")`, `"cuda" if torch.cuda.is_available() else "cpu"`,
    `torch.cuda.current_device()`, or a name bound to one of these) in a file that builds an
    `Accelerator`. `.to(accelerator.device)` and a `device = accelerator.device` name are fine;
    a device that arrives as a parameter is not judged. `.cpu()` and `.to("cpu")` (moving
    results out for logging) are not reported.

    Both the model and the data are reported: the model because `prepare` already puts it on
    `accelerator.device`, the data because a prepared `DataLoader` already yields batches there
    and a hand-moved batch lands on the wrong GPU in every process but the first.

    ## Why is this bad
    The script stops running where Accelerate runs it. `"cuda"` means the current CUDA device;
    on a multi-GPU launch, building the `Accelerator` sets it to the process's own GPU
    (accelerate 1.15's `PartialState.set_device` calls `torch.cuda.set_device(cuda:{local
    process index})`), so a bare `"cuda"` after that point lands where `accelerator.device` is.
    The risks are the rest: on hardware that is not CUDA (`accelerate launch --cpu`, Apple MPS,
    Intel XPU, NPU, TPU) `.cuda()` and `"cuda"` fail where `accelerator.device` works; a fixed
    index (`"cuda:0"`, or `f"cuda:{rank}"` with the global rank on several machines) pins every
    process to one GPU; and a `"cuda"` placement that runs before the `Accelerator` is built
    still means GPU 0 in every process.

    ## Example
    ```python
    device = torch.device("cuda")
    model = Net().cuda()
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    for x, y in loader:
        x, y = x.to(device), y.to(device)
    ```

    ## Use instead
    ```python
    model = Net()
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    for x, y in loader:  # already on accelerator.device
        ...
    ```
    or, where a move is really needed, `.to(accelerator.device)`.

    ## Fix safety
    Unsafe: on more than one GPU, or on CPU, the tensor ends up on another device than before
    (the right one). `.cuda(...)` becomes `.to(accelerator.device, ...)` keeping keyword
    arguments such as `non_blocking=True`; the device argument of `.to(...)` becomes
    `accelerator.device`. Offered only where exactly one accelerator name is visible; often the
    better edit is to delete the move, since `prepare` already places the model and the batches.
    Not offered for `batch.cuda()` as a statement on a loop variable: a tensor's `.cuda()`
    returns a copy, so such a line moves an object of the script's own in place, which may have
    no `.to()`.

    ## References
    - [Accelerate: migrating your code](https://huggingface.co/docs/accelerate/basic_tutorials/migration)
    - [`Accelerator.device`](https://huggingface.co/docs/accelerate/package_reference/accelerator)
    """

    code = "RC403"
    name = "manual-device-placement"
    severity = Severity.WARNING
    message = "manual CUDA placement in an Accelerate script: use `accelerator.device`"
    triggers = ("Accelerator",)
    fix_applicability = Applicability.UNSAFE

    valid = [
        "from accelerate import Accelerator\naccelerator = Accelerator()\nmodel = Net().to(accelerator.device)\n",
        "from accelerate import Accelerator\naccelerator = Accelerator()\ndevice = accelerator.device\nx = x.to(device)\n",
        # no Accelerator: a plain PyTorch script may use CUDA as it likes
        "import torch\nmodel = Net().cuda()\nx = x.to('cuda')\n",
        # moving results out, changing dtype, a device we cannot see
        "import torch\nfrom accelerate import Accelerator\nacc = Accelerator()\npreds = preds.cpu()\nx = x.to('cpu')\n"
        "h = h.to(torch.float16)\ndef move(x, device):\n    return x.to(device)\nmask = mask.to(x.device)\n",
        # a module's function, not a tensor's method
        "from accelerate import Accelerator\nimport numba\nacc = Accelerator()\nnumba.cuda()\n",
    ]
    invalid = [
        Invalid(
            "from accelerate import Accelerator\naccelerator = Accelerator()\nmodel = Net().cuda()\n",
            fixed="from accelerate import Accelerator\naccelerator = Accelerator()\nmodel = Net().to(accelerator.device)\n",
            message="`.cuda()`",
        ),
        # the classic device line, with the batch moved by hand in the loop
        Invalid(
            "import torch\nfrom accelerate import Accelerator\n"
            "device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"
            "acc = Accelerator()\nfor x, y in loader:\n    x, y = x.to(device), y.to(device, non_blocking=True)\n",
            fixed="import torch\nfrom accelerate import Accelerator\n"
            "device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"
            "acc = Accelerator()\nfor x, y in loader:\n    x, y = x.to(acc.device), y.to(acc.device, non_blocking=True)\n",
            count=2,
            message="`.to(device)`",
        ),
        # keyword arguments of .cuda() are kept, its device is dropped; f-strings and device=
        Invalid(
            "from accelerate import Accelerator\nclass Trainer:\n    def __init__(self, rank):\n"
            "        self.accelerator = Accelerator()\n        self.device = f'cuda:{rank}'\n"
            "    def step(self, batch):\n        batch = batch.cuda(0, non_blocking=True)\n        return batch.to(device=self.device)\n",
            fixed="from accelerate import Accelerator\nclass Trainer:\n    def __init__(self, rank):\n"
            "        self.accelerator = Accelerator()\n        self.device = f'cuda:{rank}'\n"
            "    def step(self, batch):\n        batch = batch.to(self.accelerator.device, non_blocking=True)\n"
            "        return batch.to(device=self.accelerator.device)\n",
            count=2,
        ),
        Invalid(
            "import torch\nimport accelerate\nacc = accelerate.Accelerator()\nmodel.to(torch.cuda.current_device())\nmodel.to('cuda:1')\n",
            fixed="import torch\nimport accelerate\nacc = accelerate.Accelerator()\nmodel.to(acc.device)\nmodel.to(acc.device)\n",
            count=2,
        ),
        # before the accelerator exists there is no name to use: reported, not fixed
        Invalid("from accelerate import Accelerator\nmodel = Net().cuda()\naccelerator = Accelerator()\n"),
        # a discarded .cuda() on what a loop yields moves an object of the script's own in place
        # (ante's Batch), which may have no .to(): reported, not fixed
        Invalid(
            "from accelerate import Accelerator\naccelerator = Accelerator()\nfor batch in loader:\n    batch.cuda()\n",
            message="the way its class allows",
        ),
    ]

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.script = ctx.semantic.accelerate_script
        self.bindings = self.script.bindings
        self._moves: list[tuple[ast.Call, ast.Attribute, Where]] = []  # (call, its callee, where)
        self._discarded: set[int] = set()  # ids of calls that are whole statements
        self._loop_names: set[str] = set()  # names a for loop binds

    def visit_Expr(self, node: ast.Expr) -> None:
        if isinstance(node.value, ast.Call):
            self._discarded.add(id(node.value))

    def visit_For(self, node: ast.For) -> None:
        self._loop_names |= {n.id for n in ast.walk(node.target) if isinstance(n, ast.Name)}

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if (
            isinstance(func, ast.Attribute)
            and func.attr in ("cuda", "to")
            and not self.ctx.imports.root_is_import(func.value)
        ):
            self._moves.append((node, func, self.bindings.here(node)))

    def finish(self) -> None:
        if not self.script.builds_accelerator:
            return
        for call, func, where in self._moves:
            if func.attr == "cuda":
                self._report_cuda(call, func, where)
                continue
            device = _device_argument(call)
            if device is not None and self.ctx.semantic.devices.fixed_cuda(device, where):
                name = self.script.accelerator_name(where)
                spelled = name.text if name else "accelerator"
                text = self.ctx.source.segment(device)
                message = f"`.to({text})` pins a fixed CUDA device in an Accelerate script: use `{spelled}.device`"
                fix = self._fix([self.ctx.source.replace(device, f"{spelled}.device")], name is not None, spelled)
                self.report(call, message, fix=fix)

    def _report_cuda(self, call: ast.Call, func: ast.Attribute, where: Where) -> None:
        name = self.script.accelerator_name(where)
        spelled = name.text if name else "accelerator"
        message = (
            "`.cuda()` ties an Accelerate script to CUDA (it fails under `--cpu`, MPS or XPU, and means GPU 0 in "
            f"every process before the Accelerator exists): use `.to({spelled}.device)`"
        )
        src = self.ctx.source
        kept = [src.segment(kw) for kw in call.keywords if kw.arg != "device"]
        new = f".to({', '.join([f'{spelled}.device', *kept])})"
        edit = Edit(new, src.end(func.value), src.end(call))
        moves_itself = (
            id(call) in self._discarded and isinstance(func.value, ast.Name) and func.value.id in self._loop_names
        )
        if moves_itself:  # survey 20e soweli: an object of the script's own, which may have no .to()
            message = (
                f"`{src.segment(func.value)}.cuda()` as a statement moves an object of the script's own in place (a "
                "tensor's would return a copy): once the Accelerator exists it lands on each process's own GPU, but it fails under "
                f"`--cpu`, MPS or XPU: move it to `{spelled}.device` the way its class allows"
            )
        self.report(call, message, fix=self._fix([edit], name is not None and not moves_itself, spelled))

    def _fix(self, edits: list[Edit], possible: bool, spelled: str) -> Fix | None:
        return self.make_fix(f"Use `{spelled}.device`", edits) if possible else None


def _device_argument(call: ast.Call) -> ast.expr | None:
    """The device given to ``.to(...)``: ``device=`` or the first positional argument."""
    for kw in call.keywords:
        if kw.arg == "device":
            return kw.value
    if call.args and not isinstance(call.args[0], ast.Starred):
        return call.args[0]
    return None
