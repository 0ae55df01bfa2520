"""Which files a run lints, given paths, excludes and .gitignore files."""

from __future__ import annotations

import os

import pytest

from regcomp_lint.files.discovery import ExcludeMatcher, discover
from regcomp_lint.lint.config import Settings


def make(root, *rels: str, text: str = "x = 1\n") -> None:
    for rel in rels:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def names(found, root) -> list[str]:
    return [os.path.relpath(path, root).replace(os.sep, "/") for path in found.files]


@pytest.fixture
def tree(tmp_path):
    make(tmp_path, "a.py", "b.pyi", "notes.txt", "script", "pkg/__init__.py", "pkg/mod.py", "pkg/sub/deep.py")
    return tmp_path


def test_walks_py_and_pyi_recursively_in_sorted_order(tree):
    found = discover([str(tree)], Settings(root=str(tree)))
    assert names(found, tree) == ["a.py", "b.pyi", "pkg/__init__.py", "pkg/mod.py", "pkg/sub/deep.py"]
    assert found.roots == [str(tree)]
    assert found.missing == [] and found.errors == []


def test_order_is_deterministic(tree):
    first = discover([str(tree)], Settings(root=str(tree))).files
    assert discover([str(tree)], Settings(root=str(tree))).files == first


def test_explicit_file_is_linted_whatever_its_extension(tree):
    found = discover([str(tree / "script"), str(tree / "notes.txt")], Settings(root=str(tree)))
    assert names(found, tree) == ["script", "notes.txt"]


def test_missing_paths_are_reported(tree):
    found = discover([str(tree / "nope.py"), str(tree / "a.py")], Settings(root=str(tree)))
    assert found.missing == [str(tree / "nope.py")]
    assert names(found, tree) == ["a.py"]


def test_broken_symlink_given_explicitly_is_missing(tree):
    (tree / "dangling.py").symlink_to(tree / "gone.py")
    assert discover([str(tree / "dangling.py")], Settings(root=str(tree))).missing == [str(tree / "dangling.py")]


def test_overlapping_paths_give_each_file_once(tree):
    found = discover(
        [str(tree), str(tree / "pkg"), str(tree / "a.py"), str(tree / "pkg" / "mod.py")], Settings(root=str(tree))
    )
    assert sorted(names(found, tree)) == ["a.py", "b.pyi", "pkg/__init__.py", "pkg/mod.py", "pkg/sub/deep.py"]


def test_relative_paths_are_shown_as_typed(tree, monkeypatch):
    monkeypatch.chdir(tree)
    found = discover(["."], Settings(root=str(tree)))
    assert found.files == [
        "a.py",
        "b.pyi",
        os.path.join("pkg", "__init__.py"),
        os.path.join("pkg", "mod.py"),
        os.path.join("pkg", "sub", "deep.py"),
    ]
    assert discover(["pkg"], Settings(root=str(tree))).files[0] == os.path.join("pkg", "__init__.py")


def test_default_excludes_skip_venv_and_caches(tmp_path):
    make(
        tmp_path,
        "ok.py",
        ".venv/lib/x.py",
        "__pycache__/c.py",
        "build/b.py",
        "node_modules/n.py",
        "src/.git/hooks/h.py",
    )
    assert names(discover([str(tmp_path)], Settings(root=str(tmp_path))), tmp_path) == ["ok.py"]


def test_exclude_replaces_the_defaults(tmp_path):
    make(tmp_path, "ok.py", "build/b.py", "gen/g.py")
    found = discover([str(tmp_path)], Settings(root=str(tmp_path), exclude=("gen",)))
    assert names(found, tmp_path) == ["ok.py", "build/b.py"]


def test_extend_exclude_adds_to_the_defaults(tmp_path):
    make(tmp_path, "ok.py", "build/b.py", "gen/g.py", "x_pb2.py")
    found = discover([str(tmp_path)], Settings(root=str(tmp_path), extend_exclude=("gen", "*_pb2.py")))
    assert names(found, tmp_path) == ["ok.py"]


