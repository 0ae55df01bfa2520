"""The promises every conversion keeps, checked over every fixture: the output parses, a second
run changes nothing, every comment survives, lines the conversion does not target stay
byte-identical, and newline style, BOM, tabs and the file's encoding are kept."""

from __future__ import annotations

import ast
import codecs
import difflib
import io
import re
import tokenize
from collections import Counter

import pytest

from regcomp_lint.codemod import convert_bytes
from regcomp_lint.files.source import decode_source
from tests.codemod.fixture_cases import CASES, FIXTURES, convert_case, options_for

#: What a line the conversion deletes or rewrites must be about. Anything else changing is
#: collateral damage (reformatting, lost code) and fails the byte-identity test.
TARGETED = re.compile(
    r"backward|clip_grad_norm_|compile|cuda|device|DDP|DataParallel|process_group|Accelerator|dynamo_|"
    r"TorchDynamoPlugin|state_dict|save|DataLoader\(|require_backward_grad_sync|\.module\b|--local.rank|^\s*(def |if |\)|mode=)|"
    r"^\s*$"
)


#: ``accelerator.unwrap_model(X[, keep_torch_compile=False])`` -> ``X``
_UNWRAP = re.compile(r"(?:self\.)?accelerator\.unwrap_model\(([\w.]+)(?:, keep_torch_compile=False)?\)")
#: ``(len(loader) * accelerator.num_processes)`` -> ``len(loader)``: a gathered epoch sum's count
#: of every process's batches (codemod/reduced_sums.py)
_COUNTED = re.compile(r"\((len\([\w.]+\)) \* accelerator\.num_processes\)")


def _lines(data: bytes) -> list[str]:
    return decode_source(data).splitlines(keepends=True)


def _comments(data: bytes) -> Counter:
    text = decode_source(data)
    return Counter(t.string for t in tokenize.generate_tokens(io.StringIO(text).readline) if t.type == tokenize.COMMENT)


@pytest.fixture(scope="module")
def results():
    return {case: ((FIXTURES / case / "input.py").read_bytes(), convert_case(case)) for case in CASES}


@pytest.mark.parametrize("case", CASES)
def test_output_parses(case, results):
    _, result = results[case]
    ast.parse(decode_source(result.data))


@pytest.mark.parametrize("case", CASES)
def test_second_run_changes_nothing(case, results):
    _, result = results[case]
    again = convert_bytes(result.data, "input.py", options_for(case))
    assert again.data == result.data
    assert not again.changed
    if result.refused is None:
        assert again.refused is None, again.refused


@pytest.mark.parametrize("case", CASES)
def test_every_comment_survives(case, results):
    before, result = results[case]
    lost = _comments(before) - _comments(result.data)
    assert not lost


@pytest.mark.parametrize("case", CASES)
def test_untouched_lines_are_byte_identical(case, results):
    before, result = results[case]
    old, new = _lines(before), _lines(result.data)
    kept_comment_lines = {line.strip() for line in new if line.lstrip().startswith("#")}
    matcher = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag in ("replace", "delete"):
            # a call of a function that now takes the accelerator gains only that keyword
            passed_on = {n.replace(", accelerator=accelerator)", ")") for n in new[j1:j2]}
            # a statement put under a new `if accelerator.is_main_process:`: the same text, indented deeper
            guard = any(n.rstrip().endswith(".is_main_process:") for n in new[j1:j2])
            moved_under_guard = {n.lstrip() for n in new[j1:j2] if guard}
            for line in old[i1:i2]:
                moved_comment = line.lstrip().startswith("#") and line.strip() in kept_comment_lines
                guarded = line.lstrip() in moved_under_guard
                # `model_without_ddp = model` -> `model_without_ddp = accelerator.unwrap_model(model, ...)`
                target = line.split("=")[0] if "=" in line else None
                unwrapped = target is not None and any(
                    n.startswith(target + "=") and "unwrap_model(" in n for n in new[j1:j2]
                )
                # `model.generate(...)` -> `accelerator.unwrap_model(model).generate(...)`: the same line otherwise
                through = {_UNWRAP.sub(r"\1", n) for n in new[j1:j2]}
                through |= {_COUNTED.sub(r"\1", n) for n in new[j1:j2]}
                # `agent.get_action_and_value(obs)` -> `get_action_and_value(obs)`: the loss-bearing method run
                # through the wrapper module prepared in the model's place (codemod/method_loss.py)
                routed = any(line[: m.start()] + line[m.end() :] in new[j1:j2] for m in re.finditer(r"\b\w+\.", line))
                guarded = guarded or unwrapped or line in through or routed
                assert TARGETED.search(line) or moved_comment or line in passed_on or guarded, (
                    f"changed a line the conversion does not target: {line!r}"
                )


@pytest.mark.parametrize("case", CASES)
def test_newline_style_is_kept(case, results):
    before, result = results[case]
    endings = {m for m in re.findall(rb"\r\n|\r|\n", result.data)}
    assert endings == {m for m in re.findall(rb"\r\n|\r|\n", before)}


@pytest.mark.parametrize("case", CASES)
def test_bom_is_kept(case, results):
    before, result = results[case]
    assert result.data.startswith(codecs.BOM_UTF8) == before.startswith(codecs.BOM_UTF8)


def test_fixtures_cover_crlf_bom_tabs_and_latin1():
    assert b"\r\n" in (FIXTURES / "crlf_newlines" / "input.py").read_bytes()
    assert (FIXTURES / "bom_utf8" / "input.py").read_bytes().startswith(codecs.BOM_UTF8)
    assert b"\n\t" in (FIXTURES / "tabs_indent" / "input.py").read_bytes()
    assert b"coding: latin-1" in (FIXTURES / "latin1_coding" / "input.py").read_bytes()


def test_crlf_file_has_only_crlf_after_conversion(results):
    _, result = results["crlf_newlines"]
    assert result.changed
    assert result.data.count(b"\n") == result.data.count(b"\r\n")


def test_tab_indented_file_stays_tab_indented(results):
    _, result = results["tabs_indent"]
    assert result.changed
    indents = {
        line[: len(line) - len(line.lstrip(" \t"))] for line in decode_source(result.data).splitlines() if line.strip()
    }
    assert all(" " not in indent for indent in indents), indents
    assert "\tdynamo_plugin = TorchDynamoPlugin(" in decode_source(result.data)


def test_bom_file_keeps_its_non_ascii_text(results):
    before, result = results["bom_utf8"]
    assert result.changed
    assert result.data.startswith(codecs.BOM_UTF8) and not result.data[3:].startswith(codecs.BOM_UTF8)
    assert "Größe" in result.data.decode("utf-8-sig") and "fertig ✓" in result.data.decode("utf-8-sig")


def test_latin1_file_is_written_back_in_latin1(results):
    before, result = results["latin1_coding"]
    assert result.changed
    assert "Übungszwecke".encode("latin-1") in result.data
    assert "Maß".encode("latin-1") in result.data
    assert result.data.decode("latin-1").startswith("# -*- coding: latin-1 -*-")
