"""How many lines a piece of code takes, also for classes written in a notebook (notebook 07).

`inspect.getsource` cannot find a class defined in a notebook cell before Python 3.13 (the
kernel's `__main__` has no file); its methods, however, remember the cell they came from.
`source_of` uses that, and `code_lines` counts the lines of code of several objects.
"""

from __future__ import annotations

import inspect
import linecache
from collections.abc import Iterable
from types import CodeType


def source_of(obj: object) -> str:
    """The source text of a function or class, wherever it was defined.

    A class with no method of its own (a subclass that only renames its parent) gives its
    parent's source. ValueError when no source can be found.
    """
    try:
        return inspect.getsource(obj)
    except (OSError, TypeError):
        if not isinstance(obj, type):
            raise ValueError(f"no source found for {obj!r}") from None
    functions = [f for f in vars(obj).values() if inspect.isfunction(f)]
    if not functions:
        parents = [base for base in obj.__bases__ if base is not object]
        if parents:
            return source_of(parents[0])
        raise ValueError(f"no source found for class {obj.__name__}")
    return _class_around(obj, functions[0].__code__)


def _class_around(cls: type, method: CodeType) -> str:
    """The block of the last `class <name>` line above the method's first line."""
    filename, first = method.co_filename, method.co_firstlineno - 1
    lines = linecache.getlines(filename)
    header = f"class {cls.__name__}"
    starts = [
        i
        for i, line in enumerate(lines[:first])
        if line.startswith(header) and line[len(header) : len(header) + 1] in ("(", ":")
    ]
    if not starts:
        raise ValueError(f"no source found for class {cls.__name__} in {filename}")
    return "".join(inspect.getblock(lines[starts[-1] :]))


def code_lines(objects: Iterable[object]) -> dict[str, int]:
    """{name: number of source lines} for each function or class in `objects`, not counting
    blank lines and lines that hold only a comment (docstrings count)."""
    return {
        obj.__name__: sum(
            1 for line in source_of(obj).splitlines() if line.strip() and not _comment(line)
        )
        for obj in objects
    }


def _comment(line: str) -> bool:
    return line.lstrip().startswith("#")
