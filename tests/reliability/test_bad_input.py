"""Awkward inputs through the real ``regcomp-lint`` and ``regcomp-fix`` (subprocesses).

Every input gets an answer: no traceback, exit 0/1 (2 only where the run cannot be complete),
RC001 with a line and column for a file that is not valid Python, and the other files of the
same run are still linted. ``regcomp-fix --apply`` never writes a file it could not decode and
parse, and leaves every such file byte-identical.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.reliability._helpers import assert_no_traceback, run

PEP695_OK = sys.version_info >= (3, 12)
SENTINEL = "import torch._dynamo\ntorch._dynamo.config.suppress_errors = True\n"  # RC107 on line 2

#: name -> (content, expected RC001 location or None for a clean file)
CASES: dict[str, tuple[bytes, tuple[int, int] | None]] = {
    "binary.py": (bytes(range(256)) * 8, (1, 1)),
    "nul_byte.py": (b"x = 1\ny = 2\x00\n", (2, 1)),
    "utf16_bom.py": ("x = 1\n".encode("utf-16"), (1, 1)),
    "invalid_utf8.py": (b'x = "\xff\xfe"\n', (1, 6)),
    "latin1_without_coding.py": (b'name = "caf\xe9"\n', (1, 12)),
    "latin1_with_coding.py": (b'# -*- coding: latin-1 -*-\nname = "caf\xe9"\n', None),
    "unknown_coding.py": (b"# coding: klingon\nx = 1\n", (1, 1)),
    "bom.py": (b'\xef\xbb\xbfname = "\xc3\xa9"\n', None),
    "bom_with_latin1_coding.py": (b"\xef\xbb\xbf# coding: latin-1\nx = 1\n", (1, 1)),
    "crlf.py": (b"x = 1\r\nif x:\r\n    y = 2\r\n", None),
    "cr_only.py": (b"x = 1\rif x:\r    y = 2\r", None),
    "mixed_newlines.py": (b"x = 1\r\ny = 2\nz = 3\r", None),
    "tabs.py": (b"if True:\n\tx = 1\n\tif x:\n\t\ty = 2\n", None),
    "mixed_indentation.py": (b"if True:\n\tx = 1\n        y = 2\n", (3, 1)),
    "form_feed.py": (b"\x0cx = 1\nclass A:\n\x0c    pass\n", None),
    "python2_print.py": (b'print "hello"\n', (1, 1)),
    "python2_except.py": (b"try:\n    pass\nexcept ValueError, e:\n    pass\n", (3, 8)),
    "python2_backticks.py": (b"x = `1`\n", (1, 5)),
    "unterminated_string.py": (b'x = "abc\n', (1, 5)),
    "unterminated_triple.py": (b'x = """abc\n\n', (1, 5)),
    "unbalanced.py": (b"x = (1,\ny = 2\n", None),  # location checked loosely below
    "continuation_at_eof.py": (b"x = 1 + \\\n", None),
    "nested_5000.py": (b"x = " + b"[" * 5000 + b"]" * 5000 + b"\n", (1, None)),
    "line_2mb.py": (b'x = "' + b"a" * (2 << 20) + b'"\n', None),
    "big_10mb.py": (b"".join(b"value_%d = [%d, %d]  # c\n" % (i, i, i) for i in range(420_000)), None),
    "empty.py": (b"", None),
    "comment_only.py": (b"# nothing but a comment\n# and another\n", None),
    "blank_lines_only.py": (b"\n\n   \n\t\n", None),
    "no_final_newline.py": (b"x = 1", None),
    "non_ascii_names.py": ("café = 1\nnaïve = café + 1\n".encode(), None),
    "match_statement.py": (
        b"match command:\n    case [x, y]:\n        pass\n    case {'k': v}:\n        pass\n    case _:\n        pass\n",
        None,
    ),
    "walrus.py": (b"if (n := len([1, 2])) > 1:\n    print(n)\n", None),
    "pep695.py": (
        b"type Point = tuple[float, float]\ndef first[T](xs: list[T]) -> T:\n    return xs[0]\n",
        None if PEP695_OK else (1, 6),
    ),
    "notes.txt": (b"These are notes, not code.\n", (1, 7)),
    "script_without_suffix": (b"#!/usr/bin/env python\nx = 1\n", None),
}
LOOSE = {"unbalanced.py", "continuation_at_eof.py"}  # RC001 somewhere in the file
for name in LOOSE:
    CASES[name] = (CASES[name][0], (0, 0))


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("bad")
    (root / "pyproject.toml").write_text("[tool.regcomp-lint]\n")
    for name, (content, _) in CASES.items():
        (root / name).write_bytes(content)
    (root / "sentinel.py").write_text(SENTINEL)
    loop = root / "loop"
    loop.mkdir()
    (loop / "inside.py").write_text(SENTINEL)
    (loop / "up").symlink_to("..")
    (loop / "self").symlink_to(".")
    (loop / "broken.py").symlink_to("does-not-exist.py")
    (root / "folder_named.py").mkdir()  # a folder where a file is expected: walked
    (root / "folder_named.py" / "real.py").write_text(SENTINEL)
    os.mkfifo(root / "named_pipe.py")  # unreadable even for root: it would block forever
    return root


