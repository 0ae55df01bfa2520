"""The ``regcomp-lint`` command line: options and subcommands only; the work is in ``invocation``.

``regcomp-lint [OPTIONS] [PATH]...`` lints; ``regcomp-lint rule CODE`` and ``regcomp-lint trace``
are subcommands of the same command. A subcommand is recognised only as the very first argument, so
``regcomp-lint ./rule`` or ``regcomp-lint -- rule`` lints a path that happens to be called ``rule``.
"""

from __future__ import annotations

import sys

import click

from regcomp_lint import __version__
from regcomp_lint.cli.error_handling import UsageFailure, handled
from regcomp_lint.output import FORMATS


class LintGroup(click.Group):
    """A group whose own arguments are the paths to lint.

    click would let a ``nargs=-1`` argument swallow the subcommand name, so the first argument
    is checked here: a subcommand name dispatches to it, anything else is parsed as the lint
    command's options and paths.
    """

    allow_interspersed_args = True  # `regcomp-lint train.py --format json`

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] in self.commands:
            click.Command.parse_args(self, ctx, [])  # the lint options keep their defaults
            rest = args[:1], args[1:]
            if hasattr(ctx, "_protected_args"):  # click >= 8.2
                ctx._protected_args, ctx.args = rest
            else:  # pragma: no cover - click 8.1
                # click 8.1 declares protected_args writable; the pinned click types it read-only
                ctx.protected_args, ctx.args = rest  # type: ignore[misc]
            return ctx.args
        return click.Command.parse_args(self, ctx, args)

    def format_usage(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        formatter.write_usage(ctx.command_path, "[OPTIONS] [PATH]...")
        formatter.write_usage(ctx.command_path, "COMMAND [ARGS]...", prefix=" " * len("Usage: "))


class PathsArgument(click.Argument):
    """The paths, left out of subcommands' usage lines (``regcomp-lint rule``, not ``regcomp-lint [PATH]... rule``)."""

    def get_usage_pieces(self, ctx: click.Context) -> list[str]:
        return []


def _selectors(ctx, param, values):
    from regcomp_lint.cli.shared import split_selectors

    return split_selectors(values) if values else None


def _plugin_backend(ctx, param, value):
    """``--backend`` must build a working ``TorchDynamoPlugin`` (the lint's tables: RC101)."""
    from regcomp_lint.knowledge import backends
    from regcomp_lint.knowledge.suggest import did_you_mean

    if value is None or (backends.accelerate_parses(value) and value.lower() not in backends.ACCELERATE_DEAD):
        return value
    hint = did_you_mean(value, backends.ACCELERATE_SUGGESTIONS)
    dead = " (torch no longer registers it)" if value.lower() in backends.ACCELERATE_DEAD else ""
    raise click.BadParameter(
        f"{value!r} is not a TorchDynamoPlugin backend{dead}"
        + (f"; did you mean {hint!r}?" if hint else f"; use one of: {', '.join(backends.ACCELERATE_SUGGESTIONS)}")
    )


def _plugin_mode(ctx, param, value):
    """``--mode`` must be one torch.compile's inductor accepts (the lint's tables: RC102)."""
    from regcomp_lint.knowledge.modes import INDUCTOR_MODES
    from regcomp_lint.knowledge.suggest import did_you_mean

    if value is None or value in INDUCTOR_MODES:
        return value
    hint = did_you_mean(value, INDUCTOR_MODES, separator="-")
    raise click.BadParameter(
        f"{value!r} is not a torch.compile mode"
        + (f"; did you mean {hint!r}?" if hint else f"; use one of: {', '.join(INDUCTOR_MODES)}")
    )


@click.group(
    cls=LintGroup,
    invoke_without_command=True,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.argument("paths", nargs=-1, type=click.Path(), metavar="[PATH]...", cls=PathsArgument)
@click.option(
    "--select",
    multiple=True,
    callback=_selectors,
    metavar="CODES",
    help="Rules to enable, replacing the config's selection: codes, prefixes (RC1), names or ALL. Comma-separated, repeatable.",
)
@click.option(
    "--extend-select",
    multiple=True,
    callback=_selectors,
    metavar="CODES",
    help="Rules to enable on top of the selection.",
)
@click.option("--ignore", multiple=True, callback=_selectors, metavar="CODES", help="Rules to disable.")
@click.option(
    "--format",
    "--output-format",
    "output_format",
    type=click.Choice(list(FORMATS), case_sensitive=False),
    default="text",
    show_default=True,
    help="Output format.",
)
@click.option(
    "--stdin-filename",
    metavar="NAME",
    help="File name for code read from stdin (`-`): shown in output, used for per-file-ignores.",
)
@click.option("--fix", is_flag=True, help="Apply safe fixes in place.")
@click.option(
    "--unsafe-fixes",
    is_flag=True,
    help="Also apply (with --fix) or count as fixable the fixes that may change behaviour.",
)
@click.option(
    "--diff", is_flag=True, help="Print a unified diff of the fixes instead of writing them; exit 1 when there is one."
)
@click.option(
    "--add-noqa",
    is_flag=True,
    help="Write a `# noqa: CODE` comment for every current finding (to adopt the linter on existing code).",
)
@click.option("--statistics", is_flag=True, help="Print how often each rule fired instead of the findings.")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when there are findings (errors still exit 2).")
@click.option(
    "--fail-on",
    type=click.Choice(["error", "warning", "info"], case_sensitive=False),
    help="Least severe finding that makes the exit status 1 (default: the config's `fail-on`, else warning).",
)
@click.option("--no-cache", is_flag=True, help="Neither read nor write the result cache.")
@click.option("-j", "--jobs", type=click.IntRange(min=1), metavar="N", help="Worker processes (default: one per CPU).")
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False),
    metavar="PATH",
    help="Read settings from this file instead of the nearest pyproject.toml.",
)
@click.option("--show-settings", is_flag=True, help="Print the resolved settings as JSON and exit.")
@click.version_option(__version__, "-V", "--version", prog_name="regcomp-lint", message="%(prog)s %(version)s")
@click.pass_context
@handled
def main(
    ctx: click.Context,
    paths,
    select,
    extend_select,
    ignore,
    output_format,
    stdin_filename,
    fix,
    unsafe_fixes,
    diff,
    add_noqa,
    statistics,
    exit_zero,
    fail_on,
    no_cache,
    jobs,
    config_path,
    show_settings,
) -> None:
    """Find torch.compile / Accelerate configuration problems in training scripts.

    Lints PATHs (files or folders, default `.`); `-` reads code from stdin. Never imports torch
    and never runs the code it reads. Exit status: 0 clean (or only findings below `--fail-on`,
    by default info), 1 findings, 2 error.
    """
    if ctx.invoked_subcommand is not None:
        return
    from regcomp_lint.cli.lint_command import LintOptions, lint

    options = LintOptions(
        paths=tuple(paths),
        stdin_filename=stdin_filename,
        select=select,
        extend_select=extend_select or (),
        ignore=ignore or (),
        output_format=output_format.lower(),
        exit_zero=exit_zero,
        fail_on=fail_on.lower() if fail_on else None,
        statistics=statistics,
        add_noqa=add_noqa,
        no_cache=no_cache,
        jobs=jobs,
        config=config_path,
        show_settings=show_settings,
        fix=fix,
        unsafe_fixes=unsafe_fixes,
        diff=diff,
    )
    ctx.exit(lint(options))


