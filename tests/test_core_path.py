"""Each lesson marks a core path of about 45 minutes; the deeper sections are marked optional.

A heading that ends with "(optional)" (or a parenthesis ending so, "(static copy, optional)")
makes its section optional, with every subsection under
it, up to the next heading of the same or a higher level. The lesson's first cell says so in a
paragraph that starts with "**Core path**". The time a section takes is estimated the same way
for every notebook, so that the estimate compares notebooks rather than promising a student's
pace:

* prose at 120 words a minute (technical reading, formulas and shapes included);
* half a minute for each code cell a student reads and runs (guard cells excluded: the workbook
  does not hold them);
* six minutes for each graded exercise, one for each prediction.

Each lesson's first cell says how long its core path takes, "**Core path** (about N minutes",
and the estimate must be within ABOUT (5) minutes of N: that is the limit, derived from what the
lesson says, not kept apart from it. N is the course's target, 45 minutes (notebook 07, the
capstone with six graded exercises: 75), or up to ROOM (10) minutes more: every lesson that still
says the target keeps room for one more graded exercise (EXERCISE_COST, 7 minutes with its two
cells) under the most it may say plus ABOUT. A lesson that adds one says "about 55 minutes" in its
first cell and in its row of docs/prose_numbers.md (this test keeps the two in step); a second
one is traded for 7 minutes of the core (see docs/authoring.md, "Choose the place"). The optional
sections hold no graded exercise, so that autograding asks only for the core.
`python -m tests.test_core_path` prints the estimate of each notebook.

The core path also stands alone: each lesson 00-09, in both editions, runs from its first cell
to its last with every optional section deleted (the slow tests at the end), the workbook with
every exercise left undone, so a student who skips what the first cell says may wait never meets
a name made only there.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbgrader.utils import determine_grade

from gptlib.lessons.engine.checks import read_outcome
from gptlib.lessons.engine.checks.outcomes import NOT_IMPLEMENTED, PASSED
from tests.executed import raised, stream_text

ROOT = Path(__file__).resolve().parents[1]
LESSONS = sorted(p for p in (ROOT / "notebooks").glob("0[1-9]_*.ipynb"))
HEADING = re.compile(r"^(#{2,4}) (.+)$", re.M)
OPTIONAL = "(optional)"
OPTIONAL_HEADING = re.compile(r"\((?:[^()]*, )?optional\)$")
WORDS_PER_MINUTE, CELL_MINUTES, EXERCISE_MINUTES, PREDICTION_MINUTES = 120, 0.5, 6, 1
EXERCISE_COST = EXERCISE_MINUTES + 2 * CELL_MINUTES  # a graded exercise with its two cells
TARGET, ABOUT, ROOM = 45, 5, 10  # minutes: the course's target, what "about" covers, the room
TARGETS = {"07_build_the_gpt": 75}  # the capstone: six graded exercises, 42 minutes of them
STATED = re.compile(r"\*\*Core path\*\* \(about (\d+) minutes")
DEFINITIONS = ROOT / "docs" / "prose_numbers.md"


@dataclass
class Minutes:
    core: float = 0.0
    optional: float = 0.0
    optional_exercises: int = 0
    optional_sections: int = 0


def _cell_minutes(cell: dict) -> tuple[float, bool]:
    """(minutes, is a graded exercise check) for one cell."""
    source = "".join(cell["source"])
    if cell["cell_type"] == "markdown":
        return len(re.findall(r"\S+", source)) / WORDS_PER_MINUTE, False
    if "guard" in cell.get("metadata", {}).get("tags", []):
        return 0.0, False
    graded = bool(cell.get("metadata", {}).get("nbgrader", {}).get("grade"))
    minutes = CELL_MINUTES + (EXERCISE_MINUTES if graded else 0)
    minutes += PREDICTION_MINUTES * source.count("Prediction(")
    return minutes, graded


def sections(cells: list[dict]) -> list[tuple[dict, bool, bool]]:
    """Each cell with (is in an optional section, opens one): a markdown cell belongs where its
    last heading leaves it."""
    marked, optional_level = [], None  # the level of the optional heading we are under
    for cell in cells:
        opens = False
        if cell["cell_type"] == "markdown":
            for hashes, title in HEADING.findall("".join(cell["source"])):
                level = len(hashes)
                if optional_level is not None and level <= optional_level:
                    optional_level = None
                if optional_level is None and OPTIONAL_HEADING.search(title.rstrip()):
                    optional_level, opens = level, True
        marked.append((cell, optional_level is not None, opens))
    return marked


def core_cells(cells: list[dict]) -> list[dict]:
    """The cells of the core path: every optional section deleted."""
    return [cell for cell, optional, _ in sections(cells) if not optional]


def estimate(path: Path) -> Minutes:
    """The notebook's estimated minutes, core and optional."""
    result = Minutes()
    for cell, optional, opens in sections(json.loads(path.read_text(encoding="utf-8"))["cells"]):
        result.optional_sections += opens
        minutes, graded = _cell_minutes(cell)
        if optional:
            result.optional += minutes
            result.optional_exercises += graded
        else:
            result.core += minutes
    return result


