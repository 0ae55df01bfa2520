"""One ``regcomp-fix PATH...`` run: read, convert, apply lint fixes, then diff or write; exit status.

Kept apart from ``cli.py`` (which only declares options), as ``invocation`` is for lint.

Per file:

1. read the bytes (``writeback.read``: encoding, BOM and newlines are kept);
2. convert with the libcst codemod (``codemod.convert.convert_source``); a refusal leaves the
   file byte-identical and stops there;
3. apply the fixes of the selected lint rules (``lint.fixes.fix_source``: safe ones, plus unsafe ones
   with ``--unsafe-fixes``) to the converted text, e.g. RC401, RC105, RC002;
4. without ``--apply`` print a unified diff; with ``--apply`` write atomically
   (``writeback.write``) and print one line.

A file that holds no training step (no ``X.backward()``) is not a training script: it is not
converted and not counted as a refusal, but the lint fixes still apply to it (unless it hands its
model to a trainer of its own project that it imports: that is a refusal naming the trainer,
``codemod.delegated_loop``). Nor is a file the
user opted out of conversion: a ``# regcomp-fix: skip`` comment line among its first
``SKIP_COMMENT_LINES`` lines, or a match of the config's ``fix-exclude`` globs. A settings file
the lint reads (``run.sh``, ``default_config.yaml``, a Makefile, a Dockerfile, ``.env``) gets
its lint fixes only.

Exit status (``EXIT_REFUSED`` first: a refusal needs the user, not a rerun):

- 2 an error (unreadable, read-only or changed-on-disk file, missing path, bad plan, bad
  arguments);
- 3 a script was refused (left byte-identical); opt it out to make the run pass;
- without ``--apply``: 0 nothing would change, 1 something would change (``--check``
  convention);
- with ``--apply``: 0 everything fixed, 1 something could not be fixed: a finding of a selected
  rule that has a fix which was not applied (unsafe without ``--unsafe-fixes``, or one that could
  not be applied); findings without any fix are ``regcomp-lint``'s to report and do not count.
  ``--exit-non-zero-on-fix`` makes a run that changed something exit 1 too (the pre-commit hook
  uses it).
"""

from __future__ import annotations

import difflib
import gc
import re
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import click

from regcomp_lint.analysis.compiled_scope import compiles
from regcomp_lint.cli.error_handling import (
    EXIT_ERROR,
    EXIT_FINDINGS,
    EXIT_OK,
    ISSUES_URL,
    UsageFailure,
    echo_error,
)
from regcomp_lint.cli.shared import STDIN, read_stdin, resolve_settings, write_stdout_bytes
from regcomp_lint.codemod.convert import convert_source
from regcomp_lint.codemod.options import NO_TRAINING_STEP, ConvertOptions
from regcomp_lint.diagnostics import Applicability, Diagnostic
from regcomp_lint.files import writeback
from regcomp_lint.files.discovery import discover
from regcomp_lint.files.kinds import Kind, kind_of
from regcomp_lint.files.parsing import shared_parses
from regcomp_lint.files.source import DecodeError, SourceFile, split_lines
from regcomp_lint.lint.config import Settings
from regcomp_lint.lint.engine import lint_source
from regcomp_lint.lint.fix_files import fix_text, needs_fixing, unified_diff
from regcomp_lint.lint.fixes import applicable
from regcomp_lint.lint.scope import scoped_codes
from regcomp_lint.output.render_context import plural
from regcomp_lint.plan import Plan, PlanError

_FIXES = (Applicability.SAFE, Applicability.UNSAFE)
#: A script was refused: distinct from 1 (something changed or would), so a check can tell them apart.
EXIT_REFUSED = 3
#: ``# regcomp-fix: skip`` opts a file out of conversion when it is among these first lines.
SKIP_COMMENT_LINES = 20
_SKIP_COMMENT = re.compile(r"^[ \t]*#[ \t]*regcomp-fix:[ \t]*skip\b", re.IGNORECASE)


@dataclass
class FixOptions:
    paths: tuple[str, ...] = ()
    apply: bool = False
    diff: bool = False
    unsafe_fixes: bool = False
    #: Selectors from the command line, already split on commas; None: not given (the config decides).
    select: tuple[str, ...] | None = None
    ignore: tuple[str, ...] = ()
    backend: str | None = None
    mode: str | None = None
    fullgraph: bool | None = None
    dynamic: bool | None = None
    regional: bool | None = None
    plan: str | None = None
    stdin_filename: str | None = None
    exit_non_zero_on_fix: bool = False