@main.command("rule")
@click.argument("code_or_name", required=False, metavar="CODE|NAME")
@click.option("--all", "show_all", is_flag=True, help="Every rule.")
@click.option("--list", "show_list", is_flag=True, help="One line per rule: code, severity, fix, name, summary.")
@click.option(
    "--format",
    "--output-format",
    "output_format",
    type=click.Choice(["text", "json"], case_sensitive=False),
    default="text",
    show_default=True,
    help="Markdown page(s) or JSON.",
)
@click.pass_context
@handled
def rule_command(
    ctx: click.Context, code_or_name: str | None, show_all: bool, show_list: bool, output_format: str
) -> None:
    """Explain a rule: print its page (what it finds, why, examples, fix safety)."""
    from regcomp_lint.checks import ALL_RULES
    from regcomp_lint.lint import rule_docs as docs

    if show_list and code_or_name is None and not show_all and output_format.lower() == "text":
        click.echo(docs.one_line_list(list(ALL_RULES.values())), nl=False)
        return
    if show_all == (code_or_name is not None) or show_list:
        raise UsageFailure(
            "give either a rule code or name (`regcomp-lint rule RC101`), `--all` or `--list` (text only)"
        )
    try:
        rules = list(ALL_RULES.values()) if code_or_name is None else [docs.lookup(code_or_name)]
    except docs.UnknownRule as exc:
        raise UsageFailure(str(exc)) from None
    click.echo(docs.show(rules, output_format.lower(), as_list=show_all), nl=False)


