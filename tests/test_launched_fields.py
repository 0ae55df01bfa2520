"""How the project launches a script (analysis/compile_settings/launches.py): the plugin fields
its launch files set, which the converter leaves unset."""

from __future__ import annotations

from regcomp_lint.analysis.compile_settings.launches import launched_fields

SCRIPT = "import torch\n"


def test_a_launch_flag_for_the_script_in_a_shell_file_beside_it(tmp_path):
    (tmp_path / "train.py").write_text(SCRIPT)
    (tmp_path / "run.sh").write_text("#!/bin/bash\naccelerate launch --dynamo_backend no --num_processes 2 train.py\n")
    found = launched_fields(str(tmp_path / "train.py"))
    assert list(found) == ["backend"]
    assert found["backend"].value == "no" and found["backend"].where == "run.sh:2 `--dynamo_backend no`"


def test_a_flag_for_another_script_or_after_the_script_does_not_count(tmp_path):
    (tmp_path / "train.py").write_text(SCRIPT)
    (tmp_path / "eval.py").write_text(SCRIPT)
    (tmp_path / "run.sh").write_text(
        "accelerate launch --dynamo_backend no eval.py\naccelerate launch train.py --dynamo_mode max-autotune\n"
    )
    assert launched_fields(str(tmp_path / "train.py")) == {}


def test_the_config_file_a_launch_names_and_a_makefile_in_the_folder_above(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "train.py").write_text(SCRIPT)
    (tmp_path / "fsdp.yaml").write_text("distributed_type: FSDP\ndynamo_config:\n  dynamo_backend: INDUCTOR\n")
    (tmp_path / "Makefile").write_text(
        "train:\n\taccelerate launch --config_file fsdp.yaml --dynamo_use_regional_compilation src/train.py\n"
    )
    found = launched_fields(str(src / "train.py"))
    assert set(found) == {"backend", "use_regional_compilation"}
    assert found["backend"].where == "../fsdp.yaml:3 `dynamo_backend: INDUCTOR`"


def test_unrelated_settings_files_and_stdin_give_nothing(tmp_path):
    (tmp_path / "train.py").write_text(SCRIPT)
    (tmp_path / "ci.yaml").write_text("jobs:\n  test:\n    runs-on: ubuntu-latest\n")
    assert launched_fields(str(tmp_path / "train.py")) == {}
    assert launched_fields("-") == {}
