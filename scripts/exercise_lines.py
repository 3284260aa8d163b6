"""What the student writes: the lines of code inside each lesson's solution regions, and its
graded exercises.

    python scripts/exercise_lines.py            # a table, lesson by lesson, and the total

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


def main() -> None:
    print(f"{'lesson':40s} {'student lines':>13s} {'graded exercises':>17s}")
    total = Written(0, 0)
    for path in LESSONS:
        w = written(path)
        total = Written(total.lines + w.lines, total.exercises + w.exercises)
        print(f"{path.stem:40s} {w.lines:13d} {w.exercises:17d}")
    print(f"{'all':40s} {total.lines:13d} {total.exercises:17d}")


if __name__ == "__main__":
    main()
