"""`check(name, fn)`: the call in the locked cell under every exercise of the notebooks.

It never stops the notebook. A right answer prints one ✔ line. An answer that is not right
yet (or still the stub) writes the check's message to stderr; nbgrader's autograder gives a cell
with stderr output zero points, so grades are what they were when a check raised. Then the
reference answer takes the student's place under the same name in the notebook, and a box says
so, so that "Run All" reaches the end of a student version with exercises left to do. The box
carries the outcome, with the catalogued misconception's name, in its metadata for the class
report (see `outcomes`); the student reads no internal name.
"""

from __future__ import annotations

import contextlib
import functools
import html
import io
import os
import re
import sys
import tempfile
import textwrap
import warnings
from collections.abc import Callable, Iterator, MutableMapping
from typing import Any

from gptlib.lessons.engine.checks.core import (
    STAND_IN_AFTER,
    STAND_IN_MARK,
    CheckError,
    Exercise,
    NotImplementedYet,
    exercise_named,
    solution_source,
    verify,
)
from gptlib.lessons.engine.checks.journal import note
from gptlib.lessons.engine.checks.outcomes import (
    Outcome,
    not_yet_text,
    outcome_metadata,
    outcome_of,
    passed_line,
)

# Names IPython binds to recent inputs and outputs (`_`, `__`, `_i3`, `_7`, ...): never rebound.
_IPYTHON_HISTORY = re.compile(r"^(_+|_i+|_i?\d+|_ih|_oh|_dh)$")
_MAX_NOTE_LINES = 5


def check(
    name: str,
    student_fn: Callable[..., Any],
    namespace: MutableMapping[str, Any] | None = None,
) -> None:
    """Check `student_fn` against exercise `name` and report, without raising.

    Passed: one ✔ line on stdout. Not passed: the check's message on
    stderr, and every name in `namespace` (default: the caller's globals, i.e. the notebook)
    bound to `student_fn` is rebound to the exercise's reference, announced by a box. Only an
    unknown exercise name raises (ValueError), because that is a bug in the notebook.
    """
    exercise = exercise_named(name)
    if namespace is None:
        namespace = sys._getframe(1).f_globals
    error: CheckError | None = None
    with _stderr_collected() as notes:
        try:
            cases = verify(name, student_fn)
        except CheckError as exc:
            error = exc
    note(exercise, student_fn, error)  # the student's record, where one is kept (`journal`)
    if error is None:
        print(passed_line(name, cases))
        _relay(notes)
        return
    _relay(notes)
    sys.stdout.flush()
    sys.stderr.write(not_yet_text(error))
    sys.stderr.flush()
    names = _stand_in(exercise, student_fn, namespace, error)
    _show_notice(exercise.name, names, outcome_of(error), graded=not exercise.has_solution)


def show_solution(name: str) -> None:
    """Print the reference solution of exercise `name`: the deliberate, separate step a student
    takes to see an answer (a check's hints never contain its code). In a graded release it
    says that it is switched off."""
    print(solution_source(name))


def make_stand_in(
    exercise: Exercise, name: str, replaced: CheckError | None = None
) -> Callable[..., Any]:
    """The exercise's reference (or `stand_in`) under the student's `name`, marked as a stand-in
    so that checking it again says what became of the student's answer: still missing after a
    stub (or when `replaced`, the failed check's error, is not given), or written but not
    passed, with the catalogued mistake it was reported with. A class becomes a subclass, so
    that the student's name can be instantiated and subclassed like the original."""
    answer = exercise.stand_in if exercise.stand_in is not None else exercise.reference
    doc = (
        f"The reference answer of exercise {exercise.name!r}, standing in for your `{name}` "
        "until its check passes."
    )
    marks: dict[str, Any] = {STAND_IN_MARK: exercise.name}
    if replaced is not None and not isinstance(replaced, NotImplementedYet):
        marks[STAND_IN_AFTER] = replaced.mistake or ""
    if isinstance(answer, type):
        body = {"__doc__": doc, "__module__": answer.__module__, **marks}
        return type(answer)(name, (answer,), body)

    @functools.wraps(answer)
    def stand_in(*args: Any, **kwargs: Any) -> Any:
        return answer(*args, **kwargs)

    stand_in.__name__ = stand_in.__qualname__ = name
    stand_in.__doc__ = doc
    for key, value in marks.items():
        setattr(stand_in, key, value)
    return stand_in