@dataclass
class FileResult:
    """What happened to one file (or stdin)."""

    path: str
    original: str = ""
    text: str = ""
    converted: bool = False
    lint_fixed: Counter = field(default_factory=Counter)
    unfixed: list[Diagnostic] = field(default_factory=list)  # selected findings with a fix not applied
    refused: str | None = None
    notes: list[str] = field(default_factory=list)
    error: str | None = None
    not_training: bool = False
    opted_out: str | None = None  # why conversion was skipped at the user's request
    unchanged: str | None = None  # why the conversion found nothing to change (it said so)

    @property
    def changed(self) -> bool:
        return self.error is None and self.text != self.original


def convert_options(opts: FixOptions) -> ConvertOptions:
    """Flags left off stay None (the plan, then the script, then the defaults decide)."""
    plan = None
    if opts.plan is not None:
        try:
            plan = Plan.load(opts.plan)
        except PlanError as exc:
            raise UsageFailure(str(exc)) from None
    return ConvertOptions(
        backend=opts.backend,
        mode=opts.mode,
        fullgraph=opts.fullgraph,
        dynamic=opts.dynamic,
        regional=opts.regional,
        plan=plan,
    )


def opt_out(text: str, filename: str, settings: Settings) -> str | None:
    """Why the user keeps ``filename`` out of conversion, or None."""
    if any(_SKIP_COMMENT.match(line) for line in text.splitlines()[:SKIP_COMMENT_LINES]):
        return "# regcomp-fix: skip"
    if filename != STDIN and settings.excludes_from_conversion(filename):
        return "fix-exclude"
    return None


def process_text(text: str, filename: str, settings: Settings, convert: ConvertOptions, unsafe: bool) -> FileResult:
    """Convert ``text`` (unless opted out) and apply the selected lint fixes, all in memory."""
    # each text (the original, the converted one) is parsed once; the shared trees go before the
    # collector is back on, so its first collection does not walk them (they hold no cycles)
    with _collection_paused(), shared_parses():
        return _process_text(text, filename, settings, convert, unsafe)


@contextmanager
def _collection_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off while one file is fixed, back on after it (unless
    it was off already). The syntax trees and their metadata are hundreds of thousands of
    objects made at once, none of them garbage until the file is done: the collections their
    making set off found nothing and took a third of the CPU time on a 19,000-line script
    (12.2 -> 8.2 CPU-s; peak memory 520 -> 540 MiB). What cycles the file leaves are collected
    by the next collections, as before."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _process_text(text: str, filename: str, settings: Settings, convert: ConvertOptions, unsafe: bool) -> FileResult:
    result = FileResult(filename, original=text, text=text)
    result.opted_out = opt_out(text, filename, settings)
    settings_file = kind_of(filename, text) is not Kind.PYTHON  # run.sh, default_config.yaml: lint fixes only
    if result.opted_out is None and not settings_file:
        conversion = convert_source(text, filename, convert)
        if conversion.refused is not None and conversion.unreadable:
            result.error = conversion.refused  # bad input: exit 2, left untouched
            return result
        if conversion.refused is not None:
            if NO_TRAINING_STEP not in conversion.refused:
                result.refused = conversion.refused
                return result  # a refusal changes nothing at all
            result.not_training = True
        elif conversion.changed:
            result.converted = True
            result.text = conversion.text
            result.notes = list(conversion.notes)
        else:
            result.unchanged = conversion.unchanged
    diagnostics = lint_source(result.text, filename, settings)
    before = lint_source(text, filename, settings) if result.converted and diagnostics else []
    caused = _caused_by_conversion(before, diagnostics) if result.converted else frozenset()
    if needs_fixing(diagnostics, unsafe, caused):
        fixed = fix_text(result.text, filename, diagnostics, settings, unsafe, caused)
        if fixed.new_text is not None:
            result.lint_fixed = Counter(d.code for d in diagnostics) - Counter(d.code for d in fixed.remaining)
            if result.converted:
                result.notes += _lint_fix_notes(text, result.text, diagnostics, fixed.remaining, unsafe, caused)
            result.text = fixed.new_text
        diagnostics = fixed.remaining
    result.unfixed = [d for d in diagnostics if d.fix is not None and d.fix.applicability in _FIXES]
    if result.converted:
        if not compiles(text):  # as the lint sees it: nothing compiled, so no graph-break findings
            scoped = scoped_codes(settings)
            before = [d for d in before if d.code not in scoped]
        result.notes += _left_after_conversion(before, diagnostics)
    return result


