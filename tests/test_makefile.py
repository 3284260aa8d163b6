"""The Makefile's command lines, printed with `make -n` (nothing is run or installed)."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs GNU make")


def lab_command(venv: Path, *overrides: str) -> list[str]:
    """The commands `make lab` would run, with the set-up stamp treated as up to date."""
    printed = subprocess.run(
        ["make", "-n", "--no-print-directory", "-C", str(ROOT), "lab", f"VENV={venv}",
         "-o", f"{venv}/.installed", *overrides],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    return [line.split() for line in printed.splitlines() if line.strip()]


@pytest.mark.parametrize(("uid", "flags"), [("0", ["--allow-root"]), ("1000", [])])
def test_make_lab_allows_root_only_for_root(tmp_path, uid, flags):
    venv = tmp_path / "venv"
    assert lab_command(venv, f"USER_ID={uid}") == [
        [f"{venv}/bin/jupyter", "lab", *flags, "notebooks/00_start_here.ipynb"]
    ]  # the only command: the set-up step (venv, pip install) is not part of it


def test_make_lab_asks_id_for_the_user(tmp_path):
    (command,) = lab_command(tmp_path / "venv")
    assert ("--allow-root" in command) == (os.getuid() == 0)
