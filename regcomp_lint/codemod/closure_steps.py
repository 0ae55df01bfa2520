"""An LBFGS step over data the conversion shards across processes: refused.

``LBFGS.step(closure)`` calls the closure (forward and backward) until the loss it returns stops
changing (``abs(loss - prev_loss) < tolerance_change``; the strong-Wolfe line search compares
losses too), so how many backward passes one step makes depends on that loss. Once ``prepare()``
shards the training loader, every process computes the loss on its own batch and may stop after a
different number of backward passes; each backward all-reduces the gradients, so the processes'
all-reduces no longer pair up: replica (survey 23d, LBFGS with tolerance_change=1e-3 over a
prepared loader of 8-sample batches, 2 gloo processes): one rank finished its epochs while the other
was still in the closure, which then failed with "Connection closed by peer" (a longer run would
hang, or pair one step's gradients with another's). Over data every process has whole (full-batch
PINNs, a loader the conversion leaves unprepared) every process takes the same path, and the script
converts.
"""

from __future__ import annotations

import ast

from regcomp_lint.codemod.lint_view import LintView
from regcomp_lint.files.parsing import walk
from regcomp_lint.knowledge.torch_api import LOSS_DRIVEN_OPTIMIZERS


def loss_driven_step_refusal(view: LintView, prepared_loaders: list[str]) -> str | None:
    """Why the script is not converted, when it prepares a training loader and steps an LBFGS
    optimizer with a closure."""
    roles, parsed = view.roles, view.parsed
    if not prepared_loaders or roles is None or parsed is None:
        return None
    for node in walk(parsed):
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "step"
            and (node.args or any(kw.arg == "closure" for kw in node.keywords))
        ):
            continue
        owner = node.func.value
        where = view.where_inside(owner)
        bound = roles.bindings.lookup(owner, where) if where is not None else None
        built = bound.value if bound is not None else None
        if not (isinstance(built, ast.Call) and roles.ctx.imports.resolves_to(built.func, *LOSS_DRIVEN_OPTIMIZERS)):
            continue
        return (
            f"{ast.unparse(node)} at line {node.lineno} steps an LBFGS optimizer (built at line {built.lineno}), which "
            "calls the closure until the loss it returns stops changing, while prepare() shards the training loader "
            f"({', '.join(prepared_loaders)}) across processes: each process computes that loss on its own batch, "
            "so the processes can run a different number of backward passes per step and their gradient all-reduces "
            "no longer pair up (a failure or a hang on 2 processes); keep the loader unprepared with the same data "
            "on every process, or convert by hand"
        )
    return None
