"""``--device auto|cpu|cuda|meta``: where the model and the batch run.

On ``meta`` nothing is materialised: dynamo traces with fake tensors, so shapes, graphs and
breaks are known; code that reads tensor values eagerly cannot run there, and the parts of the
report that need it say "unknown" instead of failing.
"""

from __future__ import annotations

from regcomp_lint.trace.errors import TraceError

DEVICES = ("auto", "cpu", "cuda", "meta")


def resolve(device: str) -> str:
    import torch

    device = device.lower()
    if device not in DEVICES:
        raise TraceError(f"--device {device!r}: choose one of {', '.join(DEVICES)}")
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise TraceError(
            "--device cuda: no CUDA GPU is available here (torch.cuda.is_available() is False); "
            "use --device cpu, or --device meta for a model too big for memory"
        )
    return device


def place(model, batch, device: str):
    """Move the model and the batch (a model built on meta stays there)."""
    try:
        model = model.to(device)
        batch = batch.to(device)
    except Exception as exc:  # noqa: BLE001 - e.g. out of memory, or meta -> cpu
        raise TraceError(f"cannot move the model or the batch to {device}: {type(exc).__name__}: {exc}") from None
    return model, batch
