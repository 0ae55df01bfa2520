"""Settings from pyproject.toml / --config: discovery, validation, per-file-ignores, exclude."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from regcomp_lint.lint import config
from regcomp_lint.lint.config import ConfigError, Settings, find_pyproject, load


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


# -- finding the file -------------------------------------------------------------------------------


def test_nearest_pyproject_with_our_table_wins(tmp_path):
    write(tmp_path / "pyproject.toml", '[tool.regcomp-lint]\nignore = ["RC107"]\n')
    write(tmp_path / "pkg" / "pyproject.toml", '[project]\nname = "no-table-here"\n')
    write(tmp_path / "pkg" / "sub" / "train.py", "x = 1\n")
    assert find_pyproject(str(tmp_path / "pkg" / "sub" / "train.py")) == tmp_path / "pyproject.toml"
    settings = load(start=str(tmp_path / "pkg" / "sub"))
    assert settings.config_file == str(tmp_path / "pyproject.toml")
    assert settings.root == str(tmp_path)
    assert "RC107" not in settings.enabled


def test_inner_table_shadows_outer(tmp_path):
    write(tmp_path / "pyproject.toml", '[tool.regcomp-lint]\nignore = ["RC107"]\n')
    write(tmp_path / "inner" / "pyproject.toml", '[tool.regcomp-lint]\nselect = ["RC107"]\n')
    settings = load(start=str(tmp_path / "inner"))
    assert settings.enabled == frozenset({"RC107"})
    assert settings.root == str(tmp_path / "inner")


def test_no_config_gives_defaults_rooted_at_the_working_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "elsewhere" / "a.py", "x = 1\n")
    settings = load(start=str(tmp_path / "elsewhere" / "a.py"))
    assert settings.config_file is None
    assert settings.enabled == Settings().enabled
    assert settings.root == str(tmp_path)  # like ruff: the cache is not written into linted folders


def test_broken_pyproject_without_our_table_is_skipped(tmp_path):
    write(tmp_path / "pyproject.toml", '[tool.regcomp-lint]\nignore = ["RC107"]\n')
    write(tmp_path / "pkg" / "pyproject.toml", "[project\nname = 'broken'\n")
    assert find_pyproject(str(tmp_path / "pkg")) == tmp_path / "pyproject.toml"


def test_broken_pyproject_that_holds_our_table_is_an_error(tmp_path):
    write(tmp_path / "pyproject.toml", '[tool.regcomp-lint]\nselect = ["RC1"\n')
    with pytest.raises(ConfigError) as info:
        load(start=str(tmp_path))
    assert str(tmp_path / "pyproject.toml") in str(info.value) and "invalid TOML" in str(info.value)


# -- --config PATH ------------------------------------------------------------------------------


def test_config_option_reads_a_pyproject(tmp_path):
    path = write(tmp_path / "conf" / "pyproject.toml", '[tool.regcomp-lint]\nselect = ["RC1"]\nignore = ["RC107"]\n')
    settings = load(str(path), start=str(tmp_path))
    assert settings.enabled and all(code.startswith("RC1") for code in settings.enabled)
    assert "RC107" not in settings.enabled
    assert settings.root == str(tmp_path / "conf")


def test_config_option_reads_a_standalone_toml_with_top_level_keys(tmp_path):
    path = write(tmp_path / "regcomp.toml", 'select = ["RC107"]\n')
    assert load(str(path)).enabled == frozenset({"RC107"})


def test_config_option_reads_a_standalone_toml_with_our_table(tmp_path):
    path = write(tmp_path / "lint.toml", '[tool.regcomp-lint]\nselect = ["RC107"]\n')
    assert load(str(path)).enabled == frozenset({"RC107"})


def test_config_option_wins_over_the_nearest_pyproject(tmp_path):
    write(tmp_path / "pyproject.toml", '[tool.regcomp-lint]\nselect = ["RC2"]\n')
    other = write(tmp_path / "other.toml", 'select = ["RC107"]\n')
    assert load(str(other), start=str(tmp_path)).enabled == frozenset({"RC107"})


def test_missing_config_file_is_an_error(tmp_path):
    with pytest.raises(ConfigError, match="config file not found"):
        load(str(tmp_path / "nope.toml"))
    with pytest.raises(ConfigError, match="config file not found"):
        load(str(tmp_path))  # a folder is not a config file


# -- validation -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body,needle",
    [
        ('selct = ["RC1"]\n', "selct"),
        ('select = ["RC1"]\nper_file_ignores = {}\n', "per_file_ignores"),
        ('select = ["RC9"]\n', "'RC9'"),
        ('ignore = ["E501"]\n', "'E501'"),
        ('extend-select = ["nonsense-rule"]\n', "'nonsense-rule'"),
        ('select = "RC1, RC2"\n', "'RC1, RC2'"),
        ("select = [1]\n", "`select` must be a list of strings"),
        ('exclude = [["x"]]\n', "`exclude` must be a list of strings"),
        ("extend-exclude = 3\n", "`extend-exclude` must be a list of strings"),
        ('respect-gitignore = "yes"\n', "`respect-gitignore` must be true or false"),
        ("cache-dir = 1\n", "`cache-dir` must be a string"),
        ("fix-exclude = [1]\n", "`fix-exclude` must be a list of strings"),
        ('per-file-ignores = ["x"]\n', "`per-file-ignores` must be a table"),
        ('per-file-ignores = { "tests/*" = 1 }\n', "per-file-ignores.tests/*"),
        ('per-file-ignores = { "tests/*" = ["RC999"] }\n', "'RC999'"),
    ],
)
def test_invalid_settings_are_config_errors_that_name_the_problem(tmp_path, body, needle):
    path = write(tmp_path / "pyproject.toml", "[tool.regcomp-lint]\n" + body)
    with pytest.raises(ConfigError) as info:
        load(start=str(tmp_path))
    message = str(info.value)
    assert needle in message
    assert str(path) in message  # where to fix it


def test_unknown_key_message_lists_the_known_keys(tmp_path):
    write(tmp_path / "pyproject.toml", '[tool.regcomp-lint]\nselct = ["RC1"]\n')
    with pytest.raises(ConfigError) as info:
        load(start=str(tmp_path))
    assert "unknown key(s) in [tool.regcomp-lint]: selct" in str(info.value)
    assert "select" in str(info.value).split("known keys:")[1]


def test_table_that_is_not_a_table_is_an_error(tmp_path):
    write(tmp_path / "conf.toml", "[tool]\nregcomp-lint = 3\n")
    with pytest.raises(ConfigError, match="must be a table"):
        load(str(tmp_path / "conf.toml"))


def test_bad_toml_is_an_error_with_the_path(tmp_path):
    path = write(tmp_path / "conf.toml", "select = [\n")
    with pytest.raises(ConfigError) as info:
        load(str(path))
    assert str(path) in str(info.value) and "invalid TOML" in str(info.value)


def test_undecodable_config_is_an_error(tmp_path):
    path = tmp_path / "conf.toml"
    path.write_bytes(b"select = ['\xff']\n")
    with pytest.raises(ConfigError, match="cannot read"):
        load(str(path))


def test_selectors_by_prefix_code_and_name(tmp_path):
    write(
        tmp_path / "pyproject.toml",
        '[tool.regcomp-lint]\nselect = ["RC1", "suppress-errors"]\nignore = ["RC101"]\nextend-select = ["RC0"]\n',
    )
    enabled = load(start=str(tmp_path)).enabled
    assert "RC101" not in enabled and "RC107" in enabled and "RC001" in enabled
    assert not any(code.startswith("RC5") for code in enabled)


def test_a_single_string_is_accepted_as_a_one_item_list(tmp_path):
    write(tmp_path / "pyproject.toml", '[tool.regcomp-lint]\nselect = "RC107"\n')
    assert load(start=str(tmp_path)).enabled == frozenset({"RC107"})


# -- per-file-ignores ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "pattern,path,ignored",
    [
        ("tests/*", "tests/test_a.py", True),
        ("tests/*", "tests/deep/test_a.py", True),
        ("tests/*", "src/tests_helper.py", False),
        ("tests", "tests/deep/test_a.py", True),  # a folder name: everything inside
        ("tests/", "tests/test_a.py", True),
        ("conftest.py", "a/b/conftest.py", True),  # a name without "/": any level
        ("*.pyi", "pkg/stub.pyi", True),
        ("**/conftest.py", "conftest.py", True),
        ("**/conftest.py", "a/b/conftest.py", True),
        ("src/**/gen_*.py", "src/gen_x.py", True),
        ("src/**/gen_*.py", "src/a/b/gen_x.py", True),
        ("src/**/gen_*.py", "other/src/gen_x.py", False),
        ("scripts/train.py", "scripts/train.py", True),
        ("scripts/train.py", "other/scripts/train.py", False),
    ],
)
def test_per_file_ignores_globs(tmp_path, pattern, path, ignored):
    settings = Settings(root=str(tmp_path), per_file_ignores=((pattern, ("RC107",)),))
    enabled = settings.enabled_for(str(tmp_path / path))
    assert ("RC107" not in enabled) is ignored
    assert "RC101" in enabled


def test_per_file_ignores_from_toml_with_prefixes_and_relative_filenames(tmp_path, monkeypatch):
    write(
        tmp_path / "pyproject.toml",
        '[tool.regcomp-lint]\n[tool.regcomp-lint.per-file-ignores]\n"scripts/*" = ["RC1"]\n"*_test.py" = ["RC002", "RC003"]\n',
    )
    settings = load(start=str(tmp_path))
    monkeypatch.chdir(tmp_path)
    assert not any(c.startswith("RC1") for c in settings.enabled_for("scripts/train.py"))
    assert "RC107" in settings.enabled_for("train.py")
    assert {"RC002", "RC003"} & settings.enabled_for("pkg/a_test.py") == set()


def test_per_file_ignores_are_relative_to_the_config_not_the_working_folder(tmp_path, monkeypatch):
    write(tmp_path / "proj" / "pyproject.toml", '[tool.regcomp-lint.per-file-ignores]\n"scripts/*" = ["RC107"]\n')
    settings = load(start=str(tmp_path / "proj"))
    monkeypatch.chdir(tmp_path)
    assert "RC107" not in settings.enabled_for("proj/scripts/a.py")
    assert "RC107" in settings.enabled_for("scripts/a.py")


# -- exclude and the other keys -------------------------------------------------------------------


def test_exclude_and_extend_exclude_and_friends_are_read(tmp_path):
    write(
        tmp_path / "pyproject.toml",
        '[tool.regcomp-lint]\nexclude = ["gen"]\nextend-exclude = ["*_pb2.py"]\nrespect-gitignore = false\ncache-dir = "var/cache"\n',
    )
    settings = load(start=str(tmp_path))
    assert settings.exclude == ("gen",)
    assert settings.extend_exclude == ("*_pb2.py",)
    assert settings.respect_gitignore is False
    assert settings.cache_dir == "var/cache"


def test_default_exclude_is_kept_without_an_exclude_key(tmp_path):
    write(tmp_path / "pyproject.toml", '[tool.regcomp-lint]\nextend-exclude = ["gen"]\n')
    settings = load(start=str(tmp_path))
    assert ".venv" in settings.exclude and settings.extend_exclude == ("gen",)


def test_exclude_from_config_is_applied_by_discovery(tmp_path):
    from regcomp_lint.files.discovery import discover

    write(tmp_path / "pyproject.toml", '[tool.regcomp-lint]\nextend-exclude = ["generated", "legacy/*.py"]\n')
    for rel in ("a.py", "generated/g.py", "legacy/old.py", "legacy/keep/k.py"):
        write(tmp_path / rel, "x = 1\n")
    found = discover([str(tmp_path)], load(start=str(tmp_path)))
    rels = sorted(os.path.relpath(f, tmp_path).replace(os.sep, "/") for f in found.files)
    assert rels == ["a.py", "legacy/keep/k.py"]


def test_fix_exclude_marks_the_files_regcomp_fix_does_not_convert(tmp_path):
    write(tmp_path / "pyproject.toml", '[tool.regcomp-lint]\nfix-exclude = ["legacy/", "*_ddp.py"]\n')
    settings = load(start=str(tmp_path))
    assert settings.fix_exclude == ("legacy/", "*_ddp.py")
    assert settings.excludes_from_conversion(str(tmp_path / "legacy" / "old" / "train.py"))
    assert settings.excludes_from_conversion(str(tmp_path / "scripts" / "train_ddp.py"))
    assert not settings.excludes_from_conversion(str(tmp_path / "scripts" / "train.py"))
    assert settings.to_json()["fix-exclude"] == ["legacy/", "*_ddp.py"]
    # the lint itself is unaffected: same files, same results
    assert settings.fingerprint() == Settings(root=str(tmp_path), config_file=settings.config_file).fingerprint()
    assert settings.exclude == Settings().exclude


# -- fingerprint ---------------------------------------------------------------------------------


def test_fingerprint_changes_with_what_changes_results(tmp_path):
    base = Settings(root=str(tmp_path))
    assert base.fingerprint() == Settings(root=str(tmp_path)).fingerprint()
    assert base.fingerprint() != Settings(root=str(tmp_path), ignore=("RC107",)).fingerprint()
    assert base.fingerprint() != Settings(root=str(tmp_path), per_file_ignores=(("x", ("RC107",)),)).fingerprint()
    assert base.fingerprint() != Settings(root=str(tmp_path / "other")).fingerprint()
    # selecting the same rules another way is the same configuration
    assert (
        Settings(root=str(tmp_path), select=("ALL",)).fingerprint()
        == Settings(root=str(tmp_path), select=("RC",)).fingerprint()
    )
    # excludes decide which files are linted, not what a file's result is
    assert base.fingerprint() == Settings(root=str(tmp_path), extend_exclude=("gen",)).fingerprint()


def test_to_json_shows_the_resolved_settings(tmp_path):
    data = Settings(root=str(tmp_path), ignore=("RC107",), per_file_ignores=(("t/*", ("RC1",)),)).to_json()
    assert data["root"] == str(tmp_path)
    assert "RC107" not in data["enabled"] and data["per-file-ignores"] == {"t/*": ["RC1"]}
    assert set(config.KNOWN_KEYS) <= set(data) | {"select"}
