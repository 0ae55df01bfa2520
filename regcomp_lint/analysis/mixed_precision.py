"""A training script's own mixed precision: the ``GradScaler`` s it builds (it scales its loss
itself) and its ``autocast`` regions, each with its device and dtype.

``regcomp-fix`` reads it to keep one loss scaling, never two (a script with its own
``GradScaler`` gets ``Accelerator(mixed_precision="no")``); the lint reads the same answer.

An autocast is a call of ``torch.autocast``/``torch.amp.autocast`` (``device_type`` first,
``dtype=None``: the device's default) or of the deprecated ``torch.cuda.amp.autocast`` /
``torch.cpu.amp.autocast`` (``enabled`` first, the device fixed). Its *regions* are the ``with``
statements that enter it, directly or through a name it was put in (nanoGPT:
``ctx = nullcontext() if device_type == "cpu" else torch.amp.autocast(...)`` ... ``with ctx:``).

Fed by the engine's walk through :class:`~regcomp_lint.analysis.training_roles.TrainingRoles`.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from regcomp_lint.analysis.bindings import Bindings, Where, binding_key
from regcomp_lint.analysis.file_context import FileContext, keyword_value, string_literal
from regcomp_lint.analysis.name_resolution import last_parts
from regcomp_lint.files.parsing import walk
from regcomp_lint.knowledge.torch_api import (
    AUTOCAST,
    AUTOCAST_DEFAULT_DTYPES,
    DEVICE_AUTOCASTS,
    GRAD_SCALERS,
    HALF_DTYPES,
)

#: what a call must be named to be a grad scaler or an autocast (see ``ImportMap.last_part``)
_LAST_PARTS = last_parts(GRAD_SCALERS, AUTOCAST, *DEVICE_AUTOCASTS.values())


@dataclass
class Autocast:
    """One autocast call. ``device``: its device type when written as a literal or fixed by the
    class (``"cuda"``), else None; ``dtype``: the ``dtype`` argument (None: the device's
    default); ``regions``: the ``with`` statements that enter it."""

    call: ast.Call
    device: str | None
    dtype: ast.expr | None
    regions: list[ast.With | ast.AsyncWith] = field(default_factory=list)


class MixedPrecision:
    """The loss scalers and autocasts of one file (see the module docstring)."""

    def __init__(self, ctx: FileContext, bindings: Bindings) -> None:
        self.ctx = ctx
        self.bindings = bindings
        #: ``torch.amp.GradScaler(...)`` calls: the script scales its loss itself
        self.grad_scalers: list[ast.Call] = []
        self.autocasts: list[Autocast] = []
        self._by_call: dict[int, Autocast] = {}
        self._withs: list[tuple[ast.With | ast.AsyncWith, Where]] = []
        self._regions_found = False

    # -- feeding, from the walk ------------------------------------------------------------
    def visit_call(self, node: ast.Call) -> None:
        if self.ctx.imports.last_part(node.func) not in _LAST_PARTS:
            return  # (every call of the file comes here: most are named nothing below)
        if self.ctx.resolves_to(node.func, *GRAD_SCALERS):
            self.grad_scalers.append(node)
            return
        found = self._autocast(node)
        if found is not None:
            self.autocasts.append(found)
            self._by_call[id(node)] = found

    def visit_with(self, node: ast.With | ast.AsyncWith) -> None:
        self._withs.append((node, self.bindings.here(node)))

    def _autocast(self, call: ast.Call) -> Autocast | None:
        func = call.func
        if self.ctx.resolves_to(func, *AUTOCAST):
            first = call.args[0] if call.args else keyword_value(call, "device_type")
            device = string_literal(first) if first is not None else None
            return Autocast(call, device, _dtype_argument(call, 1))
        for device, names in DEVICE_AUTOCASTS.items():
            if self.ctx.resolves_to(func, *names):
                return Autocast(call, device, _dtype_argument(call, 1))
        return None

    # -- questions, after the walk -----------------------------------------------------------
    @property
    def scales_loss(self) -> bool:
        """The script builds its own ``GradScaler``."""
        return bool(self.grad_scalers)

    def regions(self) -> list[Autocast]:
        """Every autocast, with the ``with`` statements that enter it."""
        if not self._regions_found:
            self._regions_found = True
            for node, where in self._withs:
                for item in node.items:
                    for autocast in self._entered(item.context_expr, where):
                        if all(region is not node for region in autocast.regions):
                            autocast.regions.append(node)
        return self.autocasts

    def _entered(self, expr: ast.expr, where: Where) -> list[Autocast]:
        """The autocasts a ``with`` item enters: the call itself, or what its name may hold."""
        values: list[ast.AST] = [expr]
        if binding_key(expr) is not None:
            values += [b.value for b in self.bindings.every_binding(expr, where) if b.value is not None]
        return [self._by_call[id(node)] for value in values for node in walk(value) if id(node) in self._by_call]

    def dtype_name(self, autocast: Autocast) -> str | None:
        """``float16`` or ``bfloat16``: the dtype the autocast runs in when the source tells
        (``dtype=torch.bfloat16``, or no dtype on a known device); None when it does not."""
        dtype = autocast.dtype
        if dtype is None:
            return AUTOCAST_DEFAULT_DTYPES.get(autocast.device or "")
        if isinstance(dtype, ast.Attribute) and self.ctx.resolves_to(dtype, *(f"torch.{n}" for n in HALF_DTYPES)):
            return HALF_DTYPES[dtype.attr]
        return None


def _dtype_argument(call: ast.Call, position: int) -> ast.expr | None:
    """``dtype=`` or the positional argument at ``position``; None (the default) when absent or ``None``."""
    value = keyword_value(call, "dtype")
    if value is None and len(call.args) > position and not isinstance(call.args[position], ast.Starred):
        value = call.args[position]
    if isinstance(value, ast.Constant) and value.value is None:
        return None
    return value