#: Rules whose unsafe fix is safe on a finding the conversion itself caused. RC404's
#: ``accelerator.unwrap_model(model, keep_torch_compile=False)`` around a save is unsafe because
#: code elsewhere may expect the ``_orig_mod.`` keys of a compile the script already had; when
#: the compile is the one the conversion added (a regional plugin for an Accelerate script that
#: saved ``model.save_pretrained(...)``), the original wrote clean keys and nothing reads others.
_SAFE_WHEN_CAUSED = frozenset({"RC404"})


def _caused_by_conversion(before: list[Diagnostic], diagnostics: list[Diagnostic]) -> frozenset[str]:
    """The rules of :data:`_SAFE_WHEN_CAUSED` that find something in the converted text and
    nothing in the original (``before``: the original's findings)."""
    found = {d.code for d in diagnostics if d.code in _SAFE_WHEN_CAUSED}
    return frozenset(found - {d.code for d in before})


def _lint_fix_notes(
    original: str,
    converted: str,
    diagnostics: list[Diagnostic],
    remaining: list[Diagnostic],
    unsafe: bool,
    caused: frozenset[str],
) -> list[str]:
    """A note per kind of lint fix applied to the converted script (an RC404 unwrap the added
    plugin makes necessary): the edit, its lines in the original, and the finding's reason.
    ``diagnostics``: the converted script's findings before fixing; ``remaining``: after."""
    left = Counter(_fix_kind(d) for d in remaining if d.fix is not None)
    groups: dict[tuple[str, str, str], list[Diagnostic]] = {}
    for diagnostic in sorted(diagnostics, key=Diagnostic.sort_key):
        if diagnostic.fix is None or not applicable(diagnostic, unsafe, caused):
            continue
        kind = _fix_kind(diagnostic)
        if left[kind]:
            left[kind] -= 1  # (one of this kind was not applied)
            continue
        groups.setdefault(kind, []).append(diagnostic)
    if not groups:
        return []
    source = SourceFile("<converted>", converted)
    rows = _original_rows(original, converted)
    notes = []
    for (code, _, _), found in groups.items():
        first = found[0]
        assert first.fix is not None
        shown = _edit_shown(source, first) or first.fix.message
        converted_rows = sorted({d.location.row for d in found})
        if all(row in rows for row in converted_rows):
            lines = ", ".join(str(rows[row]) for row in converted_rows)
            where = f"line{'s' if len(converted_rows) > 1 else ''} {lines}"
        else:
            lines = ", ".join(map(str, converted_rows))
            where = f"line{'s' if len(converted_rows) > 1 else ''} {lines} of the converted script"
        notes.append(f"{shown} at {where} ({code}): {first.message}")
    return notes


def _fix_kind(diagnostic: Diagnostic) -> tuple[str, str, str]:
    """Findings share a note when the same rule says the same thing and makes the same fix
    (RC404's `get_state_dict` and `save_model` findings share a fix message but not an edit)."""
    return diagnostic.code, diagnostic.message, diagnostic.fix.message if diagnostic.fix is not None else ""


def _edit_shown(source: SourceFile, diagnostic: Diagnostic) -> str | None:
    """``before -> after`` for a fix whose edits all lie inside its finding's one-line span."""
    assert diagnostic.fix is not None
    start, end = source.offset(diagnostic.location), source.offset(diagnostic.end_location)
    before = source.text[start:end]
    if "\n" in before or len(before) > 100:
        return None
    spans = sorted(
        ((source.offset(e.location), source.offset(e.end_location), e.content) for e in diagnostic.fix.edits),
        reverse=True,
    )
    if not spans or any(s < start or e > end for s, e, _ in spans):
        return None
    after = before
    for s, e, content in spans:
        after = after[: s - start] + content + after[e - start :]
    return f"{before} -> {after}" if "\n" not in after else None


