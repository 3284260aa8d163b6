"""The workbook (`scripts/editions.py`): the student edition every route into the course opens.

It is what `build` writes from the solved notebooks (in sync, never edited by hand); it holds no
solution line, no stored output, no guard cell and no nbval tag; each workbook runs from top to
bottom with every exercise left undone; and `open`, the student's side of it, never overwrites
a copy the student has changed: not when `make lab` runs again, not when the workbook is
regenerated, not when an update of the course changes the notebook.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import nbformat
import pytest

from tests.scripts import load_script

ROOT = Path(__file__).resolve().parent.parent


workbook = load_script("editions")
LESSONS = workbook.lessons()
WORKBOOKS = [workbook.WORKBOOK / p.name for p in LESSONS]


def _solution_lines(nb) -> set[str]:
    """Lines found only inside the solution regions of a solved notebook."""
    inside, outside = set(), set()
    for cell in nb.cells:
        in_solution = False
        for line in cell.source.splitlines():
            text = line.strip()
            if text in (workbook.BEGIN, workbook.END):
                in_solution = text == workbook.BEGIN
                continue
            (inside if in_solution else outside).add(text)
    return {line for line in inside - outside if line}


def test_every_lesson_has_a_workbook_and_nothing_else_does():
    assert [p.name for p in LESSONS] == sorted(p.name for p in workbook.WORKBOOK.glob("*.ipynb"))
    assert [p.name[:2] for p in LESSONS] == [f"{n:02d}" for n in range(10)]


def test_the_workbook_is_what_build_writes():
    stale = workbook.out_of_date()
    assert not stale, f"workbook/ is out of date for {stale}: run make notebooks and commit it"


@pytest.mark.parametrize("path", WORKBOOKS, ids=lambda p: p.name)
def test_a_workbook_holds_no_solution_output_guard_or_nbval_tag(path):
    solved = nbformat.read(workbook.NOTEBOOKS / path.name, as_version=4)
    student = nbformat.read(path, as_version=4)
    secret = _solution_lines(solved)
    for cell in student.cells:
        lines = {line.strip() for line in cell.source.splitlines()}
        assert not lines & secret, f"{path.name}: solution text {sorted(lines & secret)}"
        assert workbook.BEGIN not in cell.source and workbook.END not in cell.source
        tags = cell.metadata.get("tags", [])
        assert workbook.SOLVED_ONLY_TAGS.isdisjoint(tags)
        assert not any(t.startswith("nbval") for t in tags)
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, path.name
    solved_only = [c for c in solved.cells if workbook.is_solved_only(c)]
    added = 1 + (2 if workbook.has_checks(solved) else 0)  # the setup cell, the record's section
    assert len(student.cells) == len(solved.cells) - len(solved_only) + added
    stubs = [c for c in student.cells if c.metadata.get("nbgrader", {}).get("solution")]
    for stub in stubs:
        assert "raise NotImplementedError()" in stub.source
        top_level = ast.parse(stub.source).body  # defines its function; raises only when called
        assert not any(isinstance(node, ast.Raise) for node in top_level), stub.source


# What only the solved edition holds, or only maintainers read: a lesson's prose never speaks of
# it, so that each edition's text is true of that edition (the workbook has no guard cells, runs
# no tests and shows no solutions).
EDITION_ONLY = re.compile(
    r"\b(?:the cell (?:below |above )?asserts?|asserted|assertions?|the course's tests|"
    r"maintainers\.md|cover (?:it|the solution))",
    re.IGNORECASE,
)


def test_no_lesson_speaks_of_what_only_the_solved_edition_holds():
    found = [
        (path.name, match.group(0))
        for path in LESSONS
        for cell in nbformat.read(path, as_version=4).cells
        if cell.cell_type == "markdown"
        for match in EDITION_ONLY.finditer(cell.source)
    ]
    assert not found, f"say what the measurement shows instead: {found}"
    assert EDITION_ONLY.search("More than 0.5 (the cell below asserts it).")


def _is_assertion(statement: ast.stmt) -> bool:
    """An `assert` statement or a call of `torch.testing.assert_close`."""
    if isinstance(statement, ast.Assert):
        return True
    call = statement.value if isinstance(statement, ast.Expr) else None
    return isinstance(call, ast.Call) and ast.unparse(call.func) == "torch.testing.assert_close"


def test_the_solved_edition_has_guards_only_after_lesson_code():
    for path in LESSONS:
        cells = nbformat.read(path, as_version=4).cells
        for i, cell in enumerate(cells):
            if not workbook.is_guard(cell):
                continue
            assert cell.cell_type == "code" and not cell.outputs, f"{path.name} cell {i}"
            assert cells[i - 1].cell_type == "code", f"{path.name} cell {i}: guards follow code"
            body = ast.parse(cell.source).body
            assert body and all(_is_assertion(s) for s in body), (
                f"{path.name} cell {i}: a guard cell holds assertions only"
            )


def test_lesson_cells_leave_their_assert_statements_to_guard_cells():
    """What the student reads is the lesson's code: a top-level `assert` belongs in a guard."""
    for path in LESSONS:
        for i, cell in enumerate(nbformat.read(path, as_version=4).cells):
            if cell.cell_type != "code" or workbook.is_guard(cell):
                continue
            top_level = ast.parse(cell.source).body
            assert not any(isinstance(s, ast.Assert) for s in top_level), (
                f"{path.name} cell {i}: move its assert statements into a guard cell under it"
            )


