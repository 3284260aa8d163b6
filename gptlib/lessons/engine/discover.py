"""Each lesson's module of one kind (its `checks`, its `answers`), found by its folder's name:
the engine sits below the lessons, so it names none of them and imports them only here, at run
time. A new lesson's folder `nbNN/` is found without a list."""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
import re
from pathlib import Path
from types import ModuleType

LESSONS = Path(__file__).resolve().parent.parent  # gptlib/lessons
LESSON_FOLDER = re.compile(r"nb\d\d")


def lesson_modules(kind: str) -> list[ModuleType]:
    """`gptlib.lessons.nbNN.<kind>` of every lesson NN that has one, in lesson order."""
    found = []
    for folder in sorted(pkgutil.iter_modules([str(LESSONS)]), key=lambda m: m.name):
        if folder.ispkg and LESSON_FOLDER.fullmatch(folder.name):
            name = f"gptlib.lessons.{folder.name}.{kind}"
            if importlib.util.find_spec(name) is not None:
                found.append(importlib.import_module(name))
    return found
