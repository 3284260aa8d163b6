"""The text a check cell prints, written and read back: one format for students and reports.

A passed check prints to stdout

    ✔ embed: correct on 2 test input(s).

and one that is not passed yet writes to stderr (which makes nbgrader's autograder give the
cell zero points)

    ✘ embed: not right yet
    you looked the positions up with the token ids. ...

where the first line says `not implemented yet` for an untouched stub. What a student reads
holds no internal names: the catalogued mistake's name, which the class report counts, travels
in the metadata of the notice the check displays in a kernel (`OUTCOME_KEY`, see
`outcome_metadata`). `outcome_from_outputs` reads a check cell's outputs back into an `Outcome`,
from that metadata, else from the text (`read_outcome`).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass

from gptlib.lessons.engine.checks.core import CheckError, NotImplementedYet

PASSED = "passed"
NOT_IMPLEMENTED = "not implemented"
MISTAKE = "mistake"
UNEXPLAINED = "unexplained"

# The key of a check's outcome in the metadata of the notice it displays in a kernel.
OUTCOME_KEY = "gptlib.check"
_PASSED_LINE = re.compile(r"^✔ (?P<exercise>\S+): correct\b", re.MULTILINE)
_NOT_YET = re.compile(
    r"^✘ (?P<exercise>\S+): not (?P<what>implemented|right) yet\n(?P<message>[^\n]*)",
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
    return "\n".join(lines) + "\n"


def outcome_of(error: CheckError) -> Outcome:
    """The outcome a failed check reports, the mistake's name included."""
    message = " ".join(
        (error.advice if isinstance(error, NotImplementedYet) else error.detail).split()
    )
    if isinstance(error, NotImplementedYet):
        return Outcome(error.exercise, NOT_IMPLEMENTED, message)
    if error.mistake is not None:
        return Outcome(error.exercise, MISTAKE, message, error.mistake)
    return Outcome(error.exercise, UNEXPLAINED, message)


def outcome_metadata(outcome: Outcome) -> dict:
    """The metadata of a check's notice: its outcome under `OUTCOME_KEY`, for the class report."""
    return {OUTCOME_KEY: asdict(outcome)}


def outcome_from_outputs(outputs: list) -> Outcome | None:
    """The outcome a check cell's outputs (nbformat output dicts) report: from the notice's
    metadata when the cell ran in a kernel, else from its printed text; None without a report."""
    for output in outputs:
        recorded = output.get("metadata", {}).get(OUTCOME_KEY)
        if recorded is not None:
            return Outcome(**recorded)
    streams = {"stdout": "", "stderr": ""}
    for output in outputs:
        if output.get("output_type") == "stream" and output.get("name") in streams:
            streams[output["name"]] += output["text"]
    return read_outcome(streams["stderr"]) or read_outcome(streams["stdout"])


def read_outcome(text: str) -> Outcome | None:
    """The outcome a check's printed text reports (the text names no mistake: a wrong answer
    reads back as UNEXPLAINED); None when it holds no check report."""
    not_yet = _NOT_YET.search(text)
    if not_yet is not None:
        exercise, message = not_yet["exercise"], not_yet["message"]
        if not_yet["what"] == "implemented":
            return Outcome(exercise, NOT_IMPLEMENTED, message)
        return Outcome(exercise, UNEXPLAINED, message)
    passed = _PASSED_LINE.search(text)
    if passed is not None:
        return Outcome(passed["exercise"], PASSED)
    return None
