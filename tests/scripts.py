"""The repository's scripts (scripts/*.py) loaded as modules, for the tests of their functions."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"


def load_script(name: str) -> ModuleType:
    """The module of scripts/<name>.py, registered in sys.modules as `<name>_under_test` and
    loaded once: every test file gets the same module object.

    Registered because dataclasses look their module up while the file executes, and because
    the processes `classroom.autograde` starts unpickle its functions by that name (a second
    load would make the first file's functions unpicklable); scripts/ goes on sys.path, as when
    the script runs, so that it can import its neighbours (classroom.py imports editions.py).
    """
    loaded = sys.modules.get(f"{name}_under_test")
    if loaded is not None:
        return loaded
    if str(SCRIPTS) not in sys.path:
        sys.path.insert(0, str(SCRIPTS))
    spec = importlib.util.spec_from_file_location(f"{name}_under_test", SCRIPTS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module
