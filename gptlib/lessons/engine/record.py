"""The student's own record, shown: per lesson and for the whole course, which exercises they
solved and at which try, which misconceptions their wrong tries showed and what to revisit.

    from gptlib.lessons.engine.record import show
    show("02")   # lesson 02's part (the last cell of each workbook lesson)
    show()       # the whole course (00's last section)

The record itself is the file the checks append to (`checks.journal`, which says where it lives
and when nothing is written); nothing leaves the student's machine. `course_record` turns the
events into a `CourseRecord`, a pure function of the events and the `Lesson`s (the registered
exercises, their catalogued mistakes and the notebook sections that pose them); `show` renders
it as HTML in a notebook, with a plain-text twin (`CourseRecord.text`).

The misconceptions carry the names the instructor's class report counts (scripts/classroom.py):
the catalogued mistake's name, or "delegated". What to revisit is derived, never listed by hand:
the section of the lesson whose heading stands above the exercise's check cell (`outline`), read
from the notebooks beside the record (the student's copies in my-work/), else from the
course's own folders.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from gptlib.lessons.engine.checks.core import REGISTRY, Exercise
from gptlib.lessons.engine.checks.delegation import DELEGATED
from gptlib.lessons.engine.checks.journal import (
    CRASHED,
    PASSED,
    RECORD_NAME,
    UNEXPLAINED,
    Event,
    lesson_of,
    read_events,
    record_path,
)

# The course's folders (a checkout: gptlib installed with pip install -e), where a lesson's
# notebook is read when it is not beside the record.
_COURSE = Path(__file__).resolve().parents[3]
_COURSE_FOLDERS = (_COURSE / "workbook", _COURSE / "notebooks")
_HEADING = re.compile(r"^(#{1,4})\s+(.+?)\s*#*\s*$", re.MULTILINE)
_CHECK_CALL = re.compile(r"""\bcheck\(\s*["']([^"']+)["']""")
_SUMMARY_END = re.compile(r"[:;]|\.\s|\.$")
_SUMMARY_CHARS = 110
# JupyterLab right-aligns table cells; the record's columns are text.
_CELL = 'style="text-align: left; vertical-align: top"'
_NOTEBOOK = re.compile(r"\d\d_[a-z0-9_]+\.ipynb")  # a lesson's notebook: not NN_x.new.ipynb

DELEGATED_ABOUT = "handed the work to code that already does it"
UNEXPLAINED_ABOUT = "wrong in a way no catalogued mistake explains"
CRASHED_ABOUT = "your code raised an error"
NO_RECORD = (
    "No record is kept in this folder. Your record is kept beside your copies of the workbook in "
    f"my-work/ (the folder make lab opens): each check you run there adds a line to {RECORD_NAME}, "
    "on your machine only. Elsewhere, an empty file of that name in a notebook's folder starts a "
    "record there, or the environment variable GPTLIB_RECORD names the file."
)


@dataclass(frozen=True)
class Section:
    """Where an exercise is posed: the headings above its check cell, from the lesson's section
    (level 2) down, and the file of the notebook they were read from."""

    headings: tuple[str, ...]
    notebook: Path | None = None

    def text(self) -> str:
        return " › ".join(self.headings)

    def anchor(self) -> str:
        """The deepest heading as JupyterLab's anchor of it (spaces become dashes)."""
        return self.headings[-1].replace("`", "").replace(" ", "-")


@dataclass(frozen=True)
class Outline:
    """What a lesson's notebook says of its exercises: its title and each one's section."""

    title: str
    sections: dict[str, tuple[str, ...]]  # exercise name -> headings, in the order checked


@dataclass(frozen=True)
class Lesson:
    """One lesson as the record shows it: `name` is its number ('02', `lesson_of`),
    `exercises` its exercise names in the order the notebook checks them,
    `sections` where each is posed, `mistakes` each exercise's catalogue {name: what it is}."""

    name: str
    title: str
    exercises: tuple[str, ...]
    sections: Mapping[str, Section]
    mistakes: Mapping[str, Mapping[str, str]]


@dataclass(frozen=True)
class Attempt:
    """One try shown in the record: its number, outcome, the class report's name for its
    misconception (None for a pass, an unexplained or a crashed try) and what that means."""

    number: int
    outcome: str
    mistake: str | None
    about: str


@dataclass(frozen=True)
class ExerciseRecord:
    """One exercise in the record. `attempts`: every try that did not pass, and the first that
    did. `tries`: all tries. `solved_at`: the first passing try (None: not solved yet).
    `last_passed`: whether the latest try passed. `revisit`: the exercise's section, when a
    try went wrong."""

    name: str
    tries: int
    solved_at: int | None
    last_passed: bool
    attempts: tuple[Attempt, ...]
    revisit: Section | None

    @property
    def misconceptions(self) -> tuple[str, ...]:
        """The names of the misconceptions shown, in the order first shown (as the class report
        names them)."""
        names = (a.mistake for a in self.attempts if a.mistake is not None)
        return tuple(dict.fromkeys(names))

    def status(self) -> str:
        if self.solved_at is None:
            return "not tried yet" if not self.tries else f"not solved yet ({_tries(self.tries)})"
        status = f"solved at try {self.solved_at}"
        if not self.last_passed:
            status += f"; your latest try ({self.tries}) did not pass"
        return status


@dataclass(frozen=True)
class LessonRecord:
    name: str
    title: str
    exercises: tuple[ExerciseRecord, ...]

    @property
    def solved(self) -> int:
        return sum(e.solved_at is not None for e in self.exercises)

    @property
    def started(self) -> bool:
        return any(e.tries for e in self.exercises)

    def headline(self) -> str:
        if not self.started:
            return f"{self.title}: not started ({_count(len(self.exercises), 'exercise')})."
        return f"{self.title}: {self.solved} of {len(self.exercises)} exercises solved."


@dataclass(frozen=True)
class CourseRecord:
    """The record of some lessons (one, or the whole course), read from `where`; `damaged`:
    lines of the file that could not be read and were skipped."""

    lessons: tuple[LessonRecord, ...]
    where: str
    damaged: int = 0

    def headline(self) -> str:
        exercises = [e for lesson in self.lessons for e in lesson.exercises]
        solved = sum(e.solved_at is not None for e in exercises)
        shown = {(e.name, m) for e in exercises for m in e.misconceptions}
        if len(self.lessons) == 1:
            lead = f"Your record of {self.lessons[0].title}"
        else:
            lead = "Your record across the course"
        return (
            f"{lead} ({self.where}): {solved} of {_count(len(exercises), 'exercise')} solved, "
            f"{_count(len(shown), 'misconception')} shown by your wrong tries."
        )

    def text(self) -> str:
        """The record as plain text."""
        lines = [self.headline()]
        for lesson in self.lessons:
            lines += ["", lesson.headline()] if len(self.lessons) > 1 else [""]
            if not lesson.started and len(self.lessons) > 1:
                continue
            for exercise in lesson.exercises:
                lines.append(f"  {exercise.name}: {exercise.status()}")
                for attempt in exercise.attempts:
                    lines.append(f"    try {attempt.number}: {_said(attempt)}")
                if exercise.revisit is not None:
                    lines.append(f"    revisit: {exercise.revisit.text()}")
        if self.damaged:
            lines += ["", f"({_count(self.damaged, 'damaged line')} of the file skipped.)"]
        return "\n".join(lines)

    def html(self) -> str:
        """The record as an HTML table per lesson, for a notebook's output."""
        parts = [f"<p><b>{html.escape(self.headline())}</b></p>"]
        for lesson in self.lessons:
            if len(self.lessons) > 1:
                parts.append(f"<p>{html.escape(lesson.headline())}</p>")
                if not lesson.started:
                    continue
            rows = "".join(_html_row(exercise) for exercise in lesson.exercises)
            parts.append(
                '<table class="gptlib-record"><thead><tr>'
                + "".join(
                    f"<th {_CELL}>{head}</th>"
                    for head in ("exercise", "result", "what your wrong tries showed", "revisit")
                )
                + "</tr></thead>"
                f"<tbody>{rows}</tbody></table>"
            )
        if self.damaged:
            parts.append(f"<p>({_count(self.damaged, 'damaged line')} of the file skipped.)</p>")
        return "\n".join(parts)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _tries(n: int) -> str:
    return _count(n, "try").replace("trys", "tries")


def _said(attempt: Attempt) -> str:
    if attempt.outcome == PASSED:
        return "passed"
    if attempt.mistake is None:
        return attempt.about
    return f"{attempt.mistake} ({attempt.about})" if attempt.about else attempt.mistake


def _html_row(exercise: ExerciseRecord) -> str:
    colour = "#2e7d32" if exercise.solved_at is not None else "#b26a00"
    if not exercise.tries:
        colour = "#666"
    tries = "".join(
        f"<li>try {a.number}: "
        + (
            html.escape(_said(a))
            if a.mistake is None
            else f"<code>{html.escape(a.mistake)}</code>"
            + (f": {html.escape(a.about)}" if a.about else "")
        )
        + "</li>"
        for a in exercise.attempts
        if a.outcome != PASSED
    )
    revisit = ""
    if exercise.revisit is not None:
        text = html.escape(exercise.revisit.text())
        notebook = exercise.revisit.notebook
        if notebook is not None:
            href = html.escape(f"{notebook.name}#{exercise.revisit.anchor()}", quote=True)
            text = f'<a href="{href}">{text}</a>'
        revisit = text
    return (
        f"<tr><td {_CELL}><code>{html.escape(exercise.name)}</code></td>"
        f'<td style="text-align: left; vertical-align: top; color: {colour}">'
        f"{html.escape(exercise.status())}</td>"
        f"<td {_CELL}><ul>{tries}</ul></td><td {_CELL}>{revisit}</td></tr>"
    )


def summary(message: str) -> str:
    """What a catalogued mistake is, in a few words: its message up to the first colon,
    semicolon or full stop, at most about a line."""
    end = _SUMMARY_END.search(message)
    text = message[: end.start()] if end else message
    if len(text) > _SUMMARY_CHARS:
        text = text[:_SUMMARY_CHARS].rsplit(" ", 1)[0] + " …"
    return text.strip()


def outline(notebook: Mapping) -> Outline:
    """The title of a notebook (nbformat JSON, as a dict) and, for each exercise it checks
    (a code cell calling `check("name", ...)`), the headings above that cell from level 2 down:
    the section that poses the exercise."""
    title, path, sections = "", [], {}
    for cell in notebook.get("cells", []):
        source = cell.get("source", "")
        source = "".join(source) if isinstance(source, list) else source
        if cell.get("cell_type") == "markdown":
            for hashes, heading in _HEADING.findall(source):
                level = len(hashes)
                if level == 1:
                    title = title or heading
                    continue
                path = [(lvl, text) for lvl, text in path if lvl < level] + [(level, heading)]
        elif cell.get("cell_type") == "code":
            for name in _CHECK_CALL.findall(source):
                sections.setdefault(name, tuple(text for _, text in path))
    return Outline(title, sections)


def read_outline(path: Path) -> Outline | None:
    """The outline of the notebook file at `path`; None when it is missing or unreadable."""
    try:
        return outline(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, AttributeError, TypeError):
        return None


def notebook_of(lesson: str, folders: Sequence[Path]) -> Path | None:
    """The notebook of lesson `lesson` ('02') in the first of `folders` that holds one."""
    for folder in folders:
        found = sorted(p for p in folder.glob(f"{lesson}_*.ipynb") if _NOTEBOOK.fullmatch(p.name))
        if found:
            return found[0]
    return None


def lessons(folders: Sequence[Path] = ()) -> list[Lesson]:
    """Every lesson with registered exercises, in course order, its title and sections read
    from its notebook in the first of `folders` (then the course's workbook/ and notebooks/)
    that holds it."""
    by_lesson: dict[str, list[Exercise]] = {}
    for exercise in REGISTRY.values():
        by_lesson.setdefault(lesson_of(exercise), []).append(exercise)
    found = []
    for name in sorted(by_lesson):
        exercises = by_lesson[name]
        notebook = notebook_of(name, (*folders, *_COURSE_FOLDERS))
        shape = None if notebook is None else read_outline(notebook)
        order = list(shape.sections) if shape is not None else []
        names = sorted(
            (e.name for e in exercises),
            key=lambda n: order.index(n) if n in order else len(order),
        )
        sections = {
            n: Section(shape.sections[n], notebook)
            for n in names
            if shape is not None and shape.sections.get(n)
        }
        found.append(
            Lesson(
                name=name,
                title=(shape.title if shape is not None and shape.title else f"lesson {name}"),
                exercises=tuple(names),
                sections=sections,
                mistakes={
                    e.name: {m.name: summary(m.message) for m in e.mistakes} for e in exercises
                },
            )
        )
    return found


def course_record(
    events: Iterable[Event], lessons: Sequence[Lesson], where: str = "", damaged: int = 0
) -> CourseRecord:
    """The record of `lessons` from the `events` of the student's file, in the order written
    (pure: no file, no registry). An event of an exercise or lesson that `lessons` does not
    know (renamed since) is shown under its lesson all the same."""
    events = list(events)
    known = {lesson.name: lesson for lesson in lessons}
    unknown: dict[str, list[str]] = {}  # lesson -> exercises it does not list, as first seen
    for event in events:
        listed = known.get(event.lesson)
        if listed is not None and event.exercise in listed.exercises:
            continue
        names = unknown.setdefault(event.lesson, [])
        if event.exercise not in names:
            names.append(event.exercise)
    shown = [
        *lessons,
        *(Lesson(name, name, (), {}, {}) for name in sorted(unknown) if name not in known),
    ]
    records = []
    for lesson in shown:
        names = (*lesson.exercises, *unknown.get(lesson.name, ()))
        records.append(
            LessonRecord(
                lesson.name,
                lesson.title,
                tuple(
                    _exercise_record(
                        name,
                        [e for e in events if e.lesson == lesson.name and e.exercise == name],
                        lesson.sections.get(name),
                        lesson.mistakes.get(name, {}),
                    )
                    for name in names
                ),
            )
        )
    return CourseRecord(tuple(records), where, damaged)


def _exercise_record(
    name: str, events: list[Event], section: Section | None, mistakes: Mapping[str, str]
) -> ExerciseRecord:
    attempts, solved_at = [], None
    for event in events:
        if event.outcome == PASSED:
            solved_at = solved_at or event.attempt
            if not attempts or attempts[-1].outcome != PASSED:  # a pass after a failure shows
                attempts.append(Attempt(event.attempt, PASSED, None, ""))
            continue
        if event.outcome == UNEXPLAINED:
            about = UNEXPLAINED_ABOUT
        elif event.outcome == CRASHED:
            about = CRASHED_ABOUT
        elif event.mistake == DELEGATED:
            about = DELEGATED_ABOUT
        else:
            about = mistakes.get(event.mistake or "", "")
        attempts.append(Attempt(event.attempt, event.outcome, event.mistake, about))
    wrong = any(a.outcome != PASSED for a in attempts)
    return ExerciseRecord(
        name=name,
        tries=len(events),
        solved_at=solved_at,
        last_passed=bool(events) and events[-1].outcome == PASSED,
        attempts=tuple(attempts),
        revisit=section if wrong else None,
    )


def read_record(lesson: str | None = None, path: Path | None = None) -> CourseRecord | None:
    """The record kept here (or at `path`) of `lesson` ('02' or its notebook's name; None: the
    whole course); None where no record is kept (`checks.journal.record_path`). ValueError for
    a lesson without exercises."""
    stem = None if lesson is None else lesson_name(lesson)
    path = record_path() if path is None else path
    if path is None:
        return None
    known = lessons([path.parent, Path.cwd()])
    events, damaged = read_events(path)
    if stem is not None:
        known = [candidate for candidate in known if candidate.name == stem]
        events = [event for event in events if event.lesson == stem]
    where = path.name if path.parent == Path.cwd() else str(path)
    return course_record(events, known, where=where, damaged=damaged)


def lesson_name(lesson: str) -> str:
    """The number ('02') of a lesson with exercises, named by its number or its notebook's
    name ('02_scaled_dot_product_attention'); ValueError for any other."""
    numbers = sorted({lesson_of(exercise) for exercise in REGISTRY.values()})
    number = lesson.split("_", 1)[0]
    if number in numbers:
        return number
    raise ValueError(
        f"no lesson {lesson!r} has exercises; lessons with exercises: {', '.join(numbers)}"
    )


def show(lesson: str | None = None) -> None:
    """Show the record kept here of `lesson` ('02', or None for the whole course): an HTML
    table in a notebook, text elsewhere; where no record is kept, where it would be."""
    record = read_record(lesson)
    text = NO_RECORD if record is None else record.text()
    body = f"<p>{html.escape(NO_RECORD)}</p>" if record is None else record.html()
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:
        print(text)
        return
    if get_ipython() is None:
        print(text)
        return
    display({"text/plain": text, "text/html": body}, raw=True)