@main.command("trace", context_settings={"ignore_unknown_options": False})
@click.argument("script", required=False, metavar="[SCRIPT]")
@click.argument("script_args", nargs=-1, metavar="[-- ARGS...]")
@click.option(
    "--model",
    "model_ref",
    metavar="FILE_OR_MODULE:FACTORY",
    help="Factory returning the nn.Module (models.py:make_model, pkg.models:build).",
)
@click.option(
    "--inputs",
    "inputs_ref",
    metavar="FILE_OR_MODULE:FACTORY",
    help="Factory returning the batch: a tensor, a tuple (positional) or a dict (keyword arguments).",
)
@click.option(
    "--device",
    type=click.Choice(["auto", "cpu", "cuda", "meta"], case_sensitive=False),
    default="auto",
    show_default=True,
    help="Where to run: auto is cuda when available; meta materialises nothing (models too big for memory).",
)
@click.option(
    "--format",
    "--output-format",
    "output_format",
    type=click.Choice(["text", "json"], case_sensitive=False),
    default="text",
    show_default=True,
    help="Report format.",
)
@click.option(
    "--plan",
    "plan_path",
    type=click.Path(dir_okay=False),
    metavar="PLAN.JSON",
    help="Write the recommended plan (for regcomp-fix --plan and apply_plan).",
)
@click.option(
    "--graph",
    "graph_path",
    type=click.Path(dir_okay=False),
    metavar="OUT.{dot,json,html}",
    help="Write the region graph as DOT, JSON or a self-contained HTML page.",
)
@click.option("--apply", is_flag=True, help="Compile the model in place as recommended and run the sample batch.")
@click.option(
    "--check",
    is_flag=True,
    help="With --apply: compare compiled and eager outputs (max abs difference); exit 1 above --tolerance.",
)
@click.option(
    "--tolerance", type=float, default=1e-4, show_default=True, help="Largest max-abs difference --check accepts."
)
@click.option("--backend", default="inductor", show_default=True, help="Backend the plan compiles with.")
@click.option("--mode", default=None, help="Mode the plan compiles with (default, reduce-overhead, max-autotune, ...).")
@click.option(
    "--dynamic-dim",
    default="auto",
    show_default=True,
    metavar="auto|none|N",
    help="Dimension the second batch shortens to probe shape recompiles (auto: the sequence for token ids, else the batch).",
)
@click.option(
    "--max-seconds",
    type=click.FloatRange(min=0.1),
    default=300.0,
    show_default=True,
    help="Script mode: give up when the script has not called forward by then.",
)
@click.option("--exit-non-zero-on-break", is_flag=True, help="Exit 1 when a graph break was found (for CI).")
@click.option(
    "--measure",
    is_flag=True,
    help="Time each strategy on this model: cold start, warm start, steady step, peak memory, graphs, "
    "breaks, recompiles. Each strategy runs in a fresh process with its own new, empty compiler cache "
    "(TORCHINDUCTOR_CACHE_DIR, which holds the FX graph and AOT autograd caches, and TRITON_CACHE_DIR); "
    "the warm start is a second process reusing that cache. --max-seconds limits each process.",
)
@click.option(
    "--strategies",
    default="eager,full,regions,plan,nested",
    show_default=True,
    metavar="LIST",
    help="With --measure: eager, full (torch.compile), regions (Accelerate's compile_regions), plan "
    "(apply_plan of the traced plan), nested (nested_compile_region, where torch has it).",
)
@click.option(
    "--step",
    "step_kind",
    type=click.Choice(["train", "infer"], case_sensitive=False),
    default="train",
    show_default=True,
    help="With --measure: what a step is: forward, loss, backward and AdamW step (train), or forward under no_grad (infer).",
)
@click.option(
    "--mixed-precision",
    type=click.Choice(["no", "bf16", "fp16"], case_sensitive=False),
    default="no",
    show_default=True,
    help="With --measure: autocast the forward as Accelerator(mixed_precision=...) does (fp16 on CUDA scales the loss).",
)
@click.option("--steps", type=click.IntRange(min=1), default=10, show_default=True, help="With --measure: steps timed.")
@click.option(
    "--warmup", type=click.IntRange(min=0), default=3, show_default=True, help="With --measure: steps before."
)
@click.option(
    "--optimize",
    type=click.Choice(["cold-start", "steady", "balanced"], case_sensitive=False),
    default="balanced",
    show_default=True,
    help="With --measure: the goal the measured winner (written by --plan) serves; balanced is the fastest "
    "cold start among strategies within 5% of the best steady step.",
)
@click.pass_context
@handled
def trace_command(
    ctx: click.Context,
    script,
    script_args,
    model_ref,
    inputs_ref,
    device,
    output_format,
    plan_path,
    graph_path,
    apply,
    check,
    tolerance,
    backend,
    mode,
    dynamic_dim,
    max_seconds,
    exit_non_zero_on_break,
    measure,
    strategies,
    step_kind,
    mixed_precision,
    steps,
    warmup,
    optimize,
) -> None:
    """Run the model once under torch dynamo and report how it really compiles.

    \b
    regcomp-lint trace --model models.py:make_model --inputs models.py:make_batch
    regcomp-lint trace train.py -- --batch-size 8     (runs the script up to its first forward)

    Reports the regions (groups of identical blocks), every graph break with its region, line,
    GB id and matching RC rule, fullgraph=True per region and for the whole model, recompiles
    (per block, and for a shorter batch), and a recommended compilation (--plan writes it).

    Unlike the lint, THIS RUNS YOUR CODE: the factories, or the script until its model's first
    forward (compile and prepare are no-ops while it runs; it is stopped before any backward,
    optimizer step or checkpoint write). Needs torch. Exit status: 0 report, 1 with
    --exit-non-zero-on-break and a break, or --check and a mismatch, 2 error.
    """
    from regcomp_lint.cli.trace_command import TraceOptions, measure_options, trace

    options = TraceOptions(
        script=script,
        script_args=tuple(script_args),
        model=model_ref,
        inputs=inputs_ref,
        device=device.lower(),
        output_format=output_format.lower(),
        plan=plan_path,
        graph=graph_path,
        apply=apply,
        check=check,
        backend=backend,
        mode=mode,
        dynamic_dim=dynamic_dim,
        max_seconds=max_seconds,
        tolerance=tolerance,
        exit_non_zero_on_break=exit_non_zero_on_break,
        measure=measure,
        measure_options=measure_options(
            strategies,
            step_kind.lower(),
            mixed_precision.lower(),
            steps,
            warmup,
            optimize.lower(),
            max_seconds,
            backend,
        ),
    )
    ctx.exit(trace(options))


