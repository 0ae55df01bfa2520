"""One ``regcomp-lint [PATH...]`` run: settings, lint (or fix), output, exit status.

Kept apart from ``commands`` so the command-line layer only declares options. Exit status: 0 no
findings at or above ``fail-on`` (default warning: info findings are advice), 1 findings (or, with ``--diff``, changes to make), 2 an error the user must fix
(config, missing path, unreadable or unwritable file).
"""

from __future__ import annotations

import json
import os
import sys
from collections import defaultdict
from dataclasses import dataclass, field

import click

from regcomp_lint.cli import shared
from regcomp_lint.cli.error_handling import EXIT_ERROR, EXIT_FINDINGS, EXIT_OK, echo_error
from regcomp_lint.cli.shared import STDIN
from regcomp_lint.diagnostics import Diagnostic
from regcomp_lint.files.source import DecodeError
from regcomp_lint.files.writeback import WritebackError, snapshot_bytes
from regcomp_lint.lint import runner, scope
from regcomp_lint.lint.config import Settings
from regcomp_lint.lint.engine import lint_source
from regcomp_lint.lint.fix_files import FileFix, fix_file, fix_text, needs_fixing
from regcomp_lint.output import RenderContext, render
from regcomp_lint.output.progress import ProgressLine
from regcomp_lint.output.render_context import color_enabled, plural

STDIN_DISPLAY = "-"


@dataclass
class LintOptions:
    paths: tuple[str, ...] = ()
    stdin_filename: str | None = None
    #: Selectors from the command line, already split on commas; None: not given.
    select: tuple[str, ...] | None = None
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    output_format: str = "text"
    exit_zero: bool = False
    #: ``--fail-on``: overrides the config's ``fail-on``; None: keep it.
    fail_on: str | None = None
    statistics: bool = False
    add_noqa: bool = False
    no_cache: bool = False
    jobs: int | None = None
    config: str | None = None
    show_settings: bool = False
    fix: bool = False
    unsafe_fixes: bool = False
    diff: bool = False


def resolve_settings(opts: LintOptions) -> Settings:
    settings = shared.resolve_settings(
        opts.paths, opts.stdin_filename, opts.config, opts.select, opts.extend_select, opts.ignore
    )
    return settings.with_overrides(fail_on=opts.fail_on) if opts.fail_on else settings


@dataclass
class _Outcome:
    diagnostics: list[Diagnostic] = field(default_factory=list)
    sources: dict[str, str] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    fixes: list[FileFix] = field(default_factory=list)
    stdin_fixed_bytes: bytes | None = None
    files_linted: int = 0


def lint(opts: LintOptions) -> int:
    settings = resolve_settings(opts)
    if opts.show_settings:
        click.echo(json.dumps(settings.to_json(), indent=2))
        return EXIT_OK
    paths = list(opts.paths) or ([STDIN] if opts.stdin_filename else ["."])
    fixing = opts.fix or opts.diff
    outcome = _Outcome()
    if STDIN in paths:
        _lint_stdin(opts, settings, outcome, fixing)
    file_paths = [p for p in paths if p != STDIN]
    missing: list[str] = []
    if file_paths:
        missing = _lint_files(file_paths, opts, settings, outcome, fixing)
    outcome.diagnostics.sort(key=Diagnostic.sort_key)

    if opts.add_noqa:
        return _add_noqa(opts, outcome, missing)
    incomplete = bool(outcome.errors or missing)
    if not settings.enabled:
        outcome.warnings.append("no rules are enabled (the selection ignores every rule): nothing was checked")
    status = _emit_diff(outcome) if opts.diff else _emit_report(opts, settings, outcome, incomplete)
    for message in outcome.warnings:  # cost speed only: reported, status unchanged
        click.echo(f"regcomp-lint: warning: {message}", err=True)
    for message in outcome.errors:
        echo_error(message)
    for path in missing:
        echo_error(f"{path}: no such file or directory")
    if outcome.errors or missing:
        return EXIT_ERROR
    return status


# -- linting ---------------------------------------------------------------------------------
def _lint_stdin(opts: LintOptions, settings: Settings, outcome: _Outcome, fixing: bool) -> None:
    data = shared.read_stdin()
    filename = opts.stdin_filename or STDIN_DISPLAY
    diagnostics = lint_source(data, filename, settings)
    try:
        snap = snapshot_bytes(filename, data)
    except DecodeError:
        snap = None
    if snap is not None:
        outcome.sources[filename] = snap.text
        text = snap.text  # stdin is a project of one file: its own compiles decide the scope
        diagnostics = scope.limit_to_compiled(diagnostics, settings, [filename], lambda _path: text)
    fixed_bytes = data
    if fixing and snap is not None and needs_fixing(diagnostics, opts.unsafe_fixes):
        result = fix_text(snap.text, filename, diagnostics, settings, opts.unsafe_fixes)
        outcome.fixes.append(result)
        diagnostics = result.remaining
        if result.new_text is not None:
            outcome.sources[filename] = result.new_text
            try:
                fixed_bytes = snap.encode(result.new_text)
            except WritebackError as exc:
                outcome.errors.append(str(exc))
    if opts.fix and not opts.diff:
        outcome.stdin_fixed_bytes = fixed_bytes  # `--fix` on stdin always echoes the code, fixed or not
    outcome.diagnostics.extend(diagnostics)
    outcome.files_linted += 1


