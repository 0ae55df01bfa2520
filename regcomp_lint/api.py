"""Library entry points shared by the CLI, pre-commit, editors and tests.

Static lint never imports torch and never imports or executes the files it reads.
"""

from __future__ import annotations

from regcomp_lint.diagnostics import Diagnostic
from regcomp_lint.lint.config import Settings
from regcomp_lint.lint.engine import lint_source
from regcomp_lint.lint.fixes import fix_source

__all__ = ["lint_source", "fix_source", "lint_paths", "trace_model", "recommend", "apply_plan"]


def lint_paths(paths, config: Settings | None = None, **options) -> list[Diagnostic]:
    """Lint files and directories (recursively, ``*.py``), honouring excludes and the cache.

    The files found are the project: RC2xx/RC3xx findings stay only in files a compile of the
    project reaches, unless selected explicitly (``lint.scope``). ``lint_source`` judges one text
    on its own and reports them everywhere."""
    from regcomp_lint.lint.runner import run

    return run(list(paths), config or Settings(), **options).diagnostics


# -- runtime (``trace``): these import torch, and run the model they are given -----------------


def trace_model(
    model,
    example_inputs,
    *,
    device: str | None = None,
    backend: str = "inductor",
    mode: str | None = None,
    dynamic_dim: str = "auto",
):
    """Run ``model`` on ``example_inputs`` (a tensor, a tuple of positional arguments or a dict of
    keyword arguments) under dynamo and return the full :class:`~regcomp_lint.trace.analysis.Analysis`.

    ``device`` None keeps the model where it is; otherwise ``cpu``, ``cuda``, ``meta`` or ``auto``.
    """
    from regcomp_lint.trace import devices
    from regcomp_lint.trace.analysis import Options, analyze
    from regcomp_lint.trace.batch import Batch

    batch = Batch.from_value(example_inputs, "example_inputs")
    if device is None:
        device = next((p.device.type for p in model.parameters()), "cpu")
    else:
        device = devices.resolve(device)
        model, batch = devices.place(model, batch, device)
    return analyze(model, batch, device, Options(backend=backend, mode=mode, dynamic_dim=dynamic_dim))


def recommend(model, example_inputs, **options):
    """The compilation :class:`~regcomp_lint.plan.Plan` for ``model`` (see :func:`trace_model` for
    the options); ``plan.dump(path)`` writes what ``regcomp-fix --plan`` and :func:`apply_plan` read."""
    analysis = trace_model(model, example_inputs, **options)
    return analysis.recommendation.plan(analysis.model_name)


def apply_plan(model, plan):
    """Compile ``model`` in place as ``plan`` (a Plan or a plan file's path) says; returns ``model``."""
    from regcomp_lint.trace.apply import apply_plan as _apply_plan

    return _apply_plan(model, plan)
