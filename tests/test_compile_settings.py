"""Reading compile settings outside Python: every format, with the exact place of each value."""

from __future__ import annotations

import pytest

from regcomp_lint.analysis.compile_settings import Origin, hash_comments, mentions_settings, read_settings
from regcomp_lint.api import lint_source
from regcomp_lint.diagnostics import Location
from regcomp_lint.files.kinds import Kind, kind_of
from regcomp_lint.lint import settings_engine
from regcomp_lint.lint.fixes import fix_source


def found(text: str, kind: Kind):
    return [(s.field, s.value, s.origin, s.start, s.end) for s in read_settings(text, kind).settings]


def at(row: int, col: int) -> Location:
    return Location(row, col)


@pytest.mark.parametrize(
    "name,kind",
    [
        ("train.py", Kind.PYTHON),
        ("default_config.yaml", Kind.YAML),
        (".github/workflows/ci.yml", Kind.YAML),
        ("args.json", Kind.JSON),
        ("run.sh", Kind.SHELL),
        ("Makefile", Kind.MAKEFILE),
        ("rules.mk", Kind.MAKEFILE),
        ("Dockerfile", Kind.DOCKERFILE),
        ("Dockerfile.gpu", Kind.DOCKERFILE),
        ("Containerfile", Kind.DOCKERFILE),
        (".env", Kind.DOTENV),
        (".env.local", Kind.DOTENV),
        ("prod.env", Kind.DOTENV),
        ("train", Kind.PYTHON),
    ],
)
def test_kind_by_name(name, kind):
    assert kind_of(name) is kind


def test_kind_by_shebang():
    assert kind_of("launch", "#!/usr/bin/env bash\naccelerate launch x.py\n") is Kind.SHELL
    assert kind_of("launch", "#!/bin/sh\n") is Kind.SHELL
    assert kind_of("train", "#!/usr/bin/env python3\nimport torch\n") is Kind.PYTHON


def test_accelerate_config_yaml():
    text = "compute_environment: LOCAL_MACHINE\ndynamo_config:\n  dynamo_backend: INDUCTOR  # c\n  dynamo_mode: 'max-autotune'\n  dynamo_use_regional_compilation: true\n"
    assert found(text, Kind.YAML) == [
        ("backend", "INDUCTOR", Origin.CONFIG_FILE, at(3, 19), at(3, 27)),
        ("mode", "max-autotune", Origin.CONFIG_FILE, at(4, 17), at(4, 29)),
        ("use_regional_compilation", "true", Origin.CONFIG_FILE, at(5, 36), at(5, 40)),
    ]


def test_old_top_level_backend_only_in_an_accelerate_config():
    assert found("compute_environment: LOCAL_MACHINE\ndynamo_backend: INDUCTOR\n", Kind.YAML)[0][:3] == (
        "backend",
        "INDUCTOR",
        Origin.CONFIG_FILE,
    )
    assert found("name: x\ndynamo_backend: INDUCTOR\n", Kind.YAML) == []


def test_hf_argument_parser_json_and_nested_yaml():
    assert found('{"output_dir": "o",\n "torch_compile_mode": "lite"}', Kind.JSON) == [
        ("mode", "lite", Origin.TRAINER_FILE, at(2, 25), at(2, 29))
    ]
    nested = "training:\n  torch_compile: true\n  torch_compile_backend: inductor\n"
    assert [f[:3] for f in found(nested, Kind.YAML)] == [
        ("torch_compile", "true", Origin.TRAINER_FILE),
        ("backend", "inductor", Origin.TRAINER_FILE),
    ]


def test_workflow_env_map_and_run_block():
    text = (
        "jobs:\n  t:\n    env:\n      ACCELERATE_DYNAMO_BACKEND: eager\n    steps:\n      - run: |\n"
        "          echo hi\n          accelerate launch \\\n            --dynamo_backend inductor train.py\n"
    )
    assert found(text, Kind.YAML) == [
        ("backend", "eager", Origin.ENVIRONMENT, at(4, 34), at(4, 39)),
        ("backend", "inductor", Origin.LAUNCH_FLAG, at(9, 30), at(9, 38)),
    ]
    settings = read_settings(text, Kind.YAML).settings
    assert settings[1].command is not None and settings[1].command.script == "train.py"


def test_compose_environment_list():
    text = "services:\n  t:\n    environment:\n      - ACCELERATE_DYNAMO_MODE=lite\n"
    assert found(text, Kind.YAML) == [("mode", "lite", Origin.ENVIRONMENT, at(4, 32), at(4, 36))]


def test_shell_launch_options_stop_at_the_script():
    text = "accelerate launch --config_file cfg.yaml --dynamo-backend=eager --dynamo_use_dynamic t.py --dynamo_mode x\n"
    settings = read_settings(text, Kind.SHELL).settings
    assert [(s.field, s.value, s.spelled) for s in settings] == [
        ("backend", "eager", "--dynamo-backend"),
        ("dynamic", "", "--dynamo_use_dynamic"),
    ]
    assert settings[0].command is not None and settings[0].command.config_file == "cfg.yaml"
    assert settings[0].start == at(1, 59)