def _lint_files(paths: list[str], opts: LintOptions, settings: Settings, outcome: _Outcome, fixing: bool) -> list[str]:
    """Lint (and fix) files; return the given paths that do not exist."""
    progress = ProgressLine(sys.stderr) if _stderr_is_tty() else None
    try:
        result = runner.run(paths, settings, jobs=opts.jobs, use_cache=not opts.no_cache, progress=progress)
    finally:
        if progress is not None:
            progress.finish()
    missing = getattr(result, "missing", None)
    if missing is None:  # older runner: find them here
        missing = [p for p in paths if not os.path.lexists(p)]
    missing_set = set(missing)
    outcome.files_linted += result.files
    outcome.warnings.extend(getattr(result, "warnings", []))
    outcome.errors.extend(
        e for e in getattr(result, "errors", []) if not any(e.startswith(f"{m}:") for m in missing_set)
    )
    diagnostics = [d for d in result.diagnostics if d.filename not in missing_set]
    if fixing:
        diagnostics = _fix_files(diagnostics, opts, settings, outcome)
    outcome.diagnostics.extend(diagnostics)
    return list(missing)


def _fix_files(
    diagnostics: list[Diagnostic], opts: LintOptions, settings: Settings, outcome: _Outcome
) -> list[Diagnostic]:
    by_file: dict[str, list[Diagnostic]] = defaultdict(list)
    for diag in diagnostics:
        by_file[diag.filename].append(diag)
    kept: list[Diagnostic] = []
    for filename, found in by_file.items():
        if not needs_fixing(found, opts.unsafe_fixes):
            kept.extend(found)
            continue
        result = fix_file(filename, found, settings, opts.unsafe_fixes, write=not opts.diff)
        outcome.fixes.append(result)
        if result.error:
            outcome.errors.append(result.error)
        kept.extend(result.remaining)
    return kept


def _stderr_is_tty() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def _add_noqa(opts: LintOptions, outcome: _Outcome, missing: list[str]) -> int:
    """``--add-noqa``: suppress every current finding in place; report how many on stderr."""
    from regcomp_lint.lint.add_noqa import add_noqa_file

    if STDIN in opts.paths or (not opts.paths and opts.stdin_filename):
        echo_error("--add-noqa writes files; it does not take code from stdin")
        return EXIT_ERROR
    by_file: dict[str, list[Diagnostic]] = defaultdict(list)
    for diag in outcome.diagnostics:
        by_file[diag.filename].append(diag)
    added = skipped = files = 0
    for filename, found in by_file.items():
        result = add_noqa_file(filename, found)
        if result.error:
            outcome.errors.append(result.error)
            continue
        added += result.added
        skipped += result.skipped
        files += bool(result.added)
    note = f" ({skipped} could not be: fix or suppress them by hand)" if skipped else ""
    click.echo(f"Added {plural(added, 'noqa directive')} in {plural(files, 'file')}{note}.", err=True)
    for message in outcome.errors:
        echo_error(message)
    for path in missing:
        echo_error(f"{path}: no such file or directory")
    return EXIT_ERROR if outcome.errors or missing else EXIT_OK


# -- output ----------------------------------------------------------------------------------
def _render_context(
    opts: LintOptions, settings: Settings, outcome: _Outcome, stream, incomplete: bool
) -> RenderContext:
    return RenderContext(
        incomplete=incomplete,
        files_linted=outcome.files_linted,
        rules_enabled=bool(settings.enabled),
        color=color_enabled(stream),
        unsafe_fixes=opts.unsafe_fixes,
        fix_mode=opts.fix,
        fixed=sum(f.fixed for f in outcome.fixes),
        sources=outcome.sources,
    )


def _emit_report(opts: LintOptions, settings: Settings, outcome: _Outcome, incomplete: bool) -> int:
    # `--fix` on stdin: the fixed code owns stdout, the report goes to stderr
    to_stderr = outcome.stdin_fixed_bytes is not None
    stream = sys.stderr if to_stderr else sys.stdout
    ctx = _render_context(opts, settings, outcome, stream, incomplete)
    if opts.statistics:
        from regcomp_lint.output import statistics

        text = statistics.render(outcome.diagnostics, ctx, as_json=opts.output_format == "json")
    else:
        text = render(opts.output_format, outcome.diagnostics, ctx)
    if outcome.stdin_fixed_bytes is not None:
        shared.write_stdout_bytes(outcome.stdin_fixed_bytes)
    if text:
        click.echo(text, nl=False, err=to_stderr, color=ctx.color)
    if settings.fails(outcome.diagnostics) and not opts.exit_zero:
        return EXIT_FINDINGS
    return EXIT_OK


def _emit_diff(outcome: _Outcome) -> int:
    """``--diff``: the unified diff on stdout, a one-line summary on stderr; 1 when there are changes."""
    diffs = [f.diff for f in outcome.fixes if f.diff]
    if diffs:
        click.echo("".join(diffs), nl=False)
    fixed = sum(f.fixed for f in outcome.fixes)
    if diffs:
        click.echo(
            f"Would fix {plural(fixed, 'finding')} in {plural(len(diffs), 'file')} ({len(outcome.diagnostics)} would remain).",
            err=True,
        )
        return EXIT_FINDINGS
    click.echo(
        f"No fixes to apply ({plural(len(outcome.diagnostics), 'finding')} without an applicable fix).", err=True
    )
    return EXIT_OK
