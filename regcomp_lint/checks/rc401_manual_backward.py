"""RC401 manual-backward."""

from __future__ import annotations

import ast

from regcomp_lint.analysis.accelerate_script import (
    AcceleratorName,
)
from regcomp_lint.analysis.bindings import Where
from regcomp_lint.checks.base import Invalid, Rule
from regcomp_lint.diagnostics import Applicability, Fix, Severity

#: Name parts of objects whose ``.backward(x)`` takes the loss (an accelerator, DeepSpeed's
#: ``model_engine``, Lightning's ``fabric``), not a tensor's gradient.
ENGINE_HINTS = ("accel", "engine", "fabric")


class ManualBackward(Rule):
    """## What it does
    Reports `X.backward()` for any expression `X` (`loss.backward()`,
    `(loss / accum).backward()`, `F.cross_entropy(out, y).backward()`) in a file that builds an
    `Accelerator`, and rewrites it as `accelerator.backward(X)`, spelled with the name the
    accelerator has where the call is (`accelerator`, `acc`, `self.accelerator`). Keyword
    arguments are carried over (`loss.backward(retain_graph=True)` becomes
    `accelerator.backward(loss, retain_graph=True)`).

    Not reported: `accelerator.backward(loss)`, `torch.autograd.backward(...)` (or any module's
    `backward`), files without an `Accelerator(...)`, and a `.backward(x)` with a positional
    argument when the receiver may be an accelerator or an engine (its name starts with `acc`
    or contains `accel`, `engine` or `fabric`, or it holds an `Accelerator`), since that is the
    loss being passed, not a tensor's gradient.

    ## Why is this bad
    `accelerator.backward` is where Accelerate does its part of the backward pass: it divides the
    loss by `gradient_accumulation_steps` (except under DeepSpeed, whose engine does it), scales
    it with the `GradScaler` of fp16 mixed precision, hands it to DeepSpeed's engine, and under
    Megatron-LM leaves it to Megatron's own train step. A bare `loss.backward()` works on one
    CPU in fp32, silently sums unscaled gradients (N times too large) once the script is launched
    with gradient accumulation, bypasses DeepSpeed's engine, and with fp16 on a GPU stops at the
    first `optimizer.step()`: the prepared optimizer calls `GradScaler.step`, which raises
    `AssertionError: Attempted step but _scale is None` when `scale(loss)` never ran.

    ## Example
    ```python
    accelerator = Accelerator(gradient_accumulation_steps=4)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    for x, y in loader:
        (F.cross_entropy(model(x), y) / 4).backward()
    ```

    ## Use instead
    ```python
    for x, y in loader:
        accelerator.backward(F.cross_entropy(model(x), y) / 4)
    ```

    ## Fix safety
    Safe when the accelerator's name is certain where the call is: a name or `self.` attribute
    bound to an `Accelerator(...)` of this file (or a parameter annotated `Accelerator`), the
    only one visible there. With Accelerate's defaults (fp32, no gradient accumulation, no
    DeepSpeed) `accelerator.backward(loss)` runs exactly `loss.backward()`; with those features
    on it does what the configuration asks for. Parentheses around `X` are dropped or added as
    the call needs. Unsafe when the name is only guessed (an unannotated parameter called
    `accelerator`) or when `X` is `scaler.scale(loss)`: Accelerate scales fp16 losses itself, so
    a hand-made `GradScaler` should go (the fix keeps it). No fix when no accelerator name is
    visible, two different accelerators are, or the call passes the gradient positionally.

    ## References
    - [`Accelerator.backward`](https://huggingface.co/docs/accelerate/package_reference/accelerator#accelerate.Accelerator.backward)
    - [Accelerate: migrating your code](https://huggingface.co/docs/accelerate/basic_tutorials/migration)
    """

    code = "RC401"
    name = "manual-backward"
    severity = Severity.ERROR
    message = "`.backward()` in an Accelerate script: call `accelerator.backward(loss)`"
    triggers = ("Accelerator",)
    fix_applicability = Applicability.SAFE

    valid = [
        "from accelerate import Accelerator\naccelerator = Accelerator()\naccelerator.backward(loss)\n",
        "from accelerate import Accelerator\nclass T:\n    def __init__(self):\n        self.accelerator = Accelerator()\n"
        "    def step(self, loss):\n        self.accelerator.backward(loss, retain_graph=True)\n",
        # no Accelerator in the file: plain PyTorch
        "import torch\nloss = model(x).sum()\nloss.backward()\n",
        "from accelerate import Accelerator\nimport torch\nacc = Accelerator()\ntorch.autograd.backward([loss])\n",
        "from accelerate import Accelerator\nfrom torch import autograd\nacc = Accelerator()\nautograd.backward(loss)\n",
        # an accelerator that arrives as a parameter, passed the loss
        "from accelerate import Accelerator\nacc = Accelerator()\ndef step(accel: Accelerator, loss):\n    accel.backward(loss)\n",
        "from accelerate import Accelerator\nacc = Accelerator()\ndef step(model_engine, loss):\n    model_engine.backward(loss)\n",
        # not accelerate's Accelerator
        "from mylib import Accelerator\nacc = Accelerator()\nloss.backward()\n",
        # a reference, not a call
        "from accelerate import Accelerator\nacc = Accelerator()\nhook = loss.backward\n",
    ]
    invalid = [
        Invalid(
            "from accelerate import Accelerator\naccelerator = Accelerator()\nfor x, y in loader:\n"
            "    loss = criterion(model(x), y)\n    loss.backward()\n",
            fixed="from accelerate import Accelerator\naccelerator = Accelerator()\nfor x, y in loader:\n"
            "    loss = criterion(model(x), y)\n    accelerator.backward(loss)\n",
            message="accelerator.backward(loss)",
        ),
        # a scaled loss loses its now-useless parentheses; any expression works
        Invalid(
            "import accelerate\nimport torch.nn.functional as F\nacc = accelerate.Accelerator()\n"
            "(loss / accum).backward()\nF.cross_entropy(out, y).backward()\nloss.div(n).backward()\n",
            fixed="import accelerate\nimport torch.nn.functional as F\nacc = accelerate.Accelerator()\n"
            "acc.backward(loss / accum)\nacc.backward(F.cross_entropy(out, y))\nacc.backward(loss.div(n))\n",
            count=3,
            message="`acc.backward(loss / accum)`",
        ),
        # keyword arguments are carried; a tuple keeps its parentheses
        Invalid(
            "from accelerate import Accelerator as A\nacc = A()\nloss.backward(retain_graph=True)\n(a, b)[0].backward(inputs=[w])\n",
            fixed="from accelerate import Accelerator as A\nacc = A()\nacc.backward(loss, retain_graph=True)\nacc.backward((a, b)[0], inputs=[w])\n",
            count=2,
        ),
        # a trainer class: self.accelerator
        Invalid(
            "from accelerate import Accelerator\nclass Trainer:\n    def __init__(self):\n        self.accelerator = Accelerator()\n"
            "    def train(self):\n        for batch in self.loader:\n            self.model(**batch).loss.backward()\n",
            fixed="from accelerate import Accelerator\nclass Trainer:\n    def __init__(self):\n        self.accelerator = Accelerator()\n"
            "    def train(self):\n        for batch in self.loader:\n            self.accelerator.backward(self.model(**batch).loss)\n",
            message="self.accelerator.backward",
        ),
        # the accelerator is passed in, annotated: still certain
        Invalid(
            "from accelerate import Accelerator\ndef train(accelerator: Accelerator, model, loader):\n"
            "    for batch in loader:\n        model(**batch).loss.backward()\n"
            "def main():\n    train(Accelerator(), model, loader)\n",
            fixed="from accelerate import Accelerator\ndef train(accelerator: Accelerator, model, loader):\n"
            "    for batch in loader:\n        accelerator.backward(model(**batch).loss)\n"
            "def main():\n    train(Accelerator(), model, loader)\n",
        ),
        # a hand-made GradScaler: reported, fixed only with unsafe fixes
        Invalid(
            "import torch\nfrom accelerate import Accelerator\naccelerator = Accelerator()\nscaler = torch.amp.GradScaler()\n"
            "scaler.scale(loss).backward()\n",
            fixed="import torch\nfrom accelerate import Accelerator\naccelerator = Accelerator()\nscaler = torch.amp.GradScaler()\n"
            "accelerator.backward(scaler.scale(loss))\n",
            message="drop the `GradScaler`",
        ),
        # no accelerator name visible where the call is: reported, not fixed
        Invalid(
            "from accelerate import Accelerator\ndef step(loss):\n    loss.backward()\ndef main():\n    accelerator = Accelerator()\n",
        ),
        # two accelerators visible: which one is the author's call
        Invalid(
            "from accelerate import Accelerator\nteacher_acc = Accelerator()\nstudent_acc = Accelerator()\nloss.backward()\n"
        ),
        # the gradient passed positionally: reported, fixed by hand
        Invalid(
            "from accelerate import Accelerator\naccelerator = Accelerator()\nout.backward(torch.ones_like(out))\n",
            message="gradient",
        ),
    ]

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.script = ctx.semantic.accelerate_script
        self.bindings = self.script.bindings
        self._calls: list[tuple[ast.Call, ast.Attribute, Where]] = []  # (call, its callee, where)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if (
            isinstance(func, ast.Attribute)
            and func.attr == "backward"
            and not self.ctx.imports.root_is_import(func.value)
        ):
            self._calls.append((node, func, self.bindings.here(node)))

    def finish(self) -> None:
        if not self.script.builds_accelerator:
            return
        for call, func, where in self._calls:
            receiver = func.value
            if self.script.accelerator_of(receiver, where) is not None:
                continue
            if call.args and _may_take_the_loss(receiver):
                continue
            self._report(call, receiver, where)

    def _report(self, call: ast.Call, receiver: ast.expr, where: Where) -> None:
        name = self.script.accelerator_name(where)
        spelled = name.text if name else "accelerator"
        if call.args:
            message = (
                f"`.backward(gradient)` in an Accelerate script: call `{spelled}.backward(loss, gradient=...)` "
                "so Accelerate can scale and accumulate"
            )
            self.report(call, message)
            return
        loss = _argument_text(self.ctx.source.segment(receiver), receiver)
        rest = self._keywords_text(call)
        new = f"{spelled}.backward({loss}{', ' + rest if rest else ''})"
        scaled = _is_scaler_call(receiver)
        if scaled:
            message = (
                f"`.backward()` of a `GradScaler`-scaled loss in an Accelerate script: drop the `GradScaler` "
                f'(use `mixed_precision="fp16"`) and call `{spelled}.backward(loss)`'
            )
        else:
            message = f"`.backward()` in an Accelerate script: call `{new if len(new) <= 60 else spelled + '.backward(loss)'}`"
        self.report(call, message, fix=self._fix(call, new, name, scaled))

    def _fix(self, call: ast.Call, new: str, name: AcceleratorName | None, scaled: bool) -> Fix | None:
        if name is None:
            return None
        unsafe = scaled or not name.certain
        return self.make_fix(
            f"Call `{name.text}.backward(...)`",
            [self.ctx.source.replace(call, new)],
            Applicability.UNSAFE if unsafe else Applicability.SAFE,
        )

    def _keywords_text(self, call: ast.Call) -> str:
        """The call's keyword arguments as written (comments and layout kept)."""
        if not call.keywords:
            return ""
        src = self.ctx.source
        inside = src.text_between(src.end(call.func), src.end(call)).strip()
        return inside[1:-1].strip().rstrip(",").strip()