@click.command(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.argument("paths", nargs=-1, type=click.Path(), metavar="PATH...")
@click.option(
    "--apply",
    is_flag=True,
    help="Write the changes (atomically; encoding, BOM, newlines and mode kept) instead of printing a diff.",
)
@click.option(
    "--diff",
    is_flag=True,
    help="Print the unified diff (the default without --apply; with --apply, of what was written; with `-`, instead of the code).",
)
@click.option(
    "--unsafe-fixes",
    is_flag=True,
    help="Also apply the lint fixes marked unsafe (they may change behaviour) after the conversion.",
)
@click.option(
    "--select",
    multiple=True,
    callback=_selectors,
    metavar="CODES",
    help="Rules whose lint fixes run after the conversion (default: the config's selection). Comma-separated, repeatable.",
)
@click.option(
    "--ignore", multiple=True, callback=_selectors, metavar="CODES", help="Rules whose lint fixes do not run."
)
@click.option(
    "--backend",
    metavar="NAME",
    callback=_plugin_backend,
    help="TorchDynamoPlugin backend (overrides the script and the plan; checked like RC101).",
)
@click.option(
    "--mode",
    metavar="NAME",
    callback=_plugin_mode,
    help="TorchDynamoPlugin mode (default, reduce-overhead, max-autotune, ...; checked like RC102).",
)
@click.option("--fullgraph/--no-fullgraph", default=None, help="Set fullgraph= in the plugin.")
@click.option("--dynamic/--no-dynamic", default=None, help="Set dynamic= in the plugin.")
@click.option(
    "--regional/--no-regional",
    default=None,
    help="Force use_regional_compilation on or off (default: decided from the model).",
)
@click.option(
    "--plan",
    "plan_path",
    type=click.Path(dir_okay=False),
    metavar="PLAN.JSON",
    help="Apply a compilation plan (as written by `regcomp-lint trace`); the flags above override it.",
)
@click.option(
    "--stdin-filename",
    metavar="NAME",
    help="File name for code read from stdin (`-`): shown in messages, used for config.",
)
@click.option(
    "--exit-non-zero-on-fix", is_flag=True, help="With --apply, exit 1 when a file was changed (for pre-commit)."
)
@click.version_option(__version__, "-V", "--version", prog_name="regcomp-fix", message="%(prog)s %(version)s")
@click.pass_context
@handled
def fix_main(
    ctx: click.Context,
    paths,
    apply,
    diff,
    unsafe_fixes,
    select,
    ignore,
    backend,
    mode,
    fullgraph,
    dynamic,
    regional,
    plan_path,
    stdin_filename,
    exit_non_zero_on_fix,
) -> None:
    """Convert training scripts to Accelerate + TorchDynamoPlugin, then apply the selected lint fixes.

    PATHs are files or folders (walked like regcomp-lint: excludes and .gitignore respected); `-`
    reads stdin and writes the result to stdout (the original bytes when nothing changed). Never
    imports torch and never imports or runs the code it rewrites. A script it cannot convert
    completely is left byte-identical, with one line saying why. Only safe fixes by default.
    A file with a `# regcomp-fix: skip` comment line among its first 20 lines, or matching the
    config's `fix-exclude` globs, is not converted (its lint fixes still apply).

    \b
    Exit status without --apply: 0 nothing would change, 1 something would.
    Exit status with --apply: 0 everything fixed; 1 a finding of a selected rule whose fix
    was not applied (an unsafe fix without --unsafe-fixes, or a fix that could not be
    applied; findings without a fix are left to regcomp-lint), or with --exit-non-zero-on-fix
    a file was changed.
    Both: 3 a script was refused (left unchanged; opt it out to pass); 2 error (unreadable,
    read-only or changed-on-disk file, missing path, bad plan or arguments).
    """
    from regcomp_lint.cli.fix_command import FixOptions, fix

    options = FixOptions(
        paths=tuple(paths),
        apply=apply,
        diff=diff,
        unsafe_fixes=unsafe_fixes,
        select=select,
        ignore=ignore or (),
        backend=backend,
        mode=mode,
        fullgraph=fullgraph,
        dynamic=dynamic,
        regional=regional,
        plan=plan_path,
        stdin_filename=stdin_filename,
        exit_non_zero_on_fix=exit_non_zero_on_fix,
    )
    ctx.exit(fix(options))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
