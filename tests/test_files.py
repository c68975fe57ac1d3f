"""Outputs are written atomically and keep the user's umask."""

from __future__ import annotations

import os
import stat

import pytest

from derive.files import write_atomic


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o027, 0o640), (0o077, 0o600)])
def test_written_files_follow_the_umask(tmp_path, umask, mode):
    old = os.umask(umask)
    try:
        write_atomic(tmp_path / "out.txt", "text\n")
        write_atomic(tmp_path / "out.bin", b"\x00\x01")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "out.txt").stat().st_mode) == mode
    assert stat.S_IMODE((tmp_path / "out.bin").stat().st_mode) == mode
    assert (tmp_path / "out.txt").read_text() == "text\n" and (tmp_path / "out.bin").read_bytes() == b"\x00\x01"


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "keep.txt"
    target.write_text("old")
    with pytest.raises(TypeError):
        write_atomic(target, 12345)  # not text: nothing is replaced
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["keep.txt"]
