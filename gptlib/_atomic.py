"""Atomic file writes: a reader sees the old file or the complete new one, never half of one."""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path beside `path`; on success it replaces `path` in one step.

    The temporary file lives in the same directory, so `os.replace` is a rename on one file
    system (atomic on POSIX and Windows). If the body raises, `path` is left untouched and the
    temporary file is removed. The file gets the permissions of any file the user creates
    (0o666 minus the umask), not the 0o600 of `tempfile.mkstemp`.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp_path = target.with_name(f".{target.name}.{secrets.token_hex(8)}.tmp")
    # O_EXCL: never reuse a file someone else made; mode 0o666 lets the kernel apply the umask
    # (and any default ACL) as it does for every file the user writes.
    os.close(os.open(tmp_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
    try:
        yield tmp_path
        with open(tmp_path, "rb") as f:
            os.fsync(f.fileno())
        os.replace(tmp_path, target)
    finally:
        tmp_path.unlink(missing_ok=True)