@pytest.mark.parametrize(
    "pattern,expected",
    [
        ("tests/data", ["src/tests/data/d.py", "src/x.py", "tests/t.py"]),  # relative to the root
        ("tests/data/", ["src/tests/data/d.py", "src/x.py", "tests/t.py"]),
        ("./tests/data", ["src/tests/data/d.py", "src/x.py", "tests/t.py"]),
        ("data", ["src/x.py", "tests/t.py"]),  # a name: any level
        ("src/**/d.py", ["src/x.py", "tests/data/d.py", "tests/t.py"]),
        ("**/d.py", ["src/x.py", "tests/t.py"]),
        ("tests/*.py", ["src/tests/data/d.py", "src/x.py", "tests/data/d.py"]),
        ("*.py", []),
    ],
)
def test_exclude_globs(tmp_path, pattern, expected):
    make(tmp_path, "tests/data/d.py", "tests/t.py", "src/x.py", "src/tests/data/d.py")
    found = discover([str(tmp_path)], Settings(root=str(tmp_path), exclude=(pattern,)))
    assert sorted(names(found, tmp_path)) == expected


def test_path_patterns_are_relative_to_the_settings_root_not_the_walked_folder(tmp_path):
    make(tmp_path, "proj/tests/data/d.py", "proj/tests/t.py")
    settings = Settings(root=str(tmp_path / "proj"), exclude=("tests/data",))
    assert names(discover([str(tmp_path / "proj" / "tests")], settings), tmp_path) == ["proj/tests/t.py"]


def test_explicit_file_is_excluded_by_pattern_or_excluded_parent(tmp_path):
    make(tmp_path, "gen/g.py", "x_pb2.py", "keep.py")
    settings = Settings(root=str(tmp_path), extend_exclude=("gen", "*_pb2.py"))
    found = discover([str(tmp_path / "gen" / "g.py"), str(tmp_path / "x_pb2.py"), str(tmp_path / "keep.py")], settings)
    assert names(found, tmp_path) == ["keep.py"]
    assert found.missing == []


def test_explicit_folder_is_walked_even_when_its_name_is_excluded(tmp_path):
    make(tmp_path, "build/b.py", "build/build/hidden.py")
    found = discover([str(tmp_path / "build")], Settings(root=str(tmp_path)))
    assert names(found, tmp_path) == ["build/b.py"]


def test_folders_above_the_root_do_not_exclude(tmp_path):
    make(tmp_path, "build/proj/a.py")
    root = tmp_path / "build" / "proj"
    assert names(discover([str(root / "a.py")], Settings(root=str(root))), tmp_path) == ["build/proj/a.py"]


# -- .gitignore --------------------------------------------------------------------------------


def git_repo(tmp_path):
    (tmp_path / ".git" / "info").mkdir(parents=True)
    return tmp_path


def test_gitignore_is_respected_with_nested_files_and_negation(tmp_path):
    repo = git_repo(tmp_path)
    make(
        repo,
        "a.py",
        "gen_a.py",
        "gen_keep.py",
        "out/o.py",
        "sub/s.py",
        "sub/local.py",
        "sub/deep/local.py",
        "sub/deep/d.py",
    )
    (repo / ".gitignore").write_text("gen_*.py\n!gen_keep.py\n/out/\n")
    (repo / "sub" / ".gitignore").write_text("local.py\n")
    found = discover([str(repo)], Settings(root=str(repo)))
    assert names(found, repo) == ["a.py", "gen_keep.py", "sub/s.py", "sub/deep/d.py"]


def test_git_info_exclude_is_respected(tmp_path):
    repo = git_repo(tmp_path)
    (repo / ".git" / "info" / "exclude").write_text("private.py\n")
    make(repo, "a.py", "private.py")
    assert names(discover([str(repo)], Settings(root=str(repo))), repo) == ["a.py"]


def test_parent_gitignore_applies_when_walking_a_subfolder(tmp_path):
    repo = git_repo(tmp_path)
    (repo / ".gitignore").write_text("*_gen.py\nsub/skip/\n")
    make(repo, "sub/a.py", "sub/b_gen.py", "sub/skip/x.py")
    assert names(discover([str(repo / "sub")], Settings(root=str(repo))), repo) == ["sub/a.py"]


