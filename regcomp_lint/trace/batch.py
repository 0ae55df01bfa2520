"""The sample batch: what the model's forward is called with, and the second batch that probes
recompiles (the same batch, shorter along its dynamic dimension)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from regcomp_lint.trace.errors import TraceError


@dataclass
class Batch:
    """Positional and keyword arguments of one forward call."""

    args: tuple = ()
    kwargs: dict = field(default_factory=dict)

    @classmethod
    def from_value(cls, value: Any, where: str = "the inputs factory") -> Batch:
        """A tensor is one positional argument, a tuple or list the positional arguments, a dict the keywords."""
        import torch

        if isinstance(value, Batch):
            return value
        if isinstance(value, torch.Tensor):
            return cls((value,), {})
        if isinstance(value, (tuple, list)):
            return cls(tuple(value), {})
        if isinstance(value, dict):
            bad = [k for k in value if not isinstance(k, str)]
            if bad:
                raise TraceError(
                    f"{where} returned a dict with a non-string key {bad[0]!r}: keys must be the forward's parameter names"
                )
            return cls((), dict(value))
        raise TraceError(
            f"{where} returned {type(value).__name__}; return a tensor, a tuple of positional arguments or a dict of keyword arguments"
        )

    def tensors(self) -> list:
        import torch

        return [v for v in _leaves(self.args, self.kwargs) if isinstance(v, torch.Tensor)]

    def map(self, fn) -> Batch:
        """The batch with ``fn`` applied to every tensor (nested lists, tuples and dicts followed)."""
        return Batch(tuple(_map(a, fn) for a in self.args), {k: _map(v, fn) for k, v in self.kwargs.items()})

    def to(self, device) -> Batch:
        return self.map(lambda t: t.to(device))

    def call(self, module):
        return module(*self.args, **self.kwargs)

    def describe(self) -> str:
        """``input_ids: int64[2, 64]`` for reports."""
        parts = [_describe(v) for v in self.args] + [f"{k}={_describe(v)}" for k, v in self.kwargs.items()]
        return ", ".join(parts) or "(no arguments)"

    # -- the second batch of the recompile probe --------------------------------------------
    def dynamic_dim(self) -> int | None:
        """The dimension a training job varies: the sequence (dim 1) when there are integer token
        tensors of rank 2, else the batch (dim 0); None when no tensor has it."""
        tensors = self.tensors()
        if any(t.dim() == 2 and not t.is_floating_point() and not t.is_complex() for t in tensors):
            return 1
        return 0 if any(t.dim() >= 1 for t in tensors) else None

    def resized(self, dim: int) -> tuple[Batch, int, int] | None:
        """The batch with every tensor whose size on ``dim`` equals the first one's cut shorter
        (a slice: the values stay valid token ids, labels, pixels); ``(batch, old, new)``, or None
        when the size is 1 and cannot shrink."""
        sized = [t for t in self.tensors() if t.dim() > dim]
        if not sized:
            return None
        old = sized[0].shape[dim]
        if old < 2:
            return None
        new = max(1, (old * 3) // 4) if old > 2 else 1

        def cut(t):
            if t.dim() > dim and t.shape[dim] == old:
                # a copy, not narrow()'s view: forward code such as ``targets.view(-1)`` needs
                # contiguous tensors, as a real batch of that size would be
                return t.narrow(dim, 0, new).contiguous()
            return t

        return self.map(cut), old, new


def _leaves(args, kwargs):
    """The non-container values, in argument order (``resized`` goes by the first tensor)."""
    stack = list(args) + list(kwargs.values())
    stack.reverse()
    while stack:
        value = stack.pop()
        if isinstance(value, (list, tuple)):
            stack.extend(reversed(value))
        elif isinstance(value, dict):
            stack.extend(reversed(list(value.values())))
        else:
            yield value


def _map(value, fn):
    import torch

    if isinstance(value, torch.Tensor):
        return fn(value)
    if isinstance(value, tuple):
        return tuple(_map(v, fn) for v in value)
    if isinstance(value, list):
        return [_map(v, fn) for v in value]
    if isinstance(value, dict):
        return {k: _map(v, fn) for k, v in value.items()}
    return value


def _describe(value) -> str:
    import torch

    if isinstance(value, torch.Tensor):
        dtype = str(value.dtype).removeprefix("torch.")
        return f"{dtype}[{', '.join(str(s) for s in value.shape)}]"
    if isinstance(value, (list, tuple)):
        return "(" + ", ".join(_describe(v) for v in value) + ")"
    return repr(value) if len(repr(value)) < 40 else type(value).__name__
