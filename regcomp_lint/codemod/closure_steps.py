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

from regcomp_lint.analysis.bindings import Where
from regcomp_lint.codemod.lint_view import LintView
from regcomp_lint.files.parsing import walk
from regcomp_lint.knowledge.torch_api import LOSS_DRIVEN_OPTIMIZERS

_BY_HAND = "; keep the loader unprepared with the same data on every process, or convert by hand"


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
            f"no longer pair up (a failure or a hang on 2 processes){_whole_set(view, prepared_loaders, where)}"
        )
    return None


def _whole_set(view: LintView, loaders: list[str], where: Where | None) -> str:
    """For the refusal: the batch size of each loader built with one. A batch that holds the whole
    set makes the step exact with the loader left unprepared (survey 23d's ParWH trainer, 95 samples
    in one batch of 95: the same losses and closure calls on every rank, measured), but the set's
    length is known only when the script runs."""
    roles = view.roles
    if roles is None or where is None:
        return _BY_HAND
    sizes: list[str] = []
    for loader in loaders:
        bound = roles.bindings.lookup(ast.Name(id=loader), where)
        call = bound.value if bound is not None and bound.index is None else None
        size = _batch_size(call) if isinstance(call, ast.Call) else None
        if size is not None:
            sizes.append(f"{loader}: batch_size={ast.unparse(size)}")
    if not sizes:
        return _BY_HAND
    return (
        f". If one batch holds the whole data set ({'; '.join(sizes)}; the set's length is known only when the "
        "script runs), the loader left unprepared gives every process all of it and the same path through the "
        "closure: convert by hand that way"
    )


def _batch_size(call: ast.Call) -> ast.expr | None:
    """``batch_size=`` of a ``DataLoader(dataset, batch_size, ...)`` call, by keyword or position."""
    keyword = next((kw.value for kw in call.keywords if kw.arg == "batch_size"), None)
    if keyword is not None:
        return keyword
    return call.args[1] if len(call.args) > 1 and not isinstance(call.args[1], ast.Starred) else None
