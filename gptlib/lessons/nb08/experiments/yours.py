"""Whose code produced a result (notebook 08): the student's function, or the reference that a
check put in its place because the student's has not passed yet."""

from __future__ import annotations

from collections.abc import Callable

from gptlib.lessons.engine.checks.core import STAND_IN_MARK


def whose(answer: Callable, what: str) -> str:
    """'your <what>' for the student's own function; for the reference standing in for it (see
    `gptlib.lessons.engine.checks.in_notebook.make_stand_in`), words that say so."""
    if getattr(answer, STAND_IN_MARK, None):
        return f"the reference {what} (yours has not passed its check)"
    return f"your {what}"
