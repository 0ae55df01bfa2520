"""Library entry points of the conversion: text in, text out, never a half-converted file.

``convert_source`` takes decoded text; ``convert_bytes`` takes a file's bytes and gives them back
in the same encoding, with the same BOM. Neither imports torch nor imports or runs the script.
libcst and the codemod are imported only for a file that passes the prefilter: a file without
a training step is answered without them (a third of a second of start-up).
The result is checked before it is returned: it must parse and keep every comment; otherwise
the input comes back unchanged with a refusal line.
"""

from __future__ import annotations

import ast
import codecs
import io
import re
import sys
import tokenize
from collections import Counter
from typing import TYPE_CHECKING

from regcomp_lint.codemod.deep import call_shallow_first
from regcomp_lint.codemod.delegated_loop import find_delegated_loop
from regcomp_lint.codemod.delegated_loop import refusal as delegated_refusal
from regcomp_lint.codemod.options import NO_TRAINING_STEP, ConversionResult, ConvertOptions
from regcomp_lint.files.parsing import parse, shared_parses
from regcomp_lint.files.source import DecodeError, comments, decode_source
from regcomp_lint.knowledge.training_libraries import LOSS_SCALER_CLASSES

if TYPE_CHECKING:
    from regcomp_lint.codemod.command import ConvertToAccelerate

_BOM = "\ufeff"
#: words without which a file has nothing to convert (a loss scaler's call runs a backward unseen)
_WORTH_PARSING = ("backward", "Accelerator", "TorchDynamoPlugin", "DataParallel", *sorted(LOSS_SCALER_CLASSES))
#: Larger inputs are refused before any parsing: no training script comes near (the largest are a
#: few hundred KB), and libcst's tree of 64 MiB of source would need tens of gigabytes. The fixer is
#: linear in file size below it (issue 16; it refused everything over 1 MiB before).
MAX_CHARS = 64 << 20


def convert_source(text: str, filename: str = "<stdin>", options: ConvertOptions | None = None) -> ConversionResult:
    """Convert one script's text; ``refused`` says why when nothing could be changed."""
    with shared_parses():  # the parse check's tree is the lint view's (and the caller's, in its block)
        return _convert_source(text, filename, options)


def _convert_source(text: str, filename: str, options: ConvertOptions | None) -> ConversionResult:
    options = options or ConvertOptions()
    bom = text.startswith(_BOM)
    body = text[1:] if bom else text
    if len(body) > MAX_CHARS:
        return _refused(
            text,
            f"{filename}: not converted: {len(body):,} characters is more than the fixer converts ({MAX_CHARS:,}: "
            "no training script is this large; is it generated data?); nothing changed",
        )
    try:
        syntax = _parse(body, filename)
    except SyntaxError as exc:  # the interpreter's own position and words (as RC001 reports them)
        version = f"{sys.version_info.major}.{sys.version_info.minor}"
        result = _refused(
            text,
            f"{filename}: cannot parse line {exc.lineno}, column {exc.offset}: {exc.msg} (Python {version}'s "
            f"grammar: code for a newer Python needs regcomp-fix run by that Python); fix the syntax error first",
        )
        result.unreadable = True
        return result
    except (RecursionError, MemoryError, ValueError) as exc:  # too deep for the parser itself; a NUL byte
        return _refused(text, f"{filename}: cannot parse: {exc}; nothing changed")
    if not any(word in body for word in _WORTH_PARSING):
        # cheap answer for most files of a repository: nothing to convert, no libcst metadata needed
        return _no_training_step(text, syntax, filename, options)
    import libcst as cst  # (here: a file that stops above never needs libcst)
    from libcst.codemod import CodemodContext

    from regcomp_lint.codemod.command import ConvertToAccelerate
    from regcomp_lint.codemod.settings import Refusal, StepElsewhere

    # libcst drops the last line ending of a file whose lines end in a lone CR (old Mac style):
    # such a file is converted with LF endings and given its CRs back (it has no LF of its own)
    cr_only = "\r" in body and "\n" not in body
    work = body.replace("\r", "\n") if cr_only else body

    def transform() -> tuple[ConvertToAccelerate, tuple[str, tuple[list[str], list[str]] | None]]:
        command = ConvertToAccelerate(CodemodContext(filename=filename), options)  # (fresh for a second run)
        return command, _transform(command, work)

    try:
        command, (new_body, changed) = call_shallow_first(transform)
    except cst.ParserSyntaxError as exc:
        return _refused(text, f"{filename}: libcst cannot parse line {exc.raw_line}: {exc.message}")
    except _NotExact:
        return _refused(
            text,
            f"{filename}: not converted: libcst does not reproduce this file byte for byte (unusual line endings?); nothing changed",
        )
    except (RecursionError, MemoryError):
        return _refused(
            text, f"{filename}: not converted: the code is nested too deeply for the fixer; nothing changed"
        )
    except Refusal as refusal:
        if str(refusal) == NO_TRAINING_STEP or isinstance(refusal, StepElsewhere):
            return _no_training_step(text, syntax, filename, options, str(refusal))
        return _refused(
            text,
            f"{filename}: not converted: {refusal}"
            if not str(refusal).startswith("not converted")
            else f"{filename}: {refusal}",
        )
    except ValueError as exc:  # libcst's tokenizer rejects some valid code, e.g. a form feed in an indent
        return _refused(text, f"{filename}: not converted: libcst cannot parse this file ({exc}); nothing changed")
    if cr_only:
        new_body = new_body.replace("\n", "\r")
    problem = _check(body, new_body, filename, changed if not cr_only else None)
    if problem:
        return _refused(text, f"{filename}: internal error, nothing changed: {problem} (please report this script)")
    new_text = (_BOM + new_body) if bom else new_body
    if new_text == text:
        return ConversionResult(new_text, False, None, [], unchanged=command.unchanged)
    return ConversionResult(new_text, True, None, [_one_line(note) for note in command.notes])