def lint_json(tree: Path, *paths) -> tuple[int, list[dict], str]:
    proc = run("regcomp-lint", "--no-cache", "--format", "json", *paths, cwd=tree, timeout=600)
    assert_no_traceback(proc)
    return proc.returncode, json.loads(proc.stdout or "[]"), proc.stderr


def rc001(found: list[dict], name: str) -> list[dict]:
    return [d for d in found if d["code"] == "RC001" and os.path.basename(d["filename"]) == name]


def test_there_are_at_least_30_awkward_inputs():
    assert len(CASES) >= 30


def test_every_input_in_one_run(tree):
    """All files typed at once plus the folder: one answer each, the sentinels still linted."""
    names = sorted(CASES) + ["sentinel.py", "named_pipe.py", "loop", "folder_named.py"]
    status, found, stderr = lint_json(tree, *names)
    assert status == 1, stderr
    for name, (_, where) in CASES.items():
        errors = rc001(found, name)
        if where is None:
            assert errors == [], (name, errors)
        else:
            assert len(errors) == 1, (name, errors)
            row, col = errors[0]["location"]["row"], errors[0]["location"]["column"]
            assert row >= 1 and col >= 1
            if where != (0, 0):
                assert row == where[0], (name, errors[0])
                if where[1] is not None:
                    assert col == where[1], (name, errors[0])
    pipe = rc001(found, "named_pipe.py")
    assert len(pipe) == 1 and "not a regular file (a named pipe)" in pipe[0]["message"]
    for sentinel in ("sentinel.py", "inside.py", "real.py"):
        assert [
            d["location"]["row"] for d in found if d["code"] == "RC107" and os.path.basename(d["filename"]) == sentinel
        ] == [2], sentinel
    assert "too deeply nested" in rc001(found, "nested_5000.py")[0]["message"]


@pytest.mark.parametrize(
    "name",
    [
        "binary.py",
        "invalid_utf8.py",
        "mixed_indentation.py",
        "python2_print.py",
        "empty.py",
        "cr_only.py",
        "notes.txt",
        "nested_5000.py",
        "named_pipe.py",
        "loop",
    ],
)
def test_each_alone_exits_0_or_1(tree, name):
    status, found, stderr = lint_json(tree, name)
    expected = 0 if name in ("empty.py", "cr_only.py", "loop") else 1
    if name == "loop":
        expected = 1  # the sentinel inside
    assert status == expected, (name, found, stderr)


def test_unreadable_proc_file_is_rc001(tree):
    """``/proc/self/mem`` cannot be read even by root (EIO): an honest unreadable file."""
    if not os.path.exists("/proc/self/mem"):
        pytest.skip("no /proc")
    status, found, _ = lint_json(tree, "/proc/self/mem", "sentinel.py")
    assert status == 1
    assert [d["code"] for d in found] == ["RC001", "RC107"]
    assert "cannot read file" in found[0]["message"]


def test_permission_denied_file_is_rc001(tree, tmp_path):
    if os.geteuid() == 0:
        pytest.skip("root reads files whatever their mode")
    path = tmp_path / "secret.py"
    path.write_text("x = 1\n")
    os.chmod(path, 0)
    status, found, _ = lint_json(tree, str(path), "sentinel.py")
    assert status == 1 and "Permission denied" in found[0]["message"]


def test_missing_path_is_a_usage_error_after_linting_the_rest(tree):
    proc = run("regcomp-lint", "--no-cache", "sentinel.py", "not-there.py", cwd=tree)
    assert_no_traceback(proc)
    assert proc.returncode == 2 and "RC107" in proc.stdout and "not-there.py: no such file" in proc.stderr


