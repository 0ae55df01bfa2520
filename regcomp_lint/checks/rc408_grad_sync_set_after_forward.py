"""RC408 grad-sync-set-after-forward."""

from __future__ import annotations

import ast

from regcomp_lint.analysis.training_loops import own_nodes
from regcomp_lint.checks.base import Invalid, Rule
from regcomp_lint.diagnostics import Severity
from regcomp_lint.files.parsing import split_block
from regcomp_lint.knowledge.torch_api import DDP_GRAD_SYNC_FLAG

_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.Module)


class GradSyncSetAfterForward(Rule):
    """## What it does
    Reports `model.require_backward_grad_sync = ...` set after a call of that same `model`
    and before a `.backward(...)` in the same pass of the loop (or the same function), the
    nanoGPT-style gradient accumulation written in the wrong order:
    `logits, loss = model(x, y)`, then the flag, then `loss.backward()`.

    ## Why is this bad
    `DistributedDataParallel` reads the flag in `forward()`, not in `backward()`: when it is
    true there, the forward arms the reducer (`prepare_for_backward`) and the backward that
    follows all-reduces the gradients; when it is false, that backward only accumulates locally
    (torch 2.13 `nn/parallel/distributed.py`, `_pre_forward` / `_post_forward`). Set after the
    forward, each micro-step syncs as the previous micro-step's flag said: the last micro-step of
    an accumulation does not sync, and the first of the next one does. The ranks step their
    optimizers on different gradients and their weights drift apart, silently (measured on two
    gloo processes with two nanoGPT-style scripts: per-rank weight sums 30.61578414 vs
    30.02697792 after 10 steps, 29.51385969 vs 29.55207500 after 40). On one process the flag is
    never read, so nothing shows.

    ## Example
    ```python
    for micro_step in range(grad_accum_steps):
        logits, loss = model(x, y)
        loss = loss / grad_accum_steps
        if ddp:
            model.require_backward_grad_sync = micro_step == grad_accum_steps - 1
        loss.backward()
    ```

    ## Use instead
    ```python
    for micro_step in range(grad_accum_steps):
        if ddp:
            model.require_backward_grad_sync = micro_step == grad_accum_steps - 1
        logits, loss = model(x, y)
        loss = loss / grad_accum_steps
        loss.backward()
    ```
    or `with model.no_sync():` around the forward and backward of the micro-steps that must
    not sync (under Accelerate: `with accelerator.accumulate(model):`).

    ## Fix safety
    No fix: the flag's value may read names the forward's statements bind, so moving the line
    is left to you.

    ## References
    - [DistributedDataParallel.no_sync](https://docs.pytorch.org/docs/stable/generated/torch.nn.parallel.DistributedDataParallel.html#torch.nn.parallel.DistributedDataParallel.no_sync)
    - [nanoGPT's `train.py`](https://github.com/karpathy/nanoGPT/blob/master/train.py) (the flag set before the forward)
    """

    code = "RC408"
    name = "grad-sync-set-after-forward"
    #: error: on several processes the ranks' weights drift apart, silently
    severity = Severity.ERROR
    message = (
        "`require_backward_grad_sync` set after the model's forward: DDP reads it in forward(), so this "
        "backward syncs as the previous step's flag said; set it before the forward"
    )
    triggers = (DDP_GRAD_SYNC_FLAG,)

    valid = [
        # nanoGPT: the flag before the forward
        "for micro_step in range(n):\n    if ddp:\n        model.require_backward_grad_sync = micro_step == n - 1\n"
        "    logits, loss = model(x, y)\n    loss.backward()\n",
        # set after the backward (for the next pass), not between forward and backward
        "for micro_step in range(n):\n    loss = model(x)\n    loss.backward()\n"
        "    model.require_backward_grad_sync = micro_step + 1 == n - 1\n",
        # a call of another object before it
        "for micro_step in range(n):\n    y = encoder(x)\n    model.require_backward_grad_sync = micro_step == n - 1\n"
        "    loss = model(y)\n    loss.backward()\n",
        # read, not set
        "for micro_step in range(n):\n    loss = model(x)\n    print(model.require_backward_grad_sync)\n    loss.backward()\n",
    ]
    invalid = [
        Invalid(
            "for micro_step in range(grad_accum_steps):\n    x, y = loader.next_batch()\n"
            "    with torch.autocast(device_type='cuda', dtype=torch.bfloat16):\n        logits, loss = model(x, y)\n"
            "    loss = loss / grad_accum_steps\n    if ddp:\n"
            "        model.require_backward_grad_sync = (micro_step == grad_accum_steps - 1)\n    loss.backward()\n",
            message="set after the model's forward",
        ),
        # a scaler's backward, a model kept on self
        Invalid(
            "class Trainer:\n    def step(self, batches):\n        for i, batch in enumerate(batches):\n"
            "            loss = self.model(batch).mean()\n"
            "            self.model.require_backward_grad_sync = i == len(batches) - 1\n"
            "            self.scaler.scale(loss).backward()\n",
        ),
    ]

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            if isinstance(target, ast.Attribute) and target.attr == DDP_GRAD_SYNC_FLAG:
                model = _text(target.value)
                before, after = self._around(node)
                if (
                    model is not None
                    and any(_calls(stmt, model) for stmt in before)
                    and any(_backward(stmt) for stmt in after)
                ):
                    self.report(target)

    def _around(self, node: ast.stmt) -> tuple[list[ast.stmt], list[ast.stmt]]:
        """The statements that run before ``node`` and after it in the same pass of its innermost
        loop (or, outside a loop, in its function)."""
        before: list[ast.stmt] = []
        after: list[ast.stmt] = []
        child: ast.AST = node
        for parent in reversed(self.ctx.ancestors):
            around = split_block(parent, child)
            if around is not None:
                before += around[0]
                after += around[1]
            if isinstance(parent, _LOOPS + _SCOPES):
                break
            child = parent
        return before, after


def _calls(stmt: ast.stmt, model: str) -> bool:
    """``stmt`` calls ``model(...)`` (its forward), as written."""
    return any(isinstance(node, ast.Call) and _text(node.func) == model for node in own_nodes([stmt]))


def _backward(stmt: ast.stmt) -> bool:
    """``stmt`` runs a ``.backward(...)``: ``loss.backward()``, ``scaler.scale(loss).backward()``,
    ``accelerator.backward(loss)``."""
    return any(
        isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "backward"
        for node in own_nodes([stmt])
    )


def _text(expr: ast.expr) -> str | None:
    try:
        return ast.unparse(expr)
    except (ValueError, RecursionError):
        return None
