"""Exercise checks: `check(name, fn)` tests a student's function and names the mistake.

`check` is what the notebooks call: it reports and never raises (see `in_notebook`); `verify`
is the same test raising `CheckError`, for tests and library code. Importing this package
registers the exercises of every notebook (each lesson's `gptlib/lessons/nbNN/checks.py`), or,
in a graded release's copy of gptlib, the recorded ones (`recorded`).
"""

from gptlib.lessons.engine.checks.core import (
    REGISTRY,
    CheckError,
    Exercise,
    Mistake,
    NotImplementedYet,
    Property,
    register,
    verify,
    whose,
)
from gptlib.lessons.engine.checks.in_notebook import check, show_solution
from gptlib.lessons.engine.checks.outcomes import Outcome, read_outcome

__all__ = [
    "REGISTRY",
    "CheckError",
    "Exercise",
    "Mistake",
    "NotImplementedYet",
    "Outcome",
    "Property",
    "check",
    "read_outcome",
    "register",
    "show_solution",
    "verify",
    "whose",
]

from gptlib.lessons.engine.checks.core import Registry
from gptlib.lessons.engine.checks.recorded import RECORDING, load_recording
from gptlib.lessons.engine.discover import lesson_modules


def _register_every_exercise() -> None:
    if RECORDING.is_file():  # a graded release: recorded results instead of the references
        for exercise in load_recording(RECORDING):
            register(exercise)
    else:
        lesson_modules("checks")


Registry.fill = _register_every_exercise