def first_cell(path: Path) -> str:
    return "".join(json.loads(path.read_text(encoding="utf-8"))["cells"][0]["source"])


def stated(path: Path) -> int | None:
    """The N of the first cell's "**Core path** (about N minutes", or None."""
    found = STATED.search(" ".join(first_cell(path).split()))
    return int(found.group(1)) if found else None


def target(path: Path) -> int:
    return TARGETS.get(path.stem, TARGET)


def most(path: Path) -> int:
    """The most minutes the lesson's first cell may state."""
    return target(path) + ROOM


def left(path: Path) -> float:
    """Minutes the core path may still grow before the lesson must state more, or trade."""
    return (stated(path) or target(path)) + ABOUT - estimate(path).core


TRADE = (
    "trade the difference: mark a deeper section (optional), cut prose (120 words a minute), "
    "or merge code cells (half a minute each)"
)


def findings(path: Path) -> list[str]:
    """What is wrong with the lesson's core path and what its first cell says of it."""
    minutes, said = estimate(path), stated(path)
    if said is None:
        return [f"{path.name}: the first cell says '**Core path** (about N minutes'"]
    found = []
    if said > most(path):
        found.append(
            f"{path.name}: the first cell says about {said} minutes, more than the {most(path)} "
            f"a lesson may say; {TRADE}"
        )
    if abs(minutes.core - said) > ABOUT:
        found.append(
            f"{path.name}: the core path comes to {minutes.core:z.2f} minutes, and the first cell "
            f"says 'about {said} minutes' (within {ABOUT}): say 'about "
            f"{5 * round(minutes.core / 5)} minutes' there (at most {most(path)}) and in its row "
            f"of docs/prose_numbers.md, or {TRADE}"
        )
    if minutes.optional_exercises:
        found.append(f"{path.name}: a graded exercise in an optional section")
    if minutes.optional_sections and OPTIONAL not in first_cell(path).replace("*", ""):
        found.append(f"{path.name}: the first cell names the mark {OPTIONAL!r}")
    return found


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.stem)
def test_the_core_path_takes_what_the_first_cell_says_and_optional_sections_are_marked(path):
    assert not findings(path)


def _lesson(tmp_path: Path, says: int, exercises: int, words: int) -> Path:
    cells = [{"cell_type": "markdown", "source": f"# 99\n\n**Core path** (about {says} minutes)"}]
    cells += [{"cell_type": "markdown", "source": " ".join(["w"] * words)}]  # 7 words above
    graded = {"cell_type": "code", "metadata": {"nbgrader": {"grade": True}}, "source": "check()"}
    cells += [{"cell_type": "code", "metadata": {}, "source": "def f(): ..."}, graded] * exercises
    path = tmp_path / "99_probe.ipynb"
    path.write_text(json.dumps({"cells": cells}), encoding="utf-8")
    return path


def test_one_more_exercise_asks_the_first_cell_to_say_so_and_a_second_asks_for_a_trade(tmp_path):
    at_the_target = _lesson(tmp_path, 45, 4, 120 * 22 - 7)  # 22 + 4 x 7 = 50 minutes
    assert not findings(at_the_target) and left(at_the_target) == pytest.approx(0)
    one_more = _lesson(tmp_path, 45, 5, 120 * 22 - 7)  # 57 minutes
    [finding] = findings(one_more)
    assert "say 'about 55 minutes' there" in finding and "prose_numbers" in finding
    assert not findings(_lesson(tmp_path, 55, 5, 120 * 22 - 7))
    [finding] = findings(_lesson(tmp_path, 55, 6, 120 * 22 - 7))  # 64 minutes
    assert "say 'about 65 minutes' there (at most 55)" in finding and "trade" in finding


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.stem)
def test_a_lesson_at_the_target_keeps_room_for_one_more_exercise(path):
    """Until a lesson uses its room (and says so), one more graded exercise fits under the most
    it may say."""
    if stated(path) == target(path):
        room = most(path) + ABOUT - estimate(path).core
        assert room >= EXERCISE_COST, (
            f"{path.name}: {room:z.1f} minutes left under {most(path) + ABOUT}, less than one "
            f"more exercise ({EXERCISE_COST}); {TRADE}"
        )


def definition_rows() -> dict[str, list[str]]:
    """The numbers docs/prose_numbers.md defines, by notebook."""
    rows: dict[str, list[str]] = {}
    for line in DEFINITIONS.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and len(cells) == 4:
            rows.setdefault(cells[0], []).append(cells[1])
    return rows


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.stem)
def test_the_stated_minutes_and_their_row_of_prose_numbers_are_in_step(path):
    said = stated(path)
    minutes = [n for n in definition_rows().get(path.stem, []) if n.endswith(" minutes")]
    assert minutes == [f"about {said} minutes"], (
        f"{path.name} says 'about {said} minutes'; docs/prose_numbers.md has {minutes} for it: "
        f"write the row '| {path.stem} | about {said} minutes | definition | the lesson's stated "
        "core path, which tests/test_core_path.py checks against its estimate |'"
    )


