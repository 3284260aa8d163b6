"""The student's record: where the checks write it (`checks.journal`), what they write, and the
view of it (`engine.record`): per exercise solved or not, at which try, the misconceptions the
wrong tries showed (the class report's names) and the section to revisit."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import torch

from gptlib.lessons.engine.checks import check, journal
from gptlib.lessons.engine.checks.core import REGISTRY, exercise_named
from gptlib.lessons.engine.checks.journal import Event
from gptlib.lessons.engine.record import (
    CRASHED_ABOUT,
    DELEGATED_ABOUT,
    NO_RECORD,
    UNEXPLAINED_ABOUT,
    Lesson,
    Section,
    course_record,
    lesson_name,
    lessons,
    outline,
    read_record,
    show,
    summary,
)

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def my_work(tmp_path, monkeypatch):
    """A student's folder as `make lab` leaves it (its .workbook.json marker), as the kernel's
    working directory, with no GPTLIB_RECORD in the environment."""
    (tmp_path / journal.WORKBOOK_MARKER).write_text("{}\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(journal.ENVIRONMENT, raising=False)
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    return tmp_path


# --- where the record lives ------------------------------------------------------------------


def test_a_record_is_kept_only_in_a_marked_folder_or_where_the_environment_says(tmp_path):
    assert journal.record_path(tmp_path, {}) is None  # notebooks/, a CI checkout, nbval
    (tmp_path / journal.WORKBOOK_MARKER).write_text("{}")
    assert journal.record_path(tmp_path, {}) == tmp_path / journal.RECORD_NAME
    other = tmp_path / "other"
    other.mkdir()
    (other / journal.RECORD_NAME).write_text("")  # an empty record file starts one anywhere
    assert journal.record_path(other, {}) == other / journal.RECORD_NAME
    named = {journal.ENVIRONMENT: "elsewhere/mine.jsonl"}
    assert journal.record_path(other, named) == other / "elsewhere" / "mine.jsonl"
    assert journal.record_path(other, {journal.ENVIRONMENT: "/x/r.jsonl"}) == Path("/x/r.jsonl")
    for off in ("off", "0", "", "false"):
        assert journal.record_path(tmp_path, {journal.ENVIRONMENT: off}) is None
    grading = {"NBGRADER_EXECUTION": "autograde", journal.ENVIRONMENT: "/x/r.jsonl"}
    assert journal.record_path(tmp_path, grading) is None


def test_the_course_folders_hold_no_marker():
    """The solved notebooks run by nbval and scripts/run_notebooks.py, and the workbook the
    tests run, leave no record: their folders are not a student's."""
    for folder in ("notebooks", "workbook", "docs", "."):
        assert journal.record_path(ROOT / folder, {}) is None, folder


# --- what a check writes ---------------------------------------------------------------------


def _softmax_no_shift(s):
    return s.exp() / s.exp().sum(dim=-1, keepdim=True)


def _softmax_right(s):
    e = (s - s.amax(dim=-1, keepdim=True)).exp()
    return e / e.sum(dim=-1, keepdim=True)


def _softmax_torch(s):
    return torch.softmax(s, dim=-1)


def _softmax_crashing(s):
    return s @ torch.ones(3, 3, 3)


def _softmax_doubled(s):
    return 2 * _softmax_right(s)


def _stub(s):
    raise NotImplementedError()


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_each_check_of_a_written_answer_appends_one_event(my_work, capsys):
    namespace = {}
    for answer in (_stub, _softmax_no_shift, _softmax_torch, _softmax_crashing):
        namespace["softmax_rows"] = answer
        check("softmax-rows", answer, namespace)
    # checked again without its cell run: the reference standing in, not a try of the student's
    check("softmax-rows", namespace["softmax_rows"], namespace)
    for answer in (_softmax_doubled, _softmax_right, _softmax_right):
        check("softmax-rows", answer, {})
    capsys.readouterr()
    events = _lines(my_work / journal.RECORD_NAME)
    assert [(e["try"], e["outcome"], e["mistake"]) for e in events] == [
        (1, "mistake", "no-max-subtraction"),
        (2, "delegated", "delegated"),
        (3, "crashed", None),
        (4, "unexplained", None),
        (5, "passed", None),
        (6, "passed", None),
    ]
    assert {e["lesson"] for e in events} == {"02"} and {e["exercise"] for e in events} == {
        "softmax-rows"
    }
    assert all(
        set(e) == {"lesson", "exercise", "try", "outcome", "mistake", "time"} for e in events
    )
    assert all(e["time"].endswith("Z") and len(e["time"]) == 20 for e in events)


