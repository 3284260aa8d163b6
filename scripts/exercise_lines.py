"""What the student writes: the lines of code inside each lesson's solution regions, and its
graded exercises.

    python scripts/exercise_lines.py            # two tables, lesson by lesson, and the totals

The first table is what the student writes; the second what grading costs the course: the lines
of each lesson's `checks.py` and of its `tests/lessons/nbNN/test_checks.py`, per
graded exercise, beside the check engine shared by all (`gptlib/lessons/engine/checks/`).

A student line is a non-blank line between `### BEGIN SOLUTION` and `### END SOLUTION` in a code
cell of the solved edition that is not a comment; a graded exercise is a cell nbgrader grades
(`grade: true`, not a solution cell).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LESSONS = sorted((ROOT / "notebooks").glob("0[0-9]_*.ipynb"))
BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"


@dataclass(frozen=True)
class Written:
    lines: int
    exercises: int


def student_lines(source: str) -> int:
    """The non-blank, non-comment lines inside the solution regions of one cell's source."""
    count, inside = 0, False
    for line in source.splitlines():
        text = line.strip()
        if text.startswith(BEGIN):
            inside = True
        elif text.startswith(END):
            inside = False
        elif inside and text and not text.startswith("#"):
            count += 1
    return count


def written(path: Path) -> Written:
    """What a student writes in the lesson at `path`."""
    lines = exercises = 0
    for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
        if cell["cell_type"] != "code":
            continue
        lines += student_lines("".join(cell["source"]))
        grading = cell.get("metadata", {}).get("nbgrader", {})
        exercises += bool(grading.get("grade") and not grading.get("solution"))
    return Written(lines, exercises)


def lines_of(path: Path) -> int:
    """Every line of a file (0 if there is none), as `wc -l` counts them."""
    return len(path.read_text(encoding="utf-8").splitlines()) if path.is_file() else 0


def grading_lines(lesson: str) -> tuple[int, int]:
    """(checks.py, test_checks.py) lines of the lesson with these two digits."""
    code = ROOT / "gptlib" / "lessons" / f"nb{lesson}" / "checks.py"
    tests = ROOT / "tests" / "lessons" / f"nb{lesson}" / "test_checks.py"
    return lines_of(code), lines_of(tests)


def main() -> None:
    print(f"{'lesson':40s} {'student lines':>13s} {'graded exercises':>17s}")
    total = Written(0, 0)
    for path in LESSONS:
        w = written(path)
        total = Written(total.lines + w.lines, total.exercises + w.exercises)
        print(f"{path.stem:40s} {w.lines:13d} {w.exercises:17d}")
    print(f"{'all':40s} {total.lines:13d} {total.exercises:17d}")
    print()
    print(f"{'lesson':40s} {'checks':>7s} {'tests':>6s} {'per exercise':>13s}")
    checks = tests = 0
    for path in LESSONS:
        exercises = written(path).exercises
        if not exercises:
            continue
        lesson_checks, lesson_tests = grading_lines(path.stem[:2])
        checks, tests = checks + lesson_checks, tests + lesson_tests
        each = f"{lesson_checks / exercises:z.0f} + {lesson_tests / exercises:z.0f}"
        print(f"{path.stem:40s} {lesson_checks:7d} {lesson_tests:6d} {each:>13s}")
    engine = sum(lines_of(p) for p in (ROOT / "gptlib/lessons/engine/checks").glob("*.py"))
    each = f"{(checks + engine) / total.exercises:z.0f} + {tests / total.exercises:z.0f}"
    print(f"{'all lessons':40s} {checks:7d} {tests:6d} {each:>13s}")
    print(f"check engine (gptlib/lessons/engine/checks): {engine} lines, counted in 'all lessons'")
    print("per exercise: checks (+ engine in the total) lines, + test lines")


if __name__ == "__main__":
    main()
