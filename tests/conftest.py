"""Test-session setup shared by the unit tests and the notebooks run under nbval."""

import os
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


@pytest.fixture(autouse=True)
def one_torch_thread():
    """Unit tests use tiny models, which run fastest (and steadiest) on one thread."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
