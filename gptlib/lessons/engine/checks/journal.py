"""The student's record: every check a student runs, one line appended to a file on their machine.

`check` (in `in_notebook`) calls `note` after each check of a written answer: the lesson, the
exercise, the try (counted across kernel restarts, from the file), the outcome and the time,
as one JSON line. Nothing is sent anywhere; `gptlib.lessons.engine.record` shows the record.

Where the record lives (`record_path`): `make lab` opens the student's copies of the workbook in
`my-work/`, whose `.workbook.json` (written by `scripts/editions.py open`) marks the folder, and
JupyterLab starts a notebook's kernel in the notebook's folder. So a check records when the
kernel's working directory holds `.workbook.json` or the record itself (`RECORD_NAME`; an
empty file of that name starts a record in any folder), or when `GPTLIB_RECORD` names the file
(`GPTLIB_RECORD=off` turns recording off). Never while nbgrader grades or validates
(`NBGRADER_EXECUTION`), and never from the course's own runs of the notebooks (nbval,
`scripts/run_notebooks.py`, the classroom's release and grading), whose folders hold no marker:
the stored outputs stay reproducible and nothing is written into the repository.

Not recorded: a check of the untouched stub, and a check run again over the reference that
stands in for an answer (neither is a try of the student's code).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from gptlib.lessons.engine.checks.core import (
    STAND_IN_MARK,
    CheckError,
    Exercise,
    NotImplementedYet,
)
from gptlib.lessons.engine.checks.delegation import DELEGATED

RECORD_NAME = ".gptlib-record.jsonl"
# The file `scripts/editions.py open` (make lab) writes into my-work/: the student's folder.
WORKBOOK_MARKER = ".workbook.json"
ENVIRONMENT = "GPTLIB_RECORD"
OFF = ("", "0", "off", "no", "false")

PASSED = "passed"
MISTAKE = "mistake"
UNEXPLAINED = "unexplained"  # wrong in a way no catalogued mistake explains
CRASHED = "crashed"  # raised an error no catalogued mistake raises
OUTCOMES = (PASSED, MISTAKE, DELEGATED, UNEXPLAINED, CRASHED)


@dataclass(frozen=True)
class Event:
    """One check of a written answer, in lesson `lesson` ('02', `lesson_of`). `mistake` is the
    name the instructor's class report uses for it: the catalogued mistake's name, or
    "delegated" (None otherwise). `time`: UTC, ISO 8601 to the second."""

    lesson: str
    exercise: str
    attempt: int
    outcome: str
    mistake: str | None
    time: str

    def line(self) -> str:
        data = asdict(self)
        data["try"] = data.pop("attempt")
        return json.dumps(data, ensure_ascii=False, sort_keys=True)


def record_path(cwd: Path | None = None, environ: Mapping[str, str] | None = None) -> Path | None:
    """The record file of a kernel working in `cwd` (default: the current directory) with the
    environment `environ` (default: os.environ), or None where no record is kept (see the
    module docstring)."""
    environ = os.environ if environ is None else environ
    cwd = Path.cwd() if cwd is None else cwd
    if environ.get("NBGRADER_EXECUTION"):
        return None
    named = environ.get(ENVIRONMENT)
    if named is not None:
        return None if named.strip().lower() in OFF else cwd / Path(named).expanduser()
    if (cwd / RECORD_NAME).is_file() or (cwd / WORKBOOK_MARKER).is_file():
        return cwd / RECORD_NAME
    return None


def lesson_of(exercise: Exercise) -> str:
    """The lesson of an exercise as the record names it: its notebook's number, '02'."""
    return exercise.notebook.split("_", 1)[0]


def outcome_of_check(error: CheckError | None) -> tuple[str, str | None]:
    """(outcome, mistake name) of a check that raised `error` (None: it passed)."""
    if error is None:
        return PASSED, None
    if error.mistake == DELEGATED:
        return DELEGATED, DELEGATED
    if error.mistake is not None:
        return MISTAKE, error.mistake
    cause = error.__cause__
    if isinstance(cause, Exception) and not isinstance(cause, CheckError):
        return CRASHED, None
    return UNEXPLAINED, None


def read_events(path: Path) -> tuple[list[Event], int]:
    """The events of the record at `path`, in the order they were written, and the number of
    lines that could not be read (a damaged line is skipped, never fatal). A missing file is
    an empty record."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return [], 0
    events, damaged = [], 0
    for line in text.splitlines():
        if not line.strip():
            continue
        event = _event(line)
        if event is None:
            damaged += 1
        else:
            events.append(event)
    return events, damaged


def _event(line: str) -> Event | None:
    try:
        data = json.loads(line)
        event = Event(
            lesson=data["lesson"],
            exercise=data["exercise"],
            attempt=data["try"],
            outcome=data["outcome"],
            mistake=data.get("mistake"),
            time=data.get("time", ""),
        )
    except (ValueError, KeyError, TypeError, AttributeError):
        return None
    fields_ok = (
        isinstance(event.lesson, str)
        and isinstance(event.exercise, str)
        and isinstance(event.attempt, int)
        and event.outcome in OUTCOMES
        and (event.mistake is None or isinstance(event.mistake, str))
    )
    return event if fields_ok else None


def append(path: Path, event: Event) -> None:
    """Append `event` as one line with a single write in append mode, so that two kernels
    writing at once do not interleave within a line; a line left unfinished by a crash is
    closed first, so that it damages itself alone."""
    data = (event.line() + "\n").encode("utf-8")
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            data = b"\n" + data
        os.write(fd, data)
    finally:
        os.close(fd)


def note(exercise: Exercise, answer: Any, error: CheckError | None) -> Event | None:
    """Record the check of `answer` (which raised `error`, None when it passed) where a record
    is kept; the event written, or None. Never raises: the record must not break a check."""
    if isinstance(error, NotImplementedYet) or getattr(answer, "__dict__", {}).get(STAND_IN_MARK):
        return None
    try:
        path = record_path()
        if path is None:
            return None
        events, _ = read_events(path)
        outcome, mistake = outcome_of_check(error)
        event = Event(
            lesson=lesson_of(exercise),
            exercise=exercise.name,
            attempt=1 + sum(e.exercise == exercise.name for e in events),
            outcome=outcome,
            mistake=mistake,
            time=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        )
        append(path, event)
        return event
    except Exception:  # a full disk, a read-only folder, a folder where the file should be
        return None