def _stand_in(
    exercise: Exercise,
    student_fn: Any,
    namespace: MutableMapping[str, Any],
    replaced: CheckError | None = None,
) -> list[str]:
    """Rebind every name bound to `student_fn` to a stand-in; return those names (none in a
    graded release, which has no reference to stand in)."""
    if not exercise.has_solution:
        return []
    own = getattr(student_fn, "__name__", None)
    names = sorted(
        (key for key, value in namespace.items() if value is student_fn),
        key=lambda key: key != own,  # the function's own name first
    )
    names = [key for key in names if not _IPYTHON_HISTORY.match(key)]
    if names:
        replacement = make_stand_in(exercise, names[0], replaced)
        for key in names:
            namespace[key] = replacement
    return names


def _show_notice(exercise: str, names: list[str], outcome: Outcome, graded: bool = False) -> None:
    title = f"Not yet: {exercise}"
    if names:
        shown = f"`{names[0]}`"
        text = (
            f"The reference {shown} stands in for yours below, so the rest of the notebook "
            "runs; autograding counts this exercise as not passed. When you have fixed your "
            f"{shown}, run its cell, then this check again."
        )
    elif graded:
        text = (
            "In this graded assignment nothing stands in for your answer, so the cells that use "
            "it may fail until its check passes."
        )
    else:
        text = (
            "Nothing stands in for your answer: no name in the notebook refers to what was "
            "passed to check(), so the cells that use it may fail."
        )
    if _in_kernel():
        from IPython.display import display

        body = html.escape(text)
        body = re.sub(r"`([^`]+)`", r"<code>\1</code>", body)
        box = (
            '<div style="border-left: 6px solid #d97706; background: #fff7e6; color: #2b2100; '
            'padding: 0.5em 1em; margin: 0.3em 0; border-radius: 4px">'
            f"<b>{html.escape(title)}</b><br>{body}</div>"
        )
        display(
            {"text/plain": f"{title}\n{text}", "text/html": box},
            metadata=outcome_metadata(outcome),
            raw=True,
        )
    else:
        lines = textwrap.wrap(text, 84)
        rule = "─" * 86
        print("\n".join([f"┌{rule}", f"│ {title}", *(f"│ {line}" for line in lines), f"└{rule}"]))


def _in_kernel() -> bool:
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and getattr(shell, "kernel", None) is not None


@contextlib.contextmanager
def _stderr_collected() -> Iterator[list[str]]:
    """Keep whatever the checked code writes to stderr out of the cell's stderr, which would
    cost a right answer its points: warnings, prints to sys.stderr, and writes to the
    process's stderr from C code. The yielded list receives that text when the block ends."""
    notes: list[str] = []
    python_level = io.StringIO()
    with tempfile.TemporaryFile() as process_level:
        try:
            with (
                warnings.catch_warnings(record=True) as caught,
                contextlib.redirect_stderr(python_level),
                _process_stderr_to(process_level),
            ):
                warnings.simplefilter("always")
                yield notes
        finally:
            process_level.seek(0)
            written = python_level.getvalue() + process_level.read().decode(errors="replace")
            notes += [f"{w.category.__name__}: {w.message}" for w in caught]
            notes += [line for line in written.splitlines() if line.strip()]


@contextlib.contextmanager
def _process_stderr_to(file: Any) -> Iterator[None]:
    try:
        saved = os.dup(2)
    except OSError:  # no process-level stderr to guard
        yield
        return
    os.dup2(file.fileno(), 2)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def _relay(notes: list[str]) -> None:
    """Show what the checked code wrote to stderr on stdout instead, once per distinct line."""
    unique = list(dict.fromkeys(notes))
    if not unique:
        return
    print("Note: while it was checked, your code (or the reference) said:")
    for line in unique[:_MAX_NOTE_LINES]:
        print(f"  {line}")
    if len(unique) > _MAX_NOTE_LINES:
        print(f"  ... and {len(unique) - _MAX_NOTE_LINES} more line(s)")
