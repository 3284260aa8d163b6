"""Write constraints.txt, the exact versions of the test and site toolchain (`make lock`).

    python3.11 scripts/lock.py                 # what `make lock` runs
    python3.11 scripts/lock.py --out /tmp/c.txt

Builds a fresh temporary virtual environment with the Python that runs this script, installs
into it every requirement that pyproject.toml lists (dependencies and every extra) except
torch, and writes what `pip freeze` then reports. torch is left out on purpose, and with it
its own dependencies (sympy, networkx, the nvidia-* and triton packages): the torch build is
chosen separately (CI pins one, `make test` takes the one pip picks), and pinning torch's
dependencies here would refuse other torch releases. Packages that torch and the toolchain
both need (jinja2, typing-extensions) are pinned.

`make setup`, `make test` and CI install with `pip install -c constraints.txt`, so a new
release of any tool changes nothing until this file is refreshed and committed. The library
itself keeps open lower bounds in pyproject.toml. Refresh after changing a requirement there,
or to move the toolchain forward; then run `make test`.
"""

from __future__ import annotations

import argparse
import platform
import re
import subprocess
import sys
import tempfile
import tomllib
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOCK = ROOT / "constraints.txt"
# Chosen separately from the toolchain; a freeze line for any of these means a tool pulled
# torch in, and its dependencies would be pinned with it.
NOT_LOCKED = re.compile(r"(torch|triton|nvidia-.*)", re.IGNORECASE)


def unlocked_requirements(pyproject: Path) -> list[str]:
    """Every requirement of the project and its extras, deduplicated, without torch."""
    project = tomllib.loads(pyproject.read_text())["project"]
    groups = [project["dependencies"], *project["optional-dependencies"].values()]
    requirements = dict.fromkeys(r for group in groups for r in group)
    return [r for r in requirements if not NOT_LOCKED.fullmatch(_name(r))]


def _name(requirement: str) -> str:
    match = re.match(r"\s*([A-Za-z0-9_.\-]+)", requirement)
    assert match, requirement
    return match.group(1)


def freeze(requirements: list[str], workdir: Path) -> list[str]:
    """Install `requirements` into a new venv under `workdir`; return its `pip freeze` lines."""
    env_dir = workdir / "venv"
    venv.create(env_dir, with_pip=True)
    python = str(env_dir / "bin" / "python")
    subprocess.run([python, "-m", "pip", "install", "--quiet", *requirements], check=True)
    frozen = subprocess.run(
        [python, "-m", "pip", "freeze", "--all", "--exclude-editable"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    # --all keeps setuptools and wheel, which tools need at run time; pip is the installer
    lines = [line for line in frozen.splitlines() if line.strip() and _name(line) != "pip"]
    lines.sort(key=lambda line: _name(line).lower().replace("_", "-"))
    pulled_in = [line for line in lines if NOT_LOCKED.fullmatch(_name(line))]
    if pulled_in:
        raise SystemExit(f"a tool depends on torch, which is never locked: {pulled_in}")
    return lines


def header() -> list[str]:
    """The comment at the top of the lock file: how it was made and how to refresh it."""
    return [
        "# The test and site toolchain, exact versions: pip install -c constraints.txt ...",
        "# Written by `make lock` (scripts/lock.py), never by hand; refresh it and commit.",
        "# torch and its own dependencies are not here: the torch build is chosen separately.",
        f"# Resolved on Python {platform.python_version()}, {platform.system()} "
        f"{platform.machine()}; a package only another platform needs is left unpinned.",
    ]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=LOCK, help="the file to write")
    args = parser.parse_args(argv)
    requirements = unlocked_requirements(ROOT / "pyproject.toml")
    with tempfile.TemporaryDirectory(prefix="gptlib-lock-") as workdir:
        lines = freeze(requirements, Path(workdir))
    args.out.write_text("\n".join(header() + lines) + "\n")
    print(f"{args.out}: {len(lines)} packages pinned (Python {sys.version.split()[0]})")


if __name__ == "__main__":
    main()