def test_the_first_code_cell_sets_up_gptlib_only_where_it_is_missing(tmp_path):
    for path in WORKBOOKS:
        first_code = next(
            c for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"
        )
        assert first_code.source == workbook.setup_source(workbook.repository_url())
        exec(compile(first_code.source, path.name, "exec"), {})  # gptlib is importable: no-op
    with_url = workbook.setup_source("https://github.com/owner/course")
    assert '"gptlib[lessons] @ git+https://github.com/owner/course"' in with_url
    assert "pip" in with_url and "check=True" in with_url
    without = workbook.setup_source("")
    assert "make lab" in without and "pip" not in without.replace("pip install -e .", "")


def _one_cell_lesson(source: str, solution: bool = True) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell(source)
    if solution:
        cell.metadata["nbgrader"] = {
            "grade": False, "grade_id": "f", "locked": False, "schema_version": 3,
            "solution": True, "task": False,
        }  # fmt: skip
    return nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# T"), cell])


def test_nbgraders_clear_solutions_makes_the_stubs_and_refuses_broken_regions():
    source = "def f(x):\n    ### BEGIN SOLUTION\n    return x\n    ### END SOLUTION\n\nf(1)"
    stubbed = workbook.student_edition(_one_cell_lesson(source), "00_t.ipynb", "")
    assert stubbed.cells[2].source == (
        "def f(x):\n    # YOUR CODE HERE\n    raise NotImplementedError()\n\nf(1)"
    )
    for broken in ("### BEGIN SOLUTION\nx = 1", "### BEGIN SOLUTION\n### BEGIN SOLUTION"):
        with pytest.raises(RuntimeError, match="solution statement"):
            workbook.student_edition(_one_cell_lesson(broken), "00_t.ipynb", "")
    with pytest.raises(RuntimeError, match="Solution region detected in a non-solution cell"):
        workbook.student_edition(_one_cell_lesson(source, solution=False), "00_t.ipynb", "")


def test_the_student_edition_drops_guards_and_committed_answers_and_nbval_tags():
    nb = _one_cell_lesson("x = 1", solution=False)
    for tag in ("guard", "answer"):
        nb.cells.append(nbformat.v4.new_code_cell(f"# {tag}", metadata={"tags": [tag]}))
    nb.cells.append(nbformat.v4.new_code_cell("q", metadata={"tags": ["nbval-ignore-output"]}))
    student = workbook.student_edition(nb, "00_t.ipynb", "")
    assert [c.source for c in student.cells[2:]] == ["x = 1", "q"]
    assert "tags" not in student.cells[-1].metadata