def test_the_estimate_counts_what_it_says(tmp_path):
    cells = [
        {"cell_type": "markdown", "source": ["## 1. Core\n", " ".join(["w"] * 120)]},
        {"cell_type": "code", "metadata": {}, "source": ["x = 1"]},
        {"cell_type": "code", "metadata": {"tags": ["guard"]}, "source": ["assert x"]},
        {"cell_type": "markdown", "source": ["## 2. Deep (optional)\n", " ".join(["w"] * 240)]},
        {"cell_type": "markdown", "source": ["### 2.1 Deeper\n"]},
        {"cell_type": "code", "metadata": {"nbgrader": {"grade": True}}, "source": ["check()"]},
        {"cell_type": "markdown", "source": ["## Takeaways\n"]},
        {"cell_type": "code", "metadata": {}, "source": ["Prediction('?')"]},
    ]
    path = tmp_path / "probe.ipynb"
    path.write_text(json.dumps({"cells": cells}), encoding="utf-8")
    minutes = estimate(path)
    assert minutes.optional_sections == 1 and minutes.optional_exercises == 1
    assert minutes.core == pytest.approx(3 / 120 + 1 + 0.5 + 2 / 120 + 0.5 + 1)
    assert minutes.optional == pytest.approx((4 + 240 + 3) / 120 + 0.5 + 6)


def test_the_core_cells_leave_out_exactly_the_optional_sections():
    cells = [
        {"cell_type": "markdown", "source": "## 1. Core"},
        {"cell_type": "code", "source": "a = 1"},
        {"cell_type": "markdown", "source": "## 2. Deep (optional)"},
        {"cell_type": "code", "source": "b = 2"},
        {"cell_type": "markdown", "source": "### 2.1 Deeper"},
        {"cell_type": "code", "source": "c = 3"},
        {"cell_type": "markdown", "source": "## 3. Core again"},
        {"cell_type": "code", "source": "d = a"},
    ]
    assert [c["source"] for c in core_cells(cells)] == [
        "## 1. Core",
        "a = 1",
        "## 3. Core again",
        "d = a",
    ]


WORKBOOK = ROOT / "workbook"
EDITIONS = [
    pytest.param(edition, path.name, id=f"{edition}-{path.stem[:2]}")
    for edition in ("solved", "workbook")
    for path in sorted((ROOT / "notebooks").glob("0[0-9]_*.ipynb"))
]


@pytest.mark.slow
@pytest.mark.parametrize(("edition", "name"), EDITIONS)
def test_the_core_path_runs_alone(edition, name, tmp_path, monkeypatch):
    """Every optional section deleted, the lesson runs to its end without an error: the solved
    edition with its solutions and guards, the workbook with every exercise left undone (each
    check then says 'not implemented yet', shows the stand-in box, and scores zero)."""
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    monkeypatch.setenv("GPTLIB_DEVICE", "cpu")
    folder = ROOT / "notebooks" if edition == "solved" else WORKBOOK
    nb = nbformat.read(folder / name, as_version=4)
    nb.cells = core_cells(nb.cells)
    client = NotebookClient(
        nb, timeout=600, kernel_name="python3", allow_errors=True,
        resources={"metadata": {"path": str(tmp_path)}},
    )  # fmt: skip
    client.execute()
    errors = raised(nb)
    assert not errors, f"{edition} {name}, core path alone, stopped: {errors}"
    checks = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")]
    assert bool(checks) == (name[:2] != "00"), "lessons 01-09 have graded checks, 00 none"
    for cell in checks:
        outcome = read_outcome(stream_text(cell, "stdout") + stream_text(cell, "stderr"))
        if edition == "solved":
            assert outcome.status == PASSED, cell.source
            continue
        assert outcome.status == NOT_IMPLEMENTED, cell.source
        [notice] = [o for o in cell.outputs if o.output_type == "display_data"]
        assert "stands in for yours below" in notice.data["text/html"]
        assert determine_grade(cell) == (0, cell.metadata["nbgrader"]["points"])


if __name__ == "__main__":
    print(f"estimated minutes; a graded exercise costs {EXERCISE_COST:g}, its lesson may say up to")
    print(f"its target + {ROOM}, and the estimate may exceed what it says by {ABOUT}")
    print(f"{'notebook':32s} {'says':>5s} {'core':>6s} {'limit':>6s} {'left':>5s} {'room':>5s}")
    for lesson in LESSONS:
        m, said = estimate(lesson), stated(lesson) or target(lesson)
        room = most(lesson) + ABOUT - m.core
        print(
            f"{lesson.stem:32s} {said:5d} {m.core:z6.1f} {said + ABOUT:6d} {left(lesson):z5.1f} "
            f"{room:z5.1f}  optional {m.optional:z4.1f}"
        )
    print("left: before the first cell must say more; room: before the lesson must trade")