def _may_take_the_loss(receiver: ast.expr) -> bool:
    """``x.backward(arg)`` on something that may be an accelerator or an engine (DeepSpeed's
    ``model_engine.backward(loss)``), whose positional argument is the loss."""
    name = (
        receiver.attr if isinstance(receiver, ast.Attribute) else receiver.id if isinstance(receiver, ast.Name) else ""
    )
    lowered = name.lower().lstrip("_")
    return lowered.startswith("acc") or any(hint in lowered for hint in ENGINE_HINTS)


def _is_scaler_call(receiver: ast.expr) -> bool:
    return isinstance(receiver, ast.Call) and isinstance(receiver.func, ast.Attribute) and receiver.func.attr == "scale"


def _argument_text(text: str, node: ast.expr) -> str:
    """``text`` (the source of ``node``) as a call's only argument: parenthesised only when it
    would otherwise not parse as that one argument (a bare tuple, ``yield``, a starred item)."""
    try:
        parsed = ast.parse(f"f({text}\n)", mode="eval").body
    except SyntaxError:
        return f"({text})"
    if (
        isinstance(parsed, ast.Call)  # (always: it is ``f(...)``)
        and len(parsed.args) == 1
        and not parsed.keywords
        and ast.dump(parsed.args[0]) == ast.dump(node)
    ):
        return text
    return f"({text})"
