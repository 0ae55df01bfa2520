"""``launched_fields`` reads each launch file once while it stays the same: a folder of scripts
asks about the same ``run.sh`` and config files once per script."""

from __future__ import annotations

from pathlib import Path

import pytest

from regcomp_lint.analysis.compile_settings import launches
from regcomp_lint.analysis.compile_settings.launches import launched_fields


def test_one_read_per_file_and_a_new_one_when_it_changes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("a.py", "b.py"):
        (tmp_path / name).write_text("import torch\n", encoding="utf-8")
    run = tmp_path / "run.sh"
    run.write_text("accelerate launch --dynamo_backend no a.py\naccelerate launch b.py\n", encoding="utf-8")
    reads: list[str] = []
    real = launches.read_settings

    def counting(text, kind):
        reads.append(text)
        return real(text, kind)

    monkeypatch.setattr(launches, "read_settings", counting)
    first = launched_fields(str(tmp_path / "a.py"))
    assert first["backend"].value == "no"
    assert launched_fields(str(tmp_path / "b.py")) == {}
    assert launched_fields(str(tmp_path / "a.py")) == first
    assert len(reads) == 1
    run.write_text("accelerate launch --dynamo_backend eager b.py\n", encoding="utf-8")
    assert launched_fields(str(tmp_path / "a.py")) == {}
    assert launched_fields(str(tmp_path / "b.py"))["backend"].value == "eager"
    assert len(reads) == 2
