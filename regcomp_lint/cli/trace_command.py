"""``regcomp-lint trace``: get a model and a batch, analyse, print, write the plan and the graph,
apply the plan. The CLI parses flags into :class:`TraceOptions`; everything else happens here.

Unlike the lint and the fixer, this runs the user's code (the factories, or the script up to its
first forward) and needs torch: a missing torch is an error that says how to install it.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

import click

from regcomp_lint.cli.error_handling import EXIT_FINDINGS, EXIT_OK, UsageFailure
from regcomp_lint.errors import install_hint
from regcomp_lint.knowledge.launch_settings import ENVIRONMENT, LAUNCH_FLAGS
from regcomp_lint.plan import Plan


@dataclass
class TraceOptions:
    script: str | None = None
    script_args: tuple[str, ...] = ()
    model: str | None = None
    inputs: str | None = None
    device: str = "auto"
    output_format: str = "text"
    plan: str | None = None
    graph: str | None = None
    apply: bool = False
    check: bool = False
    backend: str = "inductor"
    mode: str | None = None
    dynamic_dim: str = "auto"
    max_seconds: float = 300.0
    tolerance: float = 1e-4
    exit_non_zero_on_break: bool = False
    measure: bool = False
    measure_options: MeasureChoices | None = None


#: the --measure strategies (trace.measure_step.STRATEGIES, spelt here so --help needs no torch)
STRATEGIES = ("eager", "full", "regions", "plan", "nested")


@dataclass
class MeasureChoices:
    """The --measure flags as given; ``trace.measure.MeasureOptions`` is built from them."""

    strategies: tuple[str, ...]
    step: str
    mixed_precision: str
    steps: int
    warmup: int
    optimize: str
    max_seconds: float
    backend: str


def measure_options(
    strategies: str, step: str, mixed_precision: str, steps: int, warmup: int, optimize: str, max_seconds, backend
) -> MeasureChoices:
    names = tuple(dict.fromkeys(n.strip().lower() for n in strategies.split(",") if n.strip()))
    unknown = [n for n in names if n not in STRATEGIES]
    if unknown or not names:
        raise UsageFailure(
            f"--strategies {strategies!r}: {'unknown ' + ', '.join(unknown) if unknown else 'none given'}; "
            f"choose from {', '.join(STRATEGIES)}"
        )
    return MeasureChoices(names, step, mixed_precision, steps, warmup, optimize, max_seconds, backend)


def _require_torch() -> None:
    try:
        import torch  # noqa: F401
    except ImportError:
        raise UsageFailure(
            f"trace needs torch: {install_hint('trace')} (the static lint and regcomp-fix do not)"
        ) from None


def trace(options: TraceOptions) -> int:
    _check_usage(options)
    _check_outputs(options)  # before torch is imported and the model built: a typo costs nothing
    _require_torch()
    import sys

    from regcomp_lint.output.progress import StepLine
    from regcomp_lint.trace.streams import user_output_to_stderr

    progress = StepLine(sys.stderr)
    with user_output_to_stderr():  # the factories, the script and the compiler print to stderr
        data, text, applied, has_breaks = _run(options, progress)
    if options.output_format == "json":
        click.echo(json.dumps(data, indent=2))
    else:
        click.echo(text, nl=False)
    if applied is not None and applied.get("ok") is False:
        return EXIT_FINDINGS
    if options.exit_non_zero_on_break and has_breaks:
        return EXIT_FINDINGS
    return EXIT_OK


def _run(options: TraceOptions, progress) -> tuple[dict, str, dict | None, bool]:
    """Everything up to printing: ``(json data, text report, --apply result, any break)``."""
    from regcomp_lint.trace import devices, report
    from regcomp_lint.trace.analysis import Options, analyze

    device = devices.resolve(options.device)
    with progress.step("building the model and the batch"):
        model, batch, requests = _model_and_batch(options, device)
        model, batch = devices.place(model, batch, device)
    with progress.step("tracing under torch dynamo"):
        analysis = analyze(
            model, batch, device, Options(backend=options.backend, mode=options.mode, dynamic_dim=options.dynamic_dim)
        )
    assert analysis.recommendation is not None  # analyze() always recommends
    plan = analysis.recommendation.plan(analysis.model_name)
    measured = None
    if options.measure:
        measured, plan = _measure(options, device, analysis, plan, progress)
    data = report.to_json(analysis)
    data["plan"] = plan.to_dict()
    if measured is not None:
        data["measure"] = measured
    if requests:
        data["script_requests"] = [{"api": r.api, "kwargs": r.kwargs, "where": r.where, "via": r.via} for r in requests]
    if options.plan:
        _write_text(options.plan, plan.to_json(), "--plan")
    if options.graph:
        from regcomp_lint.trace.graph_output import write_graph

        analysis.regions.graph.graph["device"] = device
        write_graph(analysis.regions.graph, options.graph, report=data)
    applied = None
    if options.apply:
        with progress.step(f"compiling the plan ({plan.strategy}){' and checking it' if options.check else ''}"):
            applied = _apply(model, batch, plan, options)
        data["apply"] = applied
    text = report.to_text(analysis)
    if measured is not None:
        from regcomp_lint.trace import measure_table

        text += "\n" + measure_table.to_text(measured)
    if requests:
        text += "\nThe script asked for:\n" + "".join(
            f"  {r.api}({', '.join(f'{k}={v!r}' for k, v in r.kwargs.items())})  at {r.where}"
            + (f" (built by the {r.via})" if r.via else "")
            + "\n"
            for r in requests
        )
        text += _trainer_advice(requests, plan)
    if options.plan:
        text += f"\nplan written to {options.plan} (apply it: regcomp-fix --plan {options.plan} train.py, or regcomp_lint.apply_plan(model, {options.plan!r}))\n"
    if options.graph:
        text += f"region graph written to {options.graph}\n"
    if applied is not None:
        text += _apply_text(applied)
    return data, text, applied, bool(analysis.breaks)


def _trainer_advice(requests: list, plan: Plan) -> str:
    """How a Trainer script applies a regional recommendation: TrainingArguments has no switch
    for it, the Trainer's plugin reads it from the environment (``knowledge.launch_settings``)."""
    if plan.strategy != "regional" or not any(r.via == "transformers Trainer" for r in requests):
        return ""
    field = "use_regional_compilation"
    return (
        "The Trainer builds its plugin from TrainingArguments, which has no regional switch: set "
        f"{ENVIRONMENT[field]}=1 or start it with accelerate launch {LAUNCH_FLAGS[field]} to apply the "
        "recommendation.\n"
    )


