"""Test-session setup shared by the unit tests and the notebooks run under nbval."""

import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parent.parent

# Kernels started by nbval inherit this environment: stored outputs were made on the CPU, and
# the kernels must import this checkout's gptlib even when it is not installed.
os.environ.setdefault("GPTLIB_DEVICE", "cpu")
os.environ.setdefault("PYTHONHASHSEED", "0")
os.environ.setdefault("TQDM_DISABLE", "1")
os.environ["PYTHONPATH"] = os.pathsep.join(
    p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p
)

# Notebooks used as test fixtures are data for tests, not notebooks to run under nbval.
collect_ignore_glob = ["fixtures/*"]

# A test that uses one of these is slow whatever it checks (`make check` runs no test marked
# slow): `built_site` builds the course website, `course` releases every course notebook
# through nbgrader.
SLOW_FIXTURES = frozenset({"built_site", "course"})


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark slow every test that uses a fixture of SLOW_FIXTURES (before -m selects)."""
    for item in items:
        if SLOW_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(autouse=True)
def one_torch_thread():
    """Unit tests use tiny models, which run fastest (and steadiest) on one thread."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@dataclass(frozen=True)
class BuiltSite:
    """The course website built by `python -m book.build` (what `make site` runs)."""

    html: Path
    repo: object  # book.launch.Repository the launch links were built for
    seconds: float


@pytest.fixture(scope="session")
def built_site(tmp_path_factory) -> BuiltSite:
    """The website, built once per session into a temporary folder (tests/test_site.py and the
    browser test tests/ui/test_site.py share it); skips without the `site` extra."""
    pytest.importorskip("jupyter_book", reason='the website needs pip install -e ".[site]"')
    from book.launch import Repository

    repo = Repository("https://github.com/example-org/gptlib-notebooks", "main")
    out = tmp_path_factory.mktemp("site")
    command = [sys.executable, "-m", "book.build", "--out", str(out)]
    command += ["--repo-url", repo.url, "--ref", repo.ref]
    start = time.perf_counter()
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=900)
    seconds = time.perf_counter() - start
    if result.returncode != 0:
        pytest.fail(
            f"{' '.join(command)} failed:\n{result.stdout[-6000:]}\n{result.stderr[-6000:]}"
        )
    return BuiltSite(out / "_build" / "html", repo, seconds)