def _one_line(note: str) -> str:
    """A note as one line: code of several lines quoted in it (``with open(\n    path,\n    "w"\n)``)
    is joined at its line breaks, since each note is printed as one ``file: note`` line."""
    if "\n" not in note:
        return note
    note = re.sub(r"([(\[{])\s*\n\s*", r"\1", note)  # `open(\n    path` -> `open(path`
    note = re.sub(r",?\s*\n\s*([)\]}])", r"\1", note)  # `"w",\n)` -> `"w")`
    return re.sub(r"\s*\n\s*", " ", note)


def _parse(text: str, filename: str) -> ast.Module:
    return parse(text, filename)  # (SyntaxWarnings about the user's code are not ours to print)


def _no_training_step(
    text: str, syntax: ast.Module, filename: str, options: ConvertOptions, reason: str = NO_TRAINING_STEP
) -> ConversionResult:
    """Not a training script, unless it hands its model to a trainer of its own project that it
    imports (minGPT's chargpt.py): then a refusal that names where the loop runs. ``reason``: the
    refusal when no such loop is found."""
    found = find_delegated_loop(syntax, filename)
    if found is None:
        return _refused(text, f"{filename}: not converted: {reason}")
    converts = None
    if found.path is not None:
        try:
            with open(found.path, "rb") as trainer:
                other = convert_bytes(trainer.read(), found.path, options)
        except OSError as exc:
            other = ConversionResult("", False, f"cannot read it: {exc.strerror or exc}")
        if other.refused is not None:
            converts = other.refused.split("not converted: ", 1)[-1]
    return _refused(text, f"{filename}: not converted: {delegated_refusal(found, converts)}")


class _NotExact(Exception):
    """libcst's tree does not print back as the text it was parsed from."""


def _transform(command: ConvertToAccelerate, text: str) -> tuple[str, tuple[list[str], list[str]] | None]:
    """Parse, check the round trip, convert and print: all of it recursive in libcst. Also the
    texts of the top-level statements the result dropped and of those it printed anew
    (:meth:`SourceMetadata.code_of`; None: all of it printed anew)."""
    import libcst as cst

    from regcomp_lint.codemod.source_metadata import SourceMetadata
    from regcomp_lint.codemod.tree import clear_find_cache

    module = cst.parse_module(text)
    metadata = SourceMetadata(module)  # the module printed once: its text, parents and positions
    if metadata.code != text:  # the round trip libcst promises; never edit a file it would change
        raise _NotExact()
    try:
        code = metadata.code_of(command.transform_module(module, metadata))
        return code, metadata.changed
    finally:
        clear_find_cache()


def convert_bytes(data: bytes, filename: str = "<stdin>", options: ConvertOptions | None = None) -> ConversionResult:
    """Convert a file's content; ``result.data`` is the new content in the file's own encoding."""
    try:
        text = decode_source(data)
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except (DecodeError, SyntaxError) as exc:
        return ConversionResult("", False, f"{filename}: cannot read: {exc}", [], data)
    bom = data.startswith(codecs.BOM_UTF8)
    result = convert_source(text, filename, options)
    if not result.changed:
        result.data = data
        return result
    try:
        encoded = result.text.encode("utf-8" if encoding == "utf-8-sig" else encoding)
    except UnicodeEncodeError as exc:
        return ConversionResult(
            text,
            False,
            f"{filename}: the converted text does not fit the file's encoding {encoding}: {exc.reason}",
            [],
            data,
        )
    result.data = (codecs.BOM_UTF8 + encoded) if bom else encoded
    return result


def _refused(text: str, why: str) -> ConversionResult:
    return ConversionResult(text, False, why.replace("\n", " "), [])


def _check(before: str, after: str, filename: str, changed: tuple[list[str], list[str]] | None = None) -> str | None:
    """The guarantees every result keeps: it parses, and no comment is lost. ``changed``: the
    texts of the top-level statements ``before`` has and ``after`` does not, and of those
    ``after`` printed anew (each text starts where the tokenizer is between statements)."""
    if before == after:
        return None
    try:
        _parse(after, filename)
    except SyntaxError as exc:
        return f"the result does not parse ({exc.msg}, line {exc.lineno})"
    except (RecursionError, MemoryError, ValueError) as exc:
        return f"the result does not parse ({type(exc).__name__})"
    if changed is not None and _none_lost(*changed):
        return None
    lost = Counter(c for _, _, c in comments(before)) - Counter(c for _, _, c in comments(after))
    if lost:
        return f"the result would lose the comment {next(iter(lost))!r}"
    return None


def _none_lost(dropped: list[str], printed: list[str]) -> bool:
    """True when the comments of the statements a conversion dropped are all in those it printed.

    The statements it kept are the same text in both files, each starting and ending where the
    tokenizer is between statements (when what was printed anew ends there too: no string or
    bracket left open), so their comments are the same in both and only the rest is tokenized.
    False: not shown (something did not tokenize on its own), or a comment went missing; the
    whole texts then decide, and name it."""
    counts: Counter[str] = Counter()
    for texts, sign in ((dropped, 1), (printed, -1)):
        for text in texts:
            try:
                for token in tokenize.generate_tokens(io.StringIO(text).readline):
                    if token.type == tokenize.COMMENT:
                        counts[token.string] += sign
                    elif token.type == tokenize.ERRORTOKEN:
                        return False
            except (tokenize.TokenError, SyntaxError):  # (IndentationError is a SyntaxError)
                return False
    return all(count <= 0 for count in counts.values())