def _check_usage(options: TraceOptions) -> None:
    factories = options.model is not None or options.inputs is not None
    if options.script and factories:
        raise UsageFailure("trace: give a script (regcomp-lint trace train.py -- ARGS) or --model/--inputs, not both")
    if not options.script and not (options.model and options.inputs):
        raise UsageFailure(
            "trace: give a training script (regcomp-lint trace train.py [-- ARGS...]) "
            "or both --model FILE:FACTORY and --inputs FILE:FACTORY"
        )
    if options.check and not options.apply:
        raise UsageFailure("trace: --check compares eager and compiled outputs of --apply: add --apply")
    if options.measure and options.device == "meta":
        raise UsageFailure(
            "trace: --measure runs and times the model; it cannot on the meta device: use --device cpu or cuda"
        )


def _check_outputs(options: TraceOptions) -> None:
    """Refuse an output the run could not write, before the minutes of building and tracing."""
    import os

    from regcomp_lint.trace.graph_output import FORMATS  # networkx only: no torch yet

    if options.graph:
        suffix = os.path.splitext(options.graph)[1].lower()
        if suffix not in FORMATS:
            raise UsageFailure(
                f"--graph {options.graph}: unknown format {suffix or '(no suffix)'!r}; give a file ending in .dot, .json or .html"
            )
        _check_writable(options.graph, "--graph")
    if options.plan:
        _check_writable(options.plan, "--plan")


def _check_writable(path: str, option: str) -> None:
    import os

    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise UsageFailure(f"{option} {path}: is a directory; give a file name")
    if not os.path.isdir(folder):
        raise UsageFailure(f"{option} {path}: the folder {folder} does not exist")
    if os.path.exists(path) and not os.access(path, os.W_OK):
        raise UsageFailure(f"{option} {path}: the file is not writable")
    if not os.path.exists(path) and not os.access(folder, os.W_OK | os.X_OK):
        raise UsageFailure(f"{option} {path}: cannot create a file in {folder} (permission denied)")


def _measure(options: TraceOptions, device: str, analysis, traced, progress):
    """Run the strategies; the measured verdict leads the recommendation's reasons, and the plan
    becomes the measured winner's for the goal of --optimize (the traced plan if none ran)."""
    from regcomp_lint.trace import measure, measure_table

    source: dict = (
        {"script": options.script, "script_args": tuple(options.script_args)}
        if options.script
        else {"model": options.model, "inputs": options.inputs}
    )
    choices = options.measure_options
    measure_options = measure.MeasureOptions(**vars(choices)) if choices else measure.MeasureOptions()
    before = analysis.timings.get("total", 0.0)
    measured = measure.measure(source, traced, device, measure_options, progress, before_s=before)
    verdict = [line for line in measure_table.verdict_lines(measured) if not line.startswith("(")]
    rec = analysis.recommendation
    rec.why[:0] = [f"measured: {line}" for line in verdict]
    winner = measured["winner"] and measure.plan_for(measured["winner"], traced, measure_options.backend)
    if not winner:
        return measured, rec.plan(analysis.model_name)
    if winner.strategy == traced.strategy and winner.regions == traced.regions:
        winner = rec.plan(analysis.model_name)  # the traced reasons still hold
        if measured["winner"] == "nested":
            winner = type(winner).from_dict(dict(winner.to_dict(), method="nested"))
    else:
        winner = type(winner).from_dict(
            dict(winner.to_dict(), why=[f"measured: {line}" for line in verdict], model=analysis.model_name)
        )
        over = f" over {', '.join(rec.regions)}" if rec.regions else ""
        rec.why.insert(
            len(verdict), f"the trace alone suggested {rec.strategy}{over}; the measurement chose {measured['winner']}"
        )
        rec.strategy, rec.regions, rec.plugin = winner.strategy, list(winner.regions), dict(winner.plugin)
        rec.accelerate_splits = True
    return measured, winner


