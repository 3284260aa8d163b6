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

The core path of every lesson 01-09 must come to at most 50 minutes by this estimate ("about
45"), except notebook 07's, the capstone with six graded exercises, which says "about 75" and
must come to at most 80; the optional sections hold no graded exercise, so that autograding
asks only for the core.
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
CORE_LIMIT = 50
LONGER = {"07_build_the_gpt": 80}  # the capstone: six graded exercises, 36 minutes of them


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


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.stem)
def test_the_core_path_is_about_45_minutes_and_optional_sections_are_marked(path):
    minutes = estimate(path)
    assert minutes.core <= LONGER.get(path.stem, CORE_LIMIT), (
        f"{path.name}: the core path comes to {minutes.core:.0f} minutes; mark deeper sections "
        f"{OPTIONAL!r} or shorten the prose"
    )
    assert minutes.optional_exercises == 0, f"{path.name}: a graded exercise in an optional section"
    first = "".join(json.loads(path.read_text(encoding="utf-8"))["cells"][0]["source"])
    assert "**Core path**" in first, f"{path.name}: the first cell says which path is the core"
    if minutes.optional_sections:
        assert OPTIONAL in first.replace("*", ""), f"{path.name}: the first cell names the mark"


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
    print(f"{'notebook':40s} {'core':>6s} {'optional':>9s}  (estimated minutes)")
    for lesson in LESSONS:
        m = estimate(lesson)
        print(f"{lesson.stem:40s} {m.core:6.0f} {m.optional:9.0f}")