def test_shell_assignments_comments_and_quotes():
    text = "export ACCELERATE_DYNAMO_BACKEND='eager'  # ACCELERATE_DYNAMO_MODE=x\nFOO=ACCELERATE_DYNAMO_MODE=y\n"
    assert found(text, Kind.SHELL) == [("backend", "eager", Origin.ENVIRONMENT, at(1, 35), at(1, 40))]


def test_makefile_and_dockerfile_forms():
    make = "ACCELERATE_DYNAMO_BACKEND ?= eager\ntrain:\n\t@accelerate launch --dynamo_mode default t.py\n"
    assert [f[:3] for f in found(make, Kind.MAKEFILE)] == [
        ("backend", "eager", Origin.ENVIRONMENT),
        ("mode", "default", Origin.LAUNCH_FLAG),
    ]
    docker = 'ENV ACCELERATE_DYNAMO_MODE lite\nCMD ["accelerate", "launch", "--dynamo_backend", "eager", "t.py"]\n'
    assert found(docker, Kind.DOCKERFILE) == [
        ("mode", "lite", Origin.ENVIRONMENT, at(1, 28), at(1, 32)),
        ("backend", "eager", Origin.LAUNCH_FLAG, at(2, 51), at(2, 56)),
    ]


def test_trainer_flags():
    text = "python run.py --torch_compile --torch_compile_backend=eager --torch_compile_mode default\n"
    assert [f[:2] for f in found(text, Kind.SHELL)] == [
        ("torch_compile", ""),
        ("backend", "eager"),
        ("mode", "default"),
    ]


def test_unbalanced_quotes_are_skipped_not_fatal():
    assert found("echo 'ACCELERATE_DYNAMO_BACKEND=x\n", Kind.SHELL) == []


def test_hash_comments():
    lines = ["a: 1  # one", "url: http://x#y", 'b: "# not"  # two', "# three"]
    assert [(r, c) for r, c, _ in hash_comments(lines)] == [(1, 6), (3, 12), (4, 0)]


def test_prefilter_never_parses_unrelated_files(monkeypatch):
    def boom(*args):
        raise AssertionError("parsed")

    monkeypatch.setattr(settings_engine, "read_settings", boom)
    assert lint_source("name: ci\non: [push]\n", "ci.yml") == []
    assert not mentions_settings('{"a": 1}')


def test_a_broken_yaml_file_is_one_rc001_at_its_place():
    [diag] = lint_source("dynamo_config:\n  dynamo_backend: [INDUCTOR\n", "default_config.yaml")
    assert diag.code == "RC001" and "cannot parse YAML" in diag.message and diag.location.row == 3


def test_noqa_and_unused_noqa_in_yaml():
    text = "dynamo_config:\n  dynamo_backend: AOT_NVFUSER  # noqa: RC101\n  dynamo_use_regional_compilation: true\n"
    assert lint_source(text, "c.yaml") == []
    text = "dynamo_config:\n  dynamo_backend: INDUCTOR  # noqa: RC101\n  dynamo_use_regional_compilation: true\n"
    assert [d.code for d in lint_source(text, "c.yaml")] == ["RC002"]


def test_fix_keeps_comments_and_layout():
    text = "# mine\ndynamo_config:   # section\n  dynamo_backend: inductr    # typo\n  dynamo_use_regional_compilation: true\n"
    fixed, remaining = fix_source(text, "c.yaml", unsafe=True)
    assert fixed == text.replace("inductr", "inductor")
    assert remaining == []
    # safe only: the unsafe backend fix is not applied
    assert fix_source(text, "c.yaml")[0] == text


@pytest.mark.parametrize(
    "name,data,codes",
    [
        (
            "crlf.yaml",
            b"dynamo_config:\r\n  dynamo_backend: inductr\r\n  dynamo_use_regional_compilation: true\r\n",
            ["RC101"],
        ),
        ("bom.yaml", "\ufeffdynamo_config:\n  dynamo_backend: inductr\n".encode(), ["RC101", "RC501"]),
        ("anchors.yaml", b"base: &b\n  torch_compile_backend: indcutor\nother:\n  <<: *b\n", ["RC101", "RC501"]),
        ("multi.yaml", b"---\nx: 1\n---\ndynamo_config:\n  dynamo_backend: NO\n", []),
        ("deep.yaml", b"dynamo_x: " + b"[" * 5000 + b"]" * 5000 + b"\n", ["RC001"]),
        ("tabs.yaml", b"dynamo_config:\n\tdynamo_backend: x\n", ["RC001"]),
        ("empty.json", b"", []),
        ("latin1.sh", "# caf\xe9\necho hi\n".encode("latin-1"), []),  # no setting: never decoded
        ("utf16.json", '{"a": 1}'.encode("utf-16"), []),
        ("latin1_set.sh", "# caf\xe9\nACCELERATE_DYNAMO_BACKEND=x\n".encode("latin-1"), ["RC001"]),
    ],
)
def test_bad_input_gets_an_answer(name, data, codes):
    assert sorted(d.code for d in lint_source(data, name)) == codes