def test_files_deleted_mid_run(tmp_path):
    """Files vanishing while the run reads them are RC001 "cannot read" or linted; nothing else."""
    for i in range(400):
        (tmp_path / f"m{i:03}.py").write_text(SENTINEL + "x = 1\n" * 200)
    stop = threading.Event()

    def delete():
        time.sleep(0.3)
        for i in range(0, 400, 2):
            if stop.is_set():
                return
            try:
                os.unlink(tmp_path / f"m{i:03}.py")
            except FileNotFoundError:
                pass
            time.sleep(0.002)

    worker = threading.Thread(target=delete)
    worker.start()
    try:
        proc = run("regcomp-lint", "--no-cache", "--jobs", "2", "--format", "json", ".", cwd=tmp_path)
    finally:
        stop.set()
        worker.join()
    assert_no_traceback(proc)
    assert proc.returncode == 1
    found = json.loads(proc.stdout)
    by_file: dict[str, set[str]] = {}
    for d in found:
        by_file.setdefault(os.path.basename(d["filename"]), set()).add(d["code"])
    for i in range(1, 400, 2):  # never deleted: always linted
        assert by_file.get(f"m{i:03}.py") == {"RC107"}
    for codes in by_file.values():
        assert codes in ({"RC107"}, {"RC001"})
    for d in found:
        if d["code"] == "RC001":
            assert "cannot read file" in d["message"]


# -- regcomp-fix ---------------------------------------------------------------------------


def test_fix_apply_never_touches_what_it_cannot_decode_or_parse(tree, tmp_path):
    work = tmp_path / "fix"
    work.mkdir()
    (work / "pyproject.toml").write_text("[tool.regcomp-lint]\n")
    cases = {name: case for name, case in CASES.items() if name != "big_10mb.py"}  # size: see the huge-file test
    for name, (content, _) in cases.items():
        (work / name).write_bytes(content)
    os.mkfifo(work / "named_pipe.py")
    names = sorted(cases) + ["named_pipe.py"]
    proc = run("regcomp-fix", "--apply", *names, cwd=work, timeout=600)
    assert_no_traceback(proc)
    assert proc.returncode == 2, proc.stderr  # undecodable files and the pipe are errors: "cannot read"
    for name, (content, _) in cases.items():
        assert (work / name).read_bytes() == content, name
    assert "named_pipe.py: cannot read: not a regular file (a named pipe)" in proc.stderr
    assert "invalid_utf8.py: cannot read" in proc.stderr and "left untouched" in proc.stderr
    assert sorted(p.name for p in work.iterdir()) == sorted(["pyproject.toml", *names])  # no temporaries


PLAIN = """\
import torch

model = torch.nn.Linear(4, 1)
model = torch.compile(model, mode="max-autotune")
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(10):
    loss = model(torch.randn(8, 4)).pow(2).mean()  # keep me: café
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
"""


def _variants() -> dict[str, tuple[bytes, str, str]]:
    """name -> (bytes, encoding, newline)."""
    return {
        "lf.py": (PLAIN.encode(), "utf-8", "\n"),
        "crlf.py": (PLAIN.replace("\n", "\r\n").encode(), "utf-8", "\r\n"),
        "cr_only.py": (PLAIN.replace("\n", "\r").encode(), "utf-8", "\r"),
        "bom.py": (b"\xef\xbb\xbf" + PLAIN.encode(), "utf-8-sig", "\n"),
        "latin1.py": (("# -*- coding: latin-1 -*-\n" + PLAIN).encode("latin-1"), "latin-1", "\n"),
        "tabs.py": (PLAIN.replace("    ", "\t").encode(), "utf-8", "\n"),
        "no_final_newline.py": (PLAIN.rstrip("\n").encode(), "utf-8", "\n"),
    }