def _original_rows(original: str, converted: str) -> dict[int, int]:
    """Rows of the converted script (1-based) -> the original's rows they stand for (rows the
    conversion added have none)."""
    old, new = split_lines(original), split_lines(converted)
    rows: dict[int, int] = {}
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if tag == "equal" or (tag == "replace" and i2 - i1 == j2 - j1):
            rows.update({j1 + k + 1: i1 + k + 1 for k in range(j2 - j1)})
    return rows


def _left_after_conversion(before: list[Diagnostic], remaining: list[Diagnostic]) -> list[str]:
    """A note per rule that finds more in the converted script than in the original and is left
    there: the user reads why in the conversion's notes, not first from the lint hook (a
    graph break the added compile meets, a device pinned in code the conversion did not reach)."""
    had = Counter(d.code for d in before)
    notes = []
    for code in sorted({d.code for d in remaining}):
        found = sorted((d for d in remaining if d.code == code), key=lambda d: d.location)
        if len(found) <= had[code]:
            continue
        lines = ", ".join(str(d.location.row) for d in found)
        first = found[0]
        notes.append(
            f"left for you: regcomp-lint reports {code} ({first.severity.value}) at line{'s' if len(found) > 1 else ''} "
            f"{lines} of the converted script (the original had {had[code] or 'none'}): {first.message}"
        )
    return notes


def fix(opts: FixOptions) -> int:
    paths = list(opts.paths) or ([STDIN] if opts.stdin_filename else [])
    if not paths:
        raise UsageFailure("give the files or folders to fix (`regcomp-fix train.py`), or `-` to read stdin")
    if STDIN in paths and len(paths) > 1:
        raise UsageFailure("`-` (stdin) cannot be combined with other paths")
    settings = resolve_settings(tuple(paths), opts.stdin_filename, select=opts.select, ignore=opts.ignore)
    convert = convert_options(opts)
    if paths == [STDIN]:
        return _fix_stdin(opts, settings, convert)
    return _fix_files(paths, opts, settings, convert)


# -- stdin -----------------------------------------------------------------------------------
def _fix_stdin(opts: FixOptions, settings: Settings, convert: ConvertOptions) -> int:
    """The result on stdout (the original bytes when nothing changed), or its diff with ``--diff``."""
    data = read_stdin()
    filename = opts.stdin_filename or STDIN
    try:
        snap = writeback.snapshot_bytes(filename, data)
    except DecodeError as exc:
        echo_error(f"{filename}: cannot read: {exc}")
        return EXIT_ERROR
    result = process_text(snap.text, filename, settings, convert, opts.unsafe_fixes)
    out = data
    if result.changed:
        try:
            out = snap.encode(result.text)
        except writeback.WritebackError as exc:
            result.error = str(exc)
    if opts.diff:
        if result.changed:
            click.echo(unified_diff(result.original, result.text, filename), nl=False)
    else:
        write_stdout_bytes(out if result.error is None else data)
    _report_file(result, opts, stream_err=True)
    return _status([result], opts)


# -- files -----------------------------------------------------------------------------------
def _fix_files(paths: list[str], opts: FixOptions, settings: Settings, convert: ConvertOptions) -> int:
    found = discover(paths, settings)
    results: list[FileResult] = []
    for path in found.files:
        result = _fix_file(path, opts, settings, convert)
        results.append(result)
        if result.changed and (opts.diff or not opts.apply):
            click.echo(unified_diff(result.original, result.text, path), nl=False)
        _report_file(result, opts, stream_err=not opts.apply)
    _summary(results, opts)
    errors = list(found.errors) + [f"{p}: no such file or directory" for p in found.missing]
    for message in errors:
        echo_error(message)
    for result in results:
        if result.error:
            echo_error(result.error)
    if errors:
        return EXIT_ERROR
    return _status(results, opts)


