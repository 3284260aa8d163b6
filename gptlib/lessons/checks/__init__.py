"""Exercise checks: `check(name, fn)` tests a student's function and names the mistake.

`check` is what the notebooks call: it reports and never raises (see `in_notebook`); `verify`
is the same test raising `CheckError`, for tests and library code. Importing this package
registers the exercises of every notebook (modules `nbNN`, or `nbNN_topic` while two
notebooks share a number during a renumbering), or, in a graded release's copy of gptlib, the
recorded ones (`recorded`).
"""

import importlib
import pkgutil
import re

from gptlib.lessons.checks.core import (
    REGISTRY,
    CheckError,
    Exercise,
    Mistake,
    NotImplementedYet,
    Property,
    register,
    verify,
)
from gptlib.lessons.checks.in_notebook import check, show_solution
from gptlib.lessons.checks.outcomes import Outcome, read_outcome

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
]

from gptlib.lessons.checks.recorded import RECORDING, load_recording

if RECORDING.is_file():  # a graded release: recorded results instead of the references
    for _exercise in load_recording(RECORDING):
        register(_exercise)
else:
    for _module in pkgutil.iter_modules(__path__):
        if re.fullmatch(r"nb\d+(?:_[a-z]+)?", _module.name):
            importlib.import_module(f"{__name__}.{_module.name}")