def test_fix_apply_keeps_bom_newlines_encoding_tabs_and_mode(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.regcomp-lint]\n")
    variants = _variants()
    for name, (content, _, _) in variants.items():
        (tmp_path / name).write_bytes(content)
        os.chmod(tmp_path / name, 0o754)
    proc = run("regcomp-fix", "--apply", *variants, cwd=tmp_path)
    assert_no_traceback(proc)
    assert proc.returncode == 0, proc.stderr
    reference = (tmp_path / "lf.py").read_bytes().decode()
    assert "accelerator.backward(loss)" in reference
    for name, (content, encoding, newline) in variants.items():
        data = (tmp_path / name).read_bytes()
        assert data != content, name
        assert os.stat(tmp_path / name).st_mode & 0o777 == 0o754, name
        text = data.decode(encoding)
        assert data.startswith(b"\xef\xbb\xbf") == (encoding == "utf-8-sig"), name
        ends = {
            "\r\n": text.count("\r\n"),
            "\r": text.count("\r") - text.count("\r\n"),
            "\n": text.count("\n") - text.count("\r\n"),
        }
        assert {k for k, v in ends.items() if v} == {newline}, (name, ends)
        assert text.endswith(newline) == (name != "no_final_newline.py"), name
        normal = text.replace("\r\n", "\n").replace("\r", "\n").lstrip("\ufeff")
        if name == "latin1.py":
            normal = normal.split("\n", 1)[1]
        if name == "tabs.py":
            assert "\n\taccelerator.backward(loss)" in normal and "    " not in normal
            normal = normal.replace("\t", "    ")
        if name == "no_final_newline.py":
            normal += "\n"
        assert normal == reference, name
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["pyproject.toml", *variants])


def test_fix_refuses_a_read_only_file_with_exit_2_and_fixes_the_others(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.regcomp-lint]\n")
    (tmp_path / "ro.py").write_text(PLAIN)
    (tmp_path / "rw.py").write_text(PLAIN)
    os.chmod(tmp_path / "ro.py", 0o444)
    proc = run("regcomp-fix", "--apply", "ro.py", "rw.py", cwd=tmp_path)
    assert_no_traceback(proc)
    assert proc.returncode == 2
    assert "regcomp-fix: error: ro.py: read-only file; not written" in proc.stderr
    assert (tmp_path / "ro.py").read_text() == PLAIN
    assert os.stat(tmp_path / "ro.py").st_mode & 0o777 == 0o444
    assert "accelerator.backward(loss)" in (tmp_path / "rw.py").read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pyproject.toml", "ro.py", "rw.py"]


def test_fix_converts_deeply_nested_code_and_a_script_over_the_old_1_mib_limit(tmp_path):
    """Nesting that used to be a RecursionError (exit 2 for the whole run) converts now, and so
    does a script over 1 MiB, which the fixer refused while it was quadratic."""
    (tmp_path / "pyproject.toml").write_text("[tool.regcomp-lint]\n")
    deep = PLAIN + "table = " + "[" * 180 + "]" * 180 + "\nchain = x" + ".a" * 800 + "\n"
    (tmp_path / "deep.py").write_text(deep)
    big = PLAIN + "WEIGHTS = " + repr("0123456789abcdef" * (1 << 16)) + "\n"  # 1 MiB in one string
    assert len(big) > 1 << 20
    (tmp_path / "big.py").write_text(big)
    proc = run("regcomp-fix", "--apply", "deep.py", "big.py", cwd=tmp_path)
    assert_no_traceback(proc)
    assert proc.returncode == 0, proc.stderr
    assert "accelerator.backward(loss)" in (tmp_path / "deep.py").read_text()
    assert "accelerator.backward(loss)" in (tmp_path / "big.py").read_text()


def test_fix_refuses_an_absurdly_large_input_before_parsing_it():
    """Over ``MAX_CHARS`` (64 MiB) the answer is one line saying why, and nothing is parsed."""
    from regcomp_lint.codemod.convert import MAX_CHARS, convert_source

    text = PLAIN + "#" * MAX_CHARS + "\n"
    result = convert_source(text, "huge.py")
    assert not result.changed and result.text == text
    assert result.refused is not None
    assert result.refused.startswith("huge.py: not converted:") and "more than the fixer converts" in result.refused


def test_fix_internal_error_in_one_file_spares_the_others(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from regcomp_lint.cli import fix_command as fix_invocation
    from regcomp_lint.cli.commands import fix_main

    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text("[tool.regcomp-lint]\n")
    (tmp_path / "a.py").write_text(PLAIN)
    (tmp_path / "b.py").write_text(PLAIN)
    real = fix_invocation.process_text

    def flaky(text, filename, *args):
        if filename.endswith("a.py"):
            raise RuntimeError("boom")
        return real(text, filename, *args)

    monkeypatch.setattr(fix_invocation, "process_text", flaky)
    result = CliRunner().invoke(fix_main, ["--apply", "a.py", "b.py"], prog_name="regcomp-fix")
    assert result.exit_code == 2
    assert "a.py: internal error while fixing this file (RuntimeError: boom); left untouched" in result.output
    assert (tmp_path / "a.py").read_text() == PLAIN
    assert "accelerator.backward(loss)" in (tmp_path / "b.py").read_text()
