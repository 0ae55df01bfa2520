"""Where a training script runs: the device values it builds and the switches it keeps for them.

RC403 (a fixed CUDA device in an Accelerate script) and ``regcomp-fix`` (which device flags and
CPU switches must keep working once ``accelerator.device`` places everything) read these answers:

- a *fixed CUDA device*: ``"cuda"``, ``"cuda:0"``, ``f"cuda:{rank}"``, ``torch.device("cuda")``,
  ``torch.cuda.current_device()``, a branch of ``"cuda" if ... else "cpu"``, a name bound to one,
  or a call of the script's own function that returns one (d2l's ``get_device()``);
- a *device choice*: ``"cuda" if use_cuda else "cpu"``, whose test reads the script's own names
  (``use_cuda``, ``args`` of ``args.no_cuda``): the CPU switch the converted script keeps. A test
  on imported modules only (``torch.cuda.is_available()``) is Accelerate's own choice, no switch;
- a *device flag*: an attribute named like a device that the script reads (``args.device``,
  ``cfg.train.device``), not a module's (``torch.device``).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from regcomp_lint.analysis.bindings import Bindings, Where
from regcomp_lint.analysis.file_context import FileContext, string_literal
from regcomp_lint.analysis.training_loops import own_nodes
from regcomp_lint.files.parsing import walk
from regcomp_lint.knowledge.torch_api import CUDA_DEVICE_CALLS, TORCH_DEVICE

#: How many names and branches a device value is followed through.
MAX_DEPTH = 30


@dataclass(frozen=True)
class DeviceChoice:
    """``"cuda" if test else "cpu"`` (``cpu_when`` False) or ``"cpu" if test else "cuda"``
    (``cpu_when`` True); ``flags``: the script's own names the test reads, in source order."""

    test: ast.expr
    cpu_when: bool
    flags: tuple[str, ...]


class Devices:
    """The device values of one file (see the module docstring); ``ctx.semantic.devices``."""

    def __init__(self, ctx: FileContext, bindings: Bindings) -> None:
        self.ctx = ctx
        self.bindings = bindings

    def fixed_cuda(self, expr: ast.AST | None, where: Where, depth: int = 0) -> bool:
        """``expr`` certainly names a fixed CUDA device (in at least one branch)."""
        if expr is None or depth > MAX_DEPTH:
            return False
        if isinstance(expr, ast.Constant):
            return isinstance(expr.value, str) and expr.value.strip().lower().startswith("cuda")
        if isinstance(expr, ast.JoinedStr):
            return bool(expr.values) and self.fixed_cuda(expr.values[0], where, depth + 1)
        if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add):
            return self.fixed_cuda(expr.left, where, depth + 1)
        if isinstance(expr, ast.IfExp):
            return self.fixed_cuda(expr.body, where, depth + 1) or self.fixed_cuda(expr.orelse, where, depth + 1)
        if isinstance(expr, ast.Call):
            if self.ctx.resolves_to(expr.func, *CUDA_DEVICE_CALLS):
                return True
            if self.ctx.resolves_to(expr.func, *TORCH_DEVICE):
                arg = expr.args[0] if expr.args else next((kw.value for kw in expr.keywords if kw.arg == "type"), None)
                return self.fixed_cuda(arg, where, depth + 1)
            return self._returns_fixed_cuda(expr, where, depth)
        for bound in self.bindings.candidates(expr, where)[:1]:
            if bound.value is not None and bound.index is None:
                return self.fixed_cuda(bound.value, bound.where, depth + 1)
        return False

    def _returns_fixed_cuda(self, call: ast.Call, where: Where, depth: int) -> bool:
        """``call`` calls a function of the script's own (not a method) that returns a fixed CUDA
        device on some path: d2l's ``get_device()``, ``torch.device(f"cuda:{i}")`` when there is a
        GPU, ``torch.device("cpu")`` otherwise."""
        if not isinstance(call.func, ast.Name):
            return False
        for bound in self.bindings.candidates(call.func, where)[:1]:
            function = bound.value
            if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)) or bound.where.cls is not None:
                return False
            inside = (*bound.where.functions, function)
            return any(
                isinstance(node, ast.Return)
                and self.fixed_cuda(node.value, Where(inside, None, (node.lineno, node.col_offset)), depth + 1)
                for node in own_nodes(function.body)
            )
        return False

    def choice(self, expr: ast.AST | None) -> DeviceChoice | None:
        """``expr`` as a choice between the CPU and another device, when one branch is ``"cpu"``."""
        if not isinstance(expr, ast.IfExp):
            return None
        if _is_cpu(expr.orelse):
            return DeviceChoice(expr.test, False, self.own_names(expr.test))
        if _is_cpu(expr.body):
            return DeviceChoice(expr.test, True, self.own_names(expr.test))
        return None

    def own_names(self, test: ast.AST | None) -> tuple[str, ...]:
        """The script's own names ``test`` reads, in source order (not an imported module such as
        ``torch``; an attribute's name is no name read): none means a test Accelerate makes itself."""
        if test is None:
            return ()
        names = [n for n in _in_source_order(test) if isinstance(n, ast.Name) and not self.ctx.imports.imported(n.id)]
        return tuple(dict.fromkeys(n.id for n in names))

    def flags(self, expr: ast.AST | None) -> list[str]:
        """Device flags ``expr`` reads (``args.device`` in ``torch.device(args.device)``), in source order."""
        if expr is None:
            return []
        # a called name is a function, not a setting: `torch.device(...)` where a star import hides torch
        called = {id(n.func) for n in walk(expr) if isinstance(n, ast.Call)}
        return [
            key
            for node in _in_source_order(expr)
            if id(node) not in called and self.is_flag(node) and (key := _dotted(node)) is not None
        ]

    def is_flag(self, expr: ast.AST | None) -> bool:
        """``expr`` is a device flag: ``args.device``, not ``torch.device`` (see the module docstring)."""
        return (
            isinstance(expr, ast.Attribute)
            and "device" in expr.attr
            and not self.ctx.imports.root_is_import(expr)
            and _dotted(expr) is not None
        )


def _in_source_order(root: ast.AST) -> list[ast.expr]:
    """The expressions in ``root``, an enclosing one before the ones it starts with."""
    nodes = [n for n in walk(root) if isinstance(n, ast.expr)]
    return sorted(nodes, key=lambda n: (n.lineno, n.col_offset))  # stable: ast.walk puts outer nodes first


def _dotted(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return None if base is None else f"{base}.{node.attr}"
    return None


def _is_cpu(node: ast.AST) -> bool:
    return string_literal(node) == "cpu"
