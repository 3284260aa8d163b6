"""What the student writes (issue 32): in every lesson whose key measurement is the student's, at
least 30 lines of the student's own code and a graded exercise, and at least 300 lines in the
course, counted by scripts/exercise_lines.py, whose counting is tested here on a cell written for
the purpose."""

from __future__ import annotations

import pytest

from .scripts import load_script

lines = load_script("exercise_lines")
# Lessons whose key measurement the student writes (07 builds the model, 09 the cost accounts;
# 00 is the course's first page).
MEASURING = ("01", "02", "03", "04", "05", "06", "08")


def test_a_student_line_is_code_inside_a_solution_region():
    source = "\n".join(
        [
            "def f(x):",
            "    ### BEGIN SOLUTION",
            "    # a comment is not a line",
            "",
            "    y = x + 1",
            "    return y",
            "    ### END SOLUTION",
            "outside = 1",
        ]
    )
    assert lines.student_lines(source) == 2


@pytest.mark.parametrize("lesson", MEASURING)
def test_the_student_writes_at_least_30_lines_and_a_graded_exercise(lesson):
    (path,) = [p for p in lines.LESSONS if p.name.startswith(lesson)]
    written = lines.written(path)
    assert written.lines >= 30 and written.exercises >= 1, f"{path.name}: {written}"


def test_the_course_has_the_student_write_at_least_300_lines():
    assert sum(lines.written(p).lines for p in lines.LESSONS) >= 300
