"""The registry fills itself on first read: any lesson's checks module can be a fresh process's
first import (a teacher's scratch test), and reloading one in a live kernel replaces its
exercises instead of failing."""

import subprocess
import sys
from pathlib import Path

import pytest

from gptlib.lessons.engine.checks import REGISTRY, Exercise, register

ROOT = Path(__file__).resolve().parents[4]
LESSONS = sorted(p.parent.name for p in (ROOT / "gptlib" / "lessons").glob("nb*/checks.py"))


@pytest.mark.parametrize("lesson", LESSONS)
def test_a_lessons_checks_can_be_the_first_import(lesson):
    code = (
        f"import gptlib.lessons.{lesson}.checks\n"
        "from gptlib.lessons.engine.checks import REGISTRY\n"
        "print(len(REGISTRY))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=False
    )
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) == len(REGISTRY)


def test_reloading_a_lessons_checks_replaces_its_exercises():
    """In a process of its own: a reload leaves the module's new objects in the registry, which
    the other tests' imported names would no longer match."""
    code = (
        "import importlib\n"
        "import gptlib.lessons.nb04.checks as module\n"
        "from gptlib.lessons.engine.checks import REGISTRY\n"
        "before, count = REGISTRY['split-heads'], len(REGISTRY)\n"
        "importlib.reload(module)\n"
        "after = REGISTRY['split-heads']\n"
        "assert after is not before and after.reference is module._split, after\n"
        "assert len(REGISTRY) == count\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=False
    )
    assert done.returncode == 0, done.stderr


def test_another_module_cannot_take_an_exercises_name():
    copy = Exercise(name="split-heads", notebook="x", reference=abs, make_inputs=lambda g: [])
    with pytest.raises(ValueError, match="already registered"):
        register(copy)
