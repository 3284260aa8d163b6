"""The text a check cell prints, written and read back: one format for students and reports.

A passed check prints to stdout

    ✔ embed: correct on 2 test input(s).

and one that is not passed yet writes to stderr (which makes nbgrader's autograder give the
cell zero points)

    ✘ embed: not right yet
    you looked the positions up with the token ids (P[idx]). ...
    misconception: positions-by-token-id

where the first line says `not implemented yet` for an untouched stub, and the last line,
present only when a catalogued mistake explains the answer, names that mistake.
`read_outcome` turns such text back into an `Outcome` for the class report.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gptlib.lessons.checks.core import CheckError, NotImplementedYet

PASSED = "passed"
NOT_IMPLEMENTED = "not implemented"
MISTAKE = "mistake"
UNEXPLAINED = "unexplained"

_PASSED_LINE = re.compile(r"^✔ (?P<exercise>\S+): correct\b", re.MULTILINE)
_NOT_YET = re.compile(
    r"^✘ (?P<exercise>\S+): not (?P<what>implemented|right) yet\n(?P<message>[^\n]*)"
    r"(?:\nmisconception: (?P<mistake>[^\n]+))?",
    re.MULTILINE,
)


@dataclass(frozen=True)
class Outcome:
    """What a check cell reported: `status` is one of PASSED, NOT_IMPLEMENTED, MISTAKE (then
    `mistake` names it) or UNEXPLAINED (wrong in a way no catalogue entry explains)."""

    exercise: str
    status: str
    message: str = ""
    mistake: str | None = None


def passed_line(exercise: str, cases: int) -> str:
    return f"✔ {exercise}: correct on {cases} test input(s)."


def not_yet_text(error: CheckError) -> str:
    """The stderr report of a check that did not pass, ending in a newline."""
    if isinstance(error, NotImplementedYet):
        lines = [f"✘ {error.exercise}: not implemented yet", error.advice]
    else:
        lines = [f"✘ {error.exercise}: not right yet", error.detail]
    lines[1] = " ".join(lines[1].split())  # one line, so that it reads back unambiguously
    if error.mistake is not None:
        lines.append(f"misconception: {error.mistake}")
    return "\n".join(lines) + "\n"


def read_outcome(text: str) -> Outcome | None:
    """The outcome a check's printed text reports; None when it holds no check report."""
    not_yet = _NOT_YET.search(text)
    if not_yet is not None:
        exercise, message, mistake = not_yet["exercise"], not_yet["message"], not_yet["mistake"]
        if not_yet["what"] == "implemented":
            return Outcome(exercise, NOT_IMPLEMENTED, message)
        if mistake is not None:
            return Outcome(exercise, MISTAKE, message, mistake.strip())
        return Outcome(exercise, UNEXPLAINED, message)
    passed = _PASSED_LINE.search(text)
    if passed is not None:
        return Outcome(passed["exercise"], PASSED)
    return None
