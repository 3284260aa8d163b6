"""The Makefile's command lines, printed with `make -n` (nothing is run or installed)."""

import os
import re
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
        [f"{venv}/bin/python", "scripts/editions.py", "open"],
        [f"{venv}/bin/jupyter", "lab", *flags, "my-work/00_start_here.ipynb"],
    ]  # the set-up step (venv, pip install) is not part of it


def test_make_lab_opens_the_students_workbook_and_the_solved_edition_on_request(tmp_path):
    venv = tmp_path / "venv"
    solved = "notebooks/00_start_here.ipynb"
    assert lab_command(venv, f"NOTEBOOK={solved}")[-1][-1] == solved
    assert (ROOT / "workbook" / "00_start_here.ipynb").is_file()


def test_make_lab_asks_id_for_the_user(tmp_path):
    _, command = lab_command(tmp_path / "venv")
    assert ("--allow-root" in command) == (os.getuid() == 0)


def printed(target: str, *options: str) -> list[str]:
    """The commands `make -n TARGET` prints (nothing runs), continued lines joined; make's own
    messages ("Nothing to be done") left out."""
    result = subprocess.run(
        ["make", "-n", "--no-print-directory", "-C", str(ROOT), target, *options],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    joined = re.sub(r"\\\n\s*", " ", result.stdout)
    return [line for line in joined.splitlines() if line.strip() and not line.startswith("make")]


def test_setup_installs_everything_but_torch_from_the_lock(tmp_path):
    venv = tmp_path / "venv"
    lines = printed("test", f"VENV={venv}", "-B")
    installs = [line for line in lines if "pip install" in line]
    torch_line, *project_lines = installs
    assert "torch" in torch_line and "-c" not in torch_line.split()
    assert project_lines and all("-c constraints.txt" in line for line in project_lines)


def test_the_venv_is_remade_when_the_lock_changes(tmp_path):
    venv = tmp_path / "venv"
    venv.mkdir()
    (venv / ".installed").touch()
    (venv / ".installed-site").touch()
    assert printed("setup", f"VENV={venv}", "-W", "constraints.txt")  # lock newer: reinstall
    assert not printed("setup", f"VENV={venv}")  # stamp newer than every input: nothing


def test_check_runs_lint_and_the_fast_unit_tests_only(tmp_path):
    venv = tmp_path / "venv"
    lines = printed("check", f"VENV={venv}", "-o", f"{venv}/.installed")
    (pytest_line,) = [line for line in lines if "-m pytest" in line]
    assert '-m "not slow and not ui"' in pytest_line and " tests " in pytest_line
    assert "--nbval" not in pytest_line
    assert any("ruff check" in line for line in lines)
    assert any("ruff format --check" in line for line in lines)


def test_test_portable_reruns_every_notebook_on_portable_kernels_and_one_thread(tmp_path):
    venv = tmp_path / "venv"
    lines = printed("test-portable", f"VENV={venv}", "-o", f"{venv}/.installed")
    (pytest_line,) = [line for line in lines if "-m pytest" in line]
    assert pytest_line.startswith("ATEN_CPU_CAPABILITY=default OMP_NUM_THREADS=1 ")
    assert " notebooks " in pytest_line and "--nbval " in pytest_line
    assert "--nbval-current-env" in pytest_line and "--nbval-lax" not in pytest_line


def test_ci_runs_the_test_command_then_the_portable_run():
    ci = (ROOT / ".ci" / "run").read_text()
    assert ci.index("make test TORCH=") < ci.index("make test-portable TORCH=")
