"""Atomic writes: all or nothing, and the permissions of any file the user writes."""

import os
import stat

import pytest

from gptlib._atomic import atomic_path


@pytest.fixture
def set_umask():
    """Set the process umask for one test, then restore the one before it."""
    before = os.umask(0o022)
    yield os.umask
    os.umask(before)


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_the_file_respects_the_umask(tmp_path, set_umask, umask, mode):
    set_umask(umask)
    target = tmp_path / "out.bin"
    with atomic_path(target) as tmp:
        assert stat.S_IMODE(tmp.stat().st_mode) == mode  # already while being written
        tmp.write_bytes(b"complete")
    assert stat.S_IMODE(target.stat().st_mode) == mode
    assert target.read_bytes() == b"complete"


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "out.bin"
    target.write_bytes(b"old")
    with pytest.raises(RuntimeError, match="disk full"), atomic_path(target) as tmp:
        tmp.write_bytes(b"ha")
        assert target.read_bytes() == b"old"  # readers never see the half-written file
        raise RuntimeError("disk full")
    assert target.read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["out.bin"]


def test_missing_folders_are_created(tmp_path):
    target = tmp_path / "a" / "b" / "out.bin"
    with atomic_path(target) as tmp:
        tmp.write_bytes(b"x")
    assert target.read_bytes() == b"x"