def test_anchored_dir_only_and_double_star_patterns(tmp_path):
    repo = git_repo(tmp_path)
    (repo / ".gitignore").write_text("/top.py\nlogs/\n**/cache/**\n")
    make(repo, "top.py", "sub/top.py", "logs/l.py", "a/logs/l.py", "a/cache/c.py", "a/cache/x/c.py")
    (repo / "logs_file.py").write_text("x = 1\n")
    found = discover([str(repo)], Settings(root=str(repo)))
    assert names(found, repo) == ["logs_file.py", "sub/top.py"]


def test_respect_gitignore_false_lints_ignored_files(tmp_path):
    repo = git_repo(tmp_path)
    (repo / ".gitignore").write_text("*.py\n")
    make(repo, "a.py")
    assert names(discover([str(repo)], Settings(root=str(repo), respect_gitignore=False)), repo) == ["a.py"]
    assert discover([str(repo)], Settings(root=str(repo))).files == []


def test_explicit_file_is_linted_even_if_gitignored(tmp_path):
    repo = git_repo(tmp_path)
    (repo / ".gitignore").write_text("a.py\n")
    make(repo, "a.py")
    assert names(discover([str(repo / "a.py")], Settings(root=str(repo))), repo) == ["a.py"]


# -- symlinks and unreadable folders -------------------------------------------------------------


def test_symlink_loops_terminate_and_linked_folders_are_not_followed(tmp_path):
    make(tmp_path, "pkg/a.py", "elsewhere/e.py")
    (tmp_path / "pkg" / "loop").symlink_to(tmp_path / "pkg", target_is_directory=True)
    (tmp_path / "pkg" / "outside").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    found = discover([str(tmp_path / "pkg")], Settings(root=str(tmp_path)))
    assert names(found, tmp_path) == ["pkg/a.py"]


def test_symlinked_file_is_linted_and_broken_links_skipped(tmp_path):
    make(tmp_path, "real/r.py")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "link.py").symlink_to(tmp_path / "real" / "r.py")
    (tmp_path / "pkg" / "broken.py").symlink_to(tmp_path / "nowhere.py")
    assert names(discover([str(tmp_path / "pkg")], Settings(root=str(tmp_path))), tmp_path) == ["pkg/link.py"]


def test_explicit_symlinked_folder_is_walked(tmp_path):
    make(tmp_path, "real/r.py")
    (tmp_path / "alias").symlink_to(tmp_path / "real", target_is_directory=True)
    assert names(discover([str(tmp_path / "alias")], Settings(root=str(tmp_path))), tmp_path) == ["alias/r.py"]


def test_unreadable_folder_is_an_error_and_the_walk_goes_on(tmp_path, monkeypatch):
    make(tmp_path, "ok.py", "locked/x.py", "later/y.py")
    real_scandir = os.scandir

    def scandir(path):
        if os.path.basename(path) == "locked":
            raise PermissionError(13, "Permission denied", path)
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    found = discover([str(tmp_path)], Settings(root=str(tmp_path)))
    assert names(found, tmp_path) == ["ok.py", "later/y.py"]
    assert len(found.errors) == 1
    assert "locked" in found.errors[0] and "cannot read folder: Permission denied" in found.errors[0]


def test_exclude_matcher_is_empty_without_patterns(tmp_path):
    assert not ExcludeMatcher((), str(tmp_path))
    assert ExcludeMatcher(("x",), str(tmp_path))


def test_walk_picks_the_files_compile_settings_live_in(tmp_path):
    make(
        tmp_path,
        "train.py",
        "default_config.yaml",
        ".github/workflows/ci.yml",
        "args.json",
        "launch.sh",
        "Makefile",
        "docker/Dockerfile",
        ".env",
        "README.md",
        "data.csv",
        "LICENSE",
    )
    found = discover([str(tmp_path)], Settings(root=str(tmp_path)))
    assert names(found, tmp_path) == [
        ".env",
        "Makefile",
        "args.json",
        "default_config.yaml",
        "launch.sh",
        "train.py",
        ".github/workflows/ci.yml",
        "docker/Dockerfile",
    ]