def _fix_file(path: str, opts: FixOptions, settings: Settings, convert: ConvertOptions) -> FileResult:
    try:
        snap = writeback.read(path)
    except OSError as exc:
        return FileResult(path, error=f"{path}: cannot read: {exc.strerror or exc}; left untouched")
    except DecodeError as exc:
        return FileResult(path, error=f"{path}: cannot read: {exc}; left untouched")
    try:
        result = process_text(snap.text, path, settings, convert, opts.unsafe_fixes)
    except Exception as exc:  # a bug of ours: this file stays untouched, the others are still fixed
        return FileResult(
            path,
            error=f"{path}: internal error while fixing this file ({type(exc).__name__}: {exc}); "
            f"left untouched; please report it at {ISSUES_URL}",
        )
    if opts.apply and result.changed:
        try:
            writeback.write(snap, result.text)
        except writeback.WritebackError as exc:
            result.error = str(exc)
    return result


# -- output and status -----------------------------------------------------------------------
def _report_file(result: FileResult, opts: FixOptions, stream_err: bool) -> None:
    """Refusals and notes on stderr; with ``--apply`` one line per changed file (stdout for files)."""
    if result.refused:
        click.echo(result.refused, err=True)
    for note in result.notes:
        click.echo(f"{result.path}: {note}", err=True)
    if result.unfixed:
        click.echo(f"{result.path}: {_unfixed_line(result.unfixed, opts.unsafe_fixes)}", err=True)
    if opts.apply and result.changed:
        click.echo(f"Fixed {result.path} ({_what(result)})", err=stream_err)


def _what(result: FileResult) -> str:
    parts = []
    if result.converted:
        parts.append("converted to Accelerate + TorchDynamoPlugin")
    if result.lint_fixed:
        total = sum(result.lint_fixed.values())
        parts.append(f"{total} lint {'fix' if total == 1 else 'fixes'} ({', '.join(sorted(result.lint_fixed))})")
    return "; ".join(parts) or "changed"


def _unfixed_line(unfixed: list[Diagnostic], unsafe: bool) -> str:
    codes = ", ".join(sorted({d.code for d in unfixed}))
    unsafe_left = any(d.fix is not None and d.fix.applicability is Applicability.UNSAFE for d in unfixed)
    hint = " (rerun with --unsafe-fixes)" if unsafe_left and not unsafe else ""
    return f"{plural(len(unfixed), 'finding')} with a fix not applied: {codes}{hint}"


def _summary(results: list[FileResult], opts: FixOptions) -> None:
    changed = [r for r in results if r.changed]
    refused = sum(1 for r in results if r.refused)
    unfixed = sum(len(r.unfixed) for r in results)
    converted = sum(1 for r in changed if r.converted)
    tail = []
    if refused:
        tail.append(f"{plural(refused, 'file')} refused (to leave one as it is: `# regcomp-fix: skip` or fix-exclude)")
    if unfixed:
        tail.append(f"{plural(unfixed, 'finding')} left with a fix not applied")
    opted_out = sum(1 for r in results if r.opted_out)
    if opted_out:
        tail.append(f"{plural(opted_out, 'file')} not converted (opted out)")
    if not changed and results and all(r.not_training for r in results):
        tail.append("no training script found (no X.backward() call)")
    unchanged = [r for r in results if r.unchanged and not r.changed]
    if len(results) == 1 and unchanged:  # why, as a file without a training step says why
        tail.append(f"nothing to convert in {unchanged[0].path}: {unchanged[0].unchanged}")
    elif unchanged:
        tail.append(
            f"nothing to convert in {plural(len(unchanged), 'file')} that already pass their compile settings to "
            "Accelerate (name one alone to see where)"
        )
    rest = ("; " + "; ".join(tail)) if tail else ""
    if opts.apply:
        written = [r for r in changed if r.error is None]
        head = f"Fixed {plural(len(written), 'file')} ({converted} converted)" if written else "No changes"
        click.echo(head + rest + ".")
    else:
        head = f"Would fix {plural(len(changed), 'file')} ({converted} converted)" if changed else "No changes"
        click.echo(head + rest + ".", err=True)


def _status(results: list[FileResult], opts: FixOptions) -> int:
    if any(r.error for r in results):
        return EXIT_ERROR
    if any(r.refused for r in results):
        return EXIT_REFUSED
    changed = any(r.changed for r in results)
    if not opts.apply:
        return EXIT_FINDINGS if changed else EXIT_OK
    if any(r.unfixed for r in results):
        return EXIT_FINDINGS
    if changed and opts.exit_non_zero_on_fix:
        return EXIT_FINDINGS
    return EXIT_OK
