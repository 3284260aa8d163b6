"""Exercise checks: `check(name, fn)` tests a student's function and names the mistake.

Importing this package registers the exercises of every notebook (modules `nbNN`).
"""

import importlib
import pkgutil

from gptlib.lessons.checks.core import (
    REGISTRY,
    CheckError,
    Exercise,
    Mistake,
    NotImplementedYet,
    Property,
    check,
    register,
)

__all__ = [
    "REGISTRY",
    "CheckError",
    "Exercise",
    "Mistake",
    "NotImplementedYet",
    "Property",
    "check",
    "register",
]

for _module in pkgutil.iter_modules(__path__):
    if _module.name.startswith("nb"):
        importlib.import_module(f"{__name__}.{_module.name}")
