"""Guard-failure sites come from torch's ``shorten_filename``, which cuts at torch's install
folder, not at the working directory: the report must name the real file either way."""

from __future__ import annotations

import os

import pytest

torch_traceback = pytest.importorskip("torch.utils._traceback")

from regcomp_lint.trace.dynamo_logs import unshorten_torch_path  # noqa: E402


def test_a_project_beside_torchs_environment(tmp_path, monkeypatch):
    model = tmp_path / "proj" / "models" / "net.py"
    model.parent.mkdir(parents=True)
    model.write_text("x = 1\n")
    fake = tmp_path / "venv" / "site-packages" / "torch" / "utils" / "_traceback.py"
    monkeypatch.setattr(torch_traceback, "__file__", str(fake))
    printed = torch_traceback.shorten_filename(str(model))
    assert printed == "proj/models/net.py"  # relative to tmp_path, not to the working directory
    assert unshorten_torch_path(printed) == str(model)


@pytest.mark.skipif(not os.path.isfile("/etc/passwd"), reason="needs a file in a top-level folder")
def test_only_the_root_in_common_loses_a_character_and_is_restored():
    printed = torch_traceback.shorten_filename("/etc/passwd")
    assert printed == "tc/passwd"  # torch's own cut: one character too many
    assert unshorten_torch_path(printed) == "/etc/passwd"


def test_unknown_paths_are_left_as_printed():
    assert unshorten_torch_path("no/such/file.py") == "no/such/file.py"
    assert unshorten_torch_path("/abs/path.py") == "/abs/path.py"


def test_library_files_beside_torch_keep_their_short_name():
    import transformers.cache_utils as lib

    printed = torch_traceback.shorten_filename(lib.__file__)
    assert printed == "transformers/cache_utils.py"
    assert unshorten_torch_path(printed) == printed