def test_tries_count_on_across_kernels(my_work, capsys):
    """A new kernel (a restart) starts its hints afresh, but the record counts on."""
    check("softmax-rows", _softmax_no_shift, {})
    journal_path = my_work / journal.RECORD_NAME
    before = journal_path.read_text()
    event = journal.note(exercise_named("softmax-rows"), _softmax_right, None)
    capsys.readouterr()
    assert event.attempt == 2 and journal_path.read_text().startswith(before)


def test_nothing_is_written_where_no_record_is_kept(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(journal.ENVIRONMENT, raising=False)
    check("softmax-rows", _softmax_no_shift, {})
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    (tmp_path / journal.WORKBOOK_MARKER).write_text("{}")
    check("softmax-rows", _softmax_no_shift, {})
    capsys.readouterr()
    assert sorted(p.name for p in tmp_path.iterdir()) == [journal.WORKBOOK_MARKER]


def test_a_damaged_or_unwritable_record_never_breaks_a_check(my_work, capsys):
    path = my_work / journal.RECORD_NAME
    path.write_text('{"lesson": "02", "exercise": "softmax-rows", "try": 1, "outc')  # cut off
    check("softmax-rows", _softmax_right, {})
    assert "✔ softmax-rows" in capsys.readouterr().out
    events, damaged = journal.read_events(path)
    assert damaged == 1 and [(e.attempt, e.outcome) for e in events] == [(1, "passed")]
    path.write_text("not json\n[1, 2]\n" + json.dumps({"lesson": "02", "try": "x"}) + "\n")
    assert journal.read_events(path) == ([], 3)
    path.unlink()
    path.mkdir()  # a folder where the file should be: nothing can be written
    check("softmax-rows", _softmax_no_shift, {})
    captured = capsys.readouterr()
    assert "✘ softmax-rows: not right yet" in captured.err and "Traceback" not in captured.err
    assert journal.read_events(my_work / "missing.jsonl") == ([], 0)


def test_appends_from_two_writers_stay_whole_lines(tmp_path):
    path = tmp_path / journal.RECORD_NAME
    event = Event("02", "softmax-rows", 1, "passed", None, "2026-01-01T00:00:00Z")
    pids = []
    for _ in range(2):
        pid = os.fork()
        if pid == 0:  # the child writes and leaves at once
            for _ in range(200):
                journal.append(path, event)
            os._exit(0)
        pids.append(pid)
    for pid in pids:
        os.waitpid(pid, 0)
    assert journal.read_events(path) == ([event] * 400, 0)


# --- the view --------------------------------------------------------------------------------


def _event(exercise: str, attempt: int, outcome: str, mistake: str | None = None) -> Event:
    return Event("02", exercise, attempt, outcome, mistake, "2026-01-01T00:00:00Z")


LESSON = Lesson(
    name="02",
    title="02 · Attention",
    exercises=("softmax-rows", "attention", "measure-softmax"),
    sections={
        "softmax-rows": Section(("2. Write it yourself", "Exercise 1: a softmax")),
        "attention": Section(("2. Write it yourself", "Exercise 2: attention")),
    },
    mistakes={"softmax-rows": {"no-keepdim": "the row sums lost their axis"}},
)


def test_the_view_says_what_was_solved_at_which_try_what_it_showed_and_what_to_revisit():
    events = [
        _event("softmax-rows", 1, "mistake", "no-keepdim"),
        _event("attention", 1, "delegated", "delegated"),
        _event("softmax-rows", 2, "crashed"),
        _event("softmax-rows", 3, "passed"),
        _event("softmax-rows", 4, "passed"),
        _event("attention", 2, "unexplained"),
        _event("attention", 3, "mistake", "no-keepdim"),
    ]
    record = course_record(events, [LESSON], where="r.jsonl")
    [lesson] = record.lessons
    softmax, attention, measure = lesson.exercises
    assert (softmax.tries, softmax.solved_at, softmax.last_passed) == (4, 3, True)
    assert [(a.number, a.outcome, a.mistake, a.about) for a in softmax.attempts] == [
        (1, "mistake", "no-keepdim", "the row sums lost their axis"),
        (2, "crashed", None, CRASHED_ABOUT),
        (3, "passed", None, ""),
    ]
    assert softmax.misconceptions == ("no-keepdim",)
    assert softmax.revisit == LESSON.sections["softmax-rows"]
    assert (attention.tries, attention.solved_at, attention.last_passed) == (3, None, False)
    assert attention.misconceptions == ("delegated", "no-keepdim")
    assert [a.about for a in attention.attempts] == [DELEGATED_ABOUT, UNEXPLAINED_ABOUT, ""]
    assert (measure.tries, measure.attempts, measure.revisit) == (0, (), None)
    assert lesson.solved == 1 and lesson.started
    assert record.text().splitlines() == [
        "Your record of 02 · Attention (r.jsonl): 1 of 3 exercises solved, 3 misconceptions "
        "shown by your wrong tries.",
        "",
        "  softmax-rows: solved at try 3",
        "    try 1: no-keepdim (the row sums lost their axis)",
        f"    try 2: {CRASHED_ABOUT}",
        "    try 3: passed",
        "    revisit: 2. Write it yourself › Exercise 1: a softmax",
        "  attention: not solved yet (3 tries)",
        f"    try 1: delegated ({DELEGATED_ABOUT})",
        f"    try 2: {UNEXPLAINED_ABOUT}",
        "    try 3: no-keepdim",
        "    revisit: 2. Write it yourself › Exercise 2: attention",
        "  measure-softmax: not tried yet",
    ]


def test_a_first_try_pass_has_nothing_to_revisit_and_a_later_failure_shows():
    first_time = course_record([_event("attention", 1, "passed")], [LESSON])
    assert first_time.lessons[0].exercises[1].revisit is None
    broken = course_record(
        [_event("attention", 1, "passed"), _event("attention", 2, "unexplained")], [LESSON]
    )
    attention = broken.lessons[0].exercises[1]
    assert attention.status() == "solved at try 1; your latest try (2) did not pass"


def test_a_pass_after_a_later_failure_shows_and_repeated_passes_show_once():
    """A student trial's record listed a failed try after the pass but not the pass after it,
    so a solved exercise looked failed."""
    outcomes = ("passed", "passed", "crashed", "passed", "passed")
    events = [_event("attention", n, outcome) for n, outcome in enumerate(outcomes, start=1)]
    attention = course_record(events, [LESSON]).lessons[0].exercises[1]
    shown = [(a.number, a.outcome) for a in attention.attempts]
    assert shown == [(1, "passed"), (3, "crashed"), (4, "passed")]
    assert attention.solved_at == 1 and attention.last_passed


def test_the_course_view_lists_every_lesson_and_events_of_unknown_exercises():
    other = Lesson("03", "03 · Mask", ("causal",), {}, {})
    events = [_event("renamed-since", 1, "passed"), Event("11", "x", 1, "crashed", None, "")]
    record = course_record(events, [LESSON, other], damaged=2)
    assert [lesson.name for lesson in record.lessons] == ["02", "03", "11"]
    assert record.lessons[0].exercises[-1].name == "renamed-since"
    text = record.text()
    assert "03 · Mask: not started (1 exercise)." in text
    assert (
        "Your record across the course" in text and "(2 damaged lines of the file skipped.)" in text
    )
    html = record.html()
    assert html.count("<table") == 2 and "renamed-since" in html  # 03 not started: no table


def test_the_view_of_no_event_is_all_not_tried():
    record = course_record([], [LESSON])
    assert record.headline().startswith("Your record of 02 · Attention")
    assert all(e.status() == "not tried yet" for e in record.lessons[0].exercises)


def test_a_mistakes_summary_is_its_first_clause():
    assert summary("exp overflows: the rows hold scores near 1000.") == "exp overflows"
    assert summary("you subtracted each row's mean. On paper it is the same") == (
        "you subtracted each row's mean"
    )
    long = summary("word " * 60)
    assert long.endswith(" …") and len(long) <= 112


def test_an_outline_puts_each_check_under_the_headings_above_it():
    def cell(kind, source):
        return {"cell_type": kind, "source": source, "metadata": {}}

    notebook = {
        "cells": [
            cell("markdown", "# 02 · Attention\n\nintro"),
            cell("markdown", "## 1. Recipe\n\n### A detail"),
            cell("markdown", "## 2. Write it\n\n### Exercise 1: softmax"),
            cell("code", ["check(", '"softmax-rows", softmax_rows)']),
            cell("markdown", "### Exercise 2: attention\n#### Step one"),
            cell("code", "check('attention', attention)  # check(\"not-this\" in a comment"),
            cell("markdown", "## 3. Measure"),
            cell("code", "print('# not a heading')"),
        ]
    }
    shape = outline(notebook)
    assert shape.title == "02 · Attention"
    assert shape.sections["softmax-rows"] == ("2. Write it", "Exercise 1: softmax")
    assert shape.sections["attention"] == ("2. Write it", "Exercise 2: attention", "Step one")


def test_every_exercise_of_the_course_has_a_section_to_revisit_in_both_editions():
    """Derived from the notebooks, never listed by hand: each registered exercise is checked in
    its lesson's notebook, under a heading, in the solved edition and in the workbook."""
    for folder in (ROOT / "notebooks", ROOT / "workbook"):
        found = lessons([folder])
        assert sorted(e for lesson in found for e in lesson.exercises) == sorted(REGISTRY)
        for lesson in found:
            assert lesson.title.startswith(f"{lesson.name} · "), lesson.title
            assert set(lesson.sections) == set(lesson.exercises), lesson.name
            for section in lesson.sections.values():
                assert section.headings and section.notebook.parent == folder
                assert section.notebook.name.startswith(f"{lesson.name}_")
            for name in lesson.exercises:
                catalogue = {m.name for m in exercise_named(name).mistakes}
                assert set(lesson.mistakes[name]) == catalogue
                assert all(lesson.mistakes[name].values()), name


def test_lessons_are_named_by_number_or_notebook():
    assert lesson_name("02") == "02" and lesson_name("02_scaled_dot_product_attention") == "02"
    with pytest.raises(
        ValueError, match="no lesson '00' has exercises; lessons with exercises: 01"
    ):
        lesson_name("00")


def test_show_reads_the_record_kept_here(my_work, capsys):
    check("softmax-rows", _softmax_no_shift, {})
    capsys.readouterr()
    show("02")
    text = capsys.readouterr().out
    assert text.startswith(
        f"Your record of 02 · Scaled dot-product attention ({journal.RECORD_NAME}): 0 of "
    )
    assert "    try 1: no-max-subtraction (exp overflows)" in text
    record = read_record()
    assert [lesson.name for lesson in record.lessons][:2] == ["01", "02"]
    assert read_record("02").lessons[0].exercises[0].misconceptions == ("no-max-subtraction",)


def test_show_says_where_no_record_is_kept(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(journal.ENVIRONMENT, raising=False)
    show()
    assert capsys.readouterr().out == NO_RECORD + "\n"
    assert read_record("02") is None
    with pytest.raises(ValueError, match="no lesson '12'"):
        show("12")