def _course(tmp_path: Path) -> tuple[Path, Path]:
    """A course's workbook (two notebooks) and a student's folder for it."""
    source, work = tmp_path / "workbook", tmp_path / "my-work"
    source.mkdir()
    for path in WORKBOOKS[:2]:
        (source / path.name).write_text(path.read_text("utf-8"), encoding="utf-8")
    return source, work


def _edit(path: Path, text: str) -> None:
    nb = nbformat.read(path, as_version=4)
    cell = {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": []}
    nb.cells.append(nbformat.from_dict({**cell, "source": text}))  # nbformat 4.4: no cell id
    nbformat.write(nb, path)


def _has(path: Path, text: str) -> bool:
    return any(c.source == text for c in nbformat.read(path, as_version=4).cells)


def test_open_copies_the_workbook_once(tmp_path):
    source, work = _course(tmp_path)
    first = workbook.open_workbook(source, work)
    assert first == [f"copied {p.name}" for p in sorted(source.glob("*.ipynb"))]
    assert workbook.open_workbook(source, work) == []  # make lab again: nothing to do
    for path in source.glob("*.ipynb"):
        assert (work / path.name).read_bytes() == path.read_bytes()


def test_an_edit_survives_make_lab_regeneration_and_an_update(tmp_path):
    source, work = _course(tmp_path)
    workbook.open_workbook(source, work)
    edited, untouched = sorted(work.glob("*.ipynb"))
    _edit(edited, "my_answer = 42")

    assert workbook.open_workbook(source, work) == []  # make lab again
    assert _has(edited, "my_answer = 42")

    workbook.build(workbook.NOTEBOOKS, source)  # regeneration writes the workbook folder only
    assert _has(edited, "my_answer = 42")
    for extra in set(source.glob("*.ipynb")) - {source / edited.name, source / untouched.name}:
        extra.unlink()  # keep the two-notebook course

    for path in source.glob("*.ipynb"):  # an update of the course changes both notebooks
        _edit(path, "# new in this version of the course")
    done = workbook.open_workbook(source, work)
    new_version = edited.with_suffix(".new.ipynb")
    assert done == [
        f"kept your {edited.name}: the course changed it, and its new version is "
        f"{new_version.name} beside yours",
        f"updated {untouched.name} to the course's new version (you had not changed it)",
    ]
    assert _has(edited, "my_answer = 42") and not _has(
        edited, "# new in this version of the course"
    )
    assert new_version.read_bytes() == (source / edited.name).read_bytes()
    assert untouched.read_bytes() == (source / untouched.name).read_bytes()
    assert workbook.open_workbook(source, work) == []  # said once
    assert json.loads((work / workbook.STATE).read_text()).keys() == {edited.name, untouched.name}


def test_open_without_a_workbook_says_how_to_make_one(tmp_path):
    with pytest.raises(ValueError, match="editions.py build"):
        workbook.open_workbook(tmp_path / "nothing", tmp_path / "my-work")


def test_a_lesson_with_exercises_ends_with_the_students_record():
    for path in WORKBOOKS:
        cells = nbformat.read(path, as_version=4).cells
        solved = nbformat.read(workbook.NOTEBOOKS / path.name, as_version=4)
        tail = [c.source for c in workbook.record_cells(path.name)]
        if not workbook.has_checks(solved):
            assert [c.source for c in cells[-2:]] != tail, path.name
            continue
        assert [c.source for c in cells[-2:]] == tail, path.name
        assert tail[1].endswith(f'show("{path.name[:2]}")')
        assert "## Your record" in tail[0]
