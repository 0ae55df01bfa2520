"""The .gitignore matcher follows git's documented rules (gitignore(5))."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from regcomp_lint.files.gitignore import IgnoreFile, IgnoreStack, parse_line, repository_root, stack_for


def ignored(lines: str, rel: str, is_dir: bool = False) -> bool:
    base = os.path.abspath("/repo")
    stack = IgnoreStack().push(IgnoreFile.from_text(base, lines))
    return stack.ignored(os.path.join(base, *rel.split("/")), is_dir)


@pytest.mark.parametrize(
    "lines,rel,is_dir,expected",
    [
        ("*.py\n", "a.py", False, True),
        ("*.py\n", "deep/down/a.py", False, True),
        ("*.py\n", "a.pyi", False, False),
        ("foo\n", "x/foo", False, True),
        ("foo\n", "x/foo", True, True),
        # anchored: a slash at the start or in the middle
        ("/foo\n", "foo", False, True),
        ("/foo\n", "x/foo", False, False),
        ("a/b\n", "a/b", False, True),
        ("a/b\n", "x/a/b", False, False),
        # directory only
        ("build/\n", "build", True, True),
        ("build/\n", "build", False, False),
        ("build/\n", "src/build", True, True),
        # **
        ("**/gen\n", "gen", True, True),
        ("**/gen\n", "a/b/gen", True, True),
        ("a/**/b.py\n", "a/b.py", False, True),
        ("a/**/b.py\n", "a/x/y/b.py", False, True),
        ("a/**/b.py\n", "c/a/x/b.py", False, False),
        ("out/**\n", "out/x.py", False, True),
        ("out/**\n", "out/deep/x.py", False, True),
        ("out/**\n", "out", True, False),
        ("**\n", "anything/at/all.py", False, True),
        ("a**b\n", "axxb", False, True),
        ("a**b\n", "ax/xb", False, False),
        # single-character wildcards and classes
        ("?.py\n", "a.py", False, True),
        ("?.py\n", "ab.py", False, False),
        ("[ab].py\n", "b.py", False, True),
        ("[ab].py\n", "c.py", False, False),
        ("[!ab].py\n", "c.py", False, True),
        ("[!ab].py\n", "a.py", False, False),
        ("[a-c]x\n", "bx", False, True),
        ("[a\n", "[a", False, True),
        # * never crosses a slash
        ("a*z\n", "a/z", False, False),
        ("docs/*.py\n", "docs/x/y.py", False, False),
        # comments, blank lines, escapes, trailing spaces
        ("# a.py\n\n", "# a.py", False, False),
        ("\\#a.py\n", "#a.py", False, True),
        ("\\!a.py\n", "!a.py", False, True),
        ("a.py   \n", "a.py", False, True),
        ("a.py\\ \n", "a.py ", False, True),
        ("a.py\r\n", "a.py", False, True),
        # negation: the last matching line wins
        ("*.py\n!keep.py\n", "keep.py", False, False),
        ("*.py\n!keep.py\n", "drop.py", False, True),
        ("!keep.py\n*.py\n", "keep.py", False, True),
        # regex metacharacters are literal
        ("a+b(c).py\n", "a+b(c).py", False, True),
        ("a.py\n", "aXpy", False, False),
    ],
)
def test_patterns(lines, rel, is_dir, expected):
    assert ignored(lines, rel, is_dir) is expected


def test_blank_and_comment_lines_are_not_rules():
    assert parse_line("\n") is None
    assert parse_line("   \n") is None
    assert parse_line("# comment") is None
    assert parse_line("/") is None


def test_deeper_file_overrides_shallower(tmp_path):
    root = IgnoreFile.from_text(str(tmp_path), "*.py\n")
    sub = IgnoreFile.from_text(str(tmp_path / "sub"), "!keep.py\n")
    stack = IgnoreStack().push(root).push(sub)
    assert stack.ignored(str(tmp_path / "sub" / "keep.py"), False) is False
    assert stack.ignored(str(tmp_path / "sub" / "other.py"), False) is True
    # the deeper file's patterns are relative to its own folder and do not reach outside it
    assert stack.ignored(str(tmp_path / "keep.py"), False) is True


def test_read_missing_or_empty_file_gives_none(tmp_path):
    assert IgnoreFile.read(str(tmp_path / ".gitignore")) is None
    (tmp_path / ".gitignore").write_text("# only a comment\n")
    assert IgnoreFile.read(str(tmp_path / ".gitignore")) is None


def test_read_undecodable_bytes_does_not_crash(tmp_path):
    (tmp_path / ".gitignore").write_bytes(b"\xff\xfe*.py\nbuild/\n")
    parsed = IgnoreFile.read(str(tmp_path / ".gitignore"))
    assert parsed is not None and parsed.rules[-1].pattern == "build/"


def test_stack_for_reads_info_exclude_and_parent_gitignores(tmp_path):
    (tmp_path / ".git" / "info").mkdir(parents=True)
    (tmp_path / ".git" / "info" / "exclude").write_text("secret.py\n")
    (tmp_path / ".gitignore").write_text("/top_only.py\nsub/generated/\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / ".gitignore").write_text("local.py\n")
    (tmp_path / "sub" / "inner").mkdir()
    stack = stack_for(str(tmp_path / "sub" / "inner"))
    inner = tmp_path / "sub" / "inner"
    assert stack.ignored(str(inner / "secret.py"), False)
    assert stack.ignored(str(inner / "local.py"), False)
    assert stack.ignored(str(tmp_path / "sub" / "generated"), True)
    assert not stack.ignored(str(inner / "top_only.py"), False)
    assert not stack.ignored(str(inner / "kept.py"), False)


def test_info_exclude_is_weaker_than_gitignore(tmp_path):
    (tmp_path / ".git" / "info").mkdir(parents=True)
    (tmp_path / ".git" / "info" / "exclude").write_text("*.py\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / ".gitignore").write_text("!keep.py\n")
    stack = stack_for(str(tmp_path / "sub"))
    assert not stack.ignored(str(tmp_path / "sub" / "keep.py"), False)
    assert stack.ignored(str(tmp_path / "sub" / "other.py"), False)


def test_worktree_git_file_points_to_the_git_dir(tmp_path):
    real = tmp_path / "real-git-dir"
    (real / "info").mkdir(parents=True)
    (real / "info" / "exclude").write_text("hidden.py\n")
    work = tmp_path / "work"
    work.mkdir()
    (work / ".git").write_text(f"gitdir: {real}\n")
    assert repository_root(str(work)) == str(work)
    assert stack_for(str(work)).ignored(str(work / "hidden.py"), False)


def test_outside_a_repository_no_parent_files_are_read(tmp_path):
    (tmp_path / ".gitignore").write_text("*.py\n")
    (tmp_path / "sub").mkdir()
    if repository_root(str(tmp_path)) is None:
        assert not stack_for(str(tmp_path / "sub"))


@pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")
@pytest.mark.parametrize(
    "gitignore",
    [
        "*.py\n!keep*.py\n",
        "/a/\nb/**/c.py\n",
        "**/gen/\n[xy]*.py\n",
        "sub/*\n!sub/keep.py\n",
        "d?.py\n\\#hash.py\n",
    ],
)
def test_agrees_with_git_check_ignore(tmp_path, gitignore):
    """Ground truth: the same tree through `git check-ignore`."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    files = [
        "x.py",
        "keep1.py",
        "a/x.py",
        "q/a/x.py",
        "b/c.py",
        "b/d/c.py",
        "gen/m.py",
        "q/gen/m.py",
        "y.py",
        "sub/keep.py",
        "sub/other.py",
        "d1.py",
        "#hash.py",
        "plain.txt",
    ]
    for rel in files:
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x = 1\n")
    (tmp_path / ".gitignore").write_text(gitignore)
    proc = subprocess.run(
        ["git", "-C", str(tmp_path), "check-ignore", "--no-index", "--stdin"],
        input="\n".join(files),
        capture_output=True,
        text=True,
    )
    git_says = set(proc.stdout.split("\n")) - {""}
    stack = IgnoreStack().push(IgnoreFile.from_text(str(tmp_path), gitignore))

    def ours(rel: str) -> bool:
        parts = rel.split("/")
        for depth in range(1, len(parts)):  # an ignored parent folder hides everything in it
            if stack.ignored(os.path.join(str(tmp_path), *parts[:depth]), True):
                return True
        return stack.ignored(os.path.join(str(tmp_path), *parts), False)

    assert {rel for rel in files if ours(rel)} == git_says
