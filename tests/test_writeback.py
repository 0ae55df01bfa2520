"""Atomic write-back for ``--fix``: encoding, BOM, newlines and mode kept; concurrent edits never lost."""

from __future__ import annotations

import os
import stat

import pytest

from regcomp_lint.files import writeback


def test_roundtrip_keeps_crlf_and_content(tmp_path):
    path = tmp_path / "a.py"
    path.write_bytes(b"x = 1\r\ny = 2\r\n")
    snap = writeback.read(str(path))
    assert snap.text == "x = 1\r\ny = 2\r\n"
    writeback.write(snap, snap.text.replace("y = 2", "y = 3"))
    assert path.read_bytes() == b"x = 1\r\ny = 3\r\n"


def test_bom_is_kept(tmp_path):
    path = tmp_path / "bom.py"
    path.write_bytes(b"\xef\xbb\xbfname = '\xc3\xa9'\n")
    snap = writeback.read(str(path))
    assert snap.text == "name = 'é'\n"  # BOM not part of the text
    writeback.write(snap, "name = 'è'\n")
    assert path.read_bytes() == b"\xef\xbb\xbfname = '\xc3\xa8'\n"


def test_coding_line_encoding_is_kept(tmp_path):
    path = tmp_path / "latin.py"
    path.write_bytes(b"# -*- coding: latin-1 -*-\ns = '\xe9'\n")
    snap = writeback.read(str(path))
    assert snap.text.endswith("s = 'é'\n")
    writeback.write(snap, snap.text + "t = 'ü'\n")
    assert path.read_bytes() == b"# -*- coding: latin-1 -*-\ns = '\xe9'\nt = '\xfc'\n"


def test_unencodable_text_is_refused_and_file_untouched(tmp_path):
    path = tmp_path / "latin.py"
    original = b"# coding: latin-1\ns = 1\n"
    path.write_bytes(original)
    snap = writeback.read(str(path))
    with pytest.raises(writeback.WritebackError, match="cannot be encoded"):
        writeback.write(snap, snap.text + "s = '€'\n")
    assert path.read_bytes() == original
    assert os.listdir(tmp_path) == ["latin.py"]


def test_mode_is_kept(tmp_path):
    path = tmp_path / "script.py"
    path.write_text("x = 1\n")
    os.chmod(path, 0o750)
    snap = writeback.read(str(path))
    writeback.write(snap, "x = 2\n")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o750
    assert path.read_text() == "x = 2\n"


def test_refuses_to_overwrite_a_file_changed_since_read(tmp_path):
    path = tmp_path / "a.py"
    path.write_text("x = 1\n")
    snap = writeback.read(str(path))
    path.write_text("x = 1  # edited in the editor meanwhile\n")
    with pytest.raises(writeback.ChangedOnDisk, match="changed on disk"):
        writeback.write(snap, "x = 2\n")
    assert path.read_text() == "x = 1  # edited in the editor meanwhile\n"
    assert os.listdir(tmp_path) == ["a.py"], "temporary file left behind"


def test_symlink_is_written_through_and_kept(tmp_path):
    real = tmp_path / "real.py"
    real.write_text("x = 1\n")
    link = tmp_path / "link.py"
    link.symlink_to(real)
    snap = writeback.read(str(link))
    writeback.write(snap, "x = 2\n")
    assert link.is_symlink()
    assert real.read_text() == "x = 2\n"


def test_no_temporary_file_left_after_success(tmp_path):
    path = tmp_path / "a.py"
    path.write_text("x = 1\n")
    writeback.write(writeback.read(str(path)), "x = 2\n")
    assert sorted(os.listdir(tmp_path)) == ["a.py"]


def test_read_only_folder_is_a_clear_error(tmp_path):
    if os.geteuid() == 0:
        pytest.skip("root ignores folder permissions")
    folder = tmp_path / "ro"
    folder.mkdir()
    path = folder / "a.py"
    path.write_text("x = 1\n")
    snap = writeback.read(str(path))
    os.chmod(folder, 0o555)
    try:
        with pytest.raises(writeback.WritebackError, match="temporary file"):
            writeback.write(snap, "x = 2\n")
    finally:
        os.chmod(folder, 0o755)
    assert path.read_text() == "x = 1\n"


def test_read_only_file_is_refused_and_untouched(tmp_path):
    import os
    import stat

    import pytest

    from regcomp_lint.files import writeback

    path = tmp_path / "ro.py"
    path.write_bytes(b"x = 1\n")
    os.chmod(path, 0o444)
    snap = writeback.read(str(path))
    with pytest.raises(writeback.WritebackError, match="read-only"):
        writeback.write(snap, "x = 2\n")
    assert path.read_bytes() == b"x = 1\n"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o444
    assert [p.name for p in tmp_path.iterdir()] == ["ro.py"]