def _model_and_batch(options: TraceOptions, device: str):
    from regcomp_lint.trace.batch import Batch
    from regcomp_lint.trace.loading import build_batch, build_model

    if options.script:
        from regcomp_lint.trace.capture import capture_script

        captured = capture_script(options.script, list(options.script_args), options.max_seconds)
        return captured.model, Batch(tuple(captured.args), dict(captured.kwargs)), captured.requests
    assert options.model is not None and options.inputs is not None  # _check_usage: no script, both factories
    return build_model(options.model, device), build_batch(options.inputs, device), []


def _write_text(path: str, text: str, option: str) -> None:
    from regcomp_lint.trace.errors import TraceError

    try:
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
    except OSError as exc:
        raise TraceError(f"{option} {path}: cannot write: {exc.strerror or exc}") from None


def _apply(model, batch, plan, options: TraceOptions) -> dict:
    """Compile in place as the plan says, run the sample batch, and with --check compare with eager."""
    import torch

    from regcomp_lint.trace.apply import apply_plan
    from regcomp_lint.trace.errors import TraceError
    from regcomp_lint.trace.loading import user_error

    if options.device == "meta" or next((p.device.type for p in model.parameters()), "cpu") == "meta":
        raise TraceError(
            "--apply runs the compiled model: it cannot run on the meta device; trace on cpu or cuda to apply"
        )
    out: dict = {"strategy": plan.strategy, "plugin": dict(plan.plugin)}
    reference = None
    training = model.training
    model.eval()  # dropout would make eager and compiled differ by chance
    try:
        if options.check:
            with torch.no_grad():
                reference = batch.call(model)
        start = time.perf_counter()
        apply_plan(model, plan)
        with torch.no_grad():
            result = batch.call(model)
    except TraceError:
        raise
    except Exception as exc:  # noqa: BLE001 - the compiler on the user's model
        out.update(ok=False, error=user_error(exc))
        return out
    finally:
        model.train(training)
    out["first_call_seconds"] = round(time.perf_counter() - start, 3)
    out["ok"] = True
    if reference is not None:
        diff = max_abs_difference(reference, result)
        out["max_abs_diff"] = diff
        out["tolerance"] = options.tolerance
        out["ok"] = diff is not None and diff <= options.tolerance
    return out


def max_abs_difference(a, b, _seen: set | None = None) -> float | None:
    """Largest |a - b| over the tensors of two outputs of the same structure (None if they differ).

    Containers are walked by key or position; any other object (transformers' ``DynamicCache``
    and its layers) by its attributes, since two runs never return the *same* cache object and
    identity says nothing about the numbers inside.
    """
    import torch

    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        if a.shape != b.shape:
            return None
        if a.numel() == 0:
            return 0.0
        return float((a.detach().float() - b.detach().float()).abs().max())
    seen = set() if _seen is None else _seen
    if (id(a), id(b)) in seen:  # a cycle: counted where it was first met
        return 0.0
    seen.add((id(a), id(b)))
    if isinstance(a, dict) or hasattr(a, "keys") and callable(a.keys):
        if not (isinstance(b, dict) or hasattr(b, "keys") and callable(b.keys)) or set(a.keys()) != set(b.keys()):
            return None
        parts = [max_abs_difference(a[k], b[k], seen) for k in a.keys()]
    elif isinstance(a, (list, tuple)):
        if not isinstance(b, (list, tuple)) or len(a) != len(b):
            return None
        parts = [max_abs_difference(x, y, seen) for x, y in zip(a, b)]
    elif a is None or isinstance(a, (bool, int, float, complex, str, bytes, torch.dtype, torch.device)):
        return 0.0 if type(a) is type(b) and a == b else None
    elif type(a) is type(b) and hasattr(a, "__dict__"):
        fields_a, fields_b = vars(a), vars(b)
        if set(fields_a) != set(fields_b):
            return None
        parts = [max_abs_difference(fields_a[k], fields_b[k], seen) for k in fields_a]
    else:
        return 0.0 if a is b or type(a) is type(b) and a == b else None
    known = [p for p in parts if p is not None]
    if len(known) < len(parts):
        return None
    return max(known, default=0.0)


def _apply_text(applied: dict) -> str:
    if applied.get("ok") is False and "error" in applied:
        return f"\napply: compiling and running failed: {applied['error']}\n"
    line = f"\napply: {applied['strategy']} compiled in place; first call {applied['first_call_seconds']:.1f} s"
    if "max_abs_diff" in applied:
        diff = applied["max_abs_diff"]
        verdict = "ok" if applied["ok"] else "MISMATCH"
        shown = "outputs differ in structure" if diff is None else f"{diff:.3g}"
        line += f"; check: max abs difference vs eager {shown} (tolerance {applied['tolerance']:g}) {verdict}"
    return line + "\n"
