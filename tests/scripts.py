"""The repository's scripts (scripts/*.py) loaded as modules, for the tests of their functions."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"


def load_script(name: str) -> ModuleType:
    """A fresh module of scripts/<name>.py, registered in sys.modules as `<name>_under_test`.

    Registered because dataclasses look their module up while the file executes; scripts/ goes
    on sys.path, as when the script runs, so that it can import its neighbours (classroom.py
    imports editions.py).
    """
    if str(SCRIPTS) not in sys.path:
        sys.path.insert(0, str(SCRIPTS))
    spec = importlib.util.spec_from_file_location(f"{name}_under_test", SCRIPTS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module
