"""The classroom pipeline (`scripts/classroom.py` over nbgrader), on a fixture notebook and on
every course notebook 01–08 present: exercises are well formed, student versions hold no
solution and no output, they run up to the first exercise whose check fails cleanly, and
autograding a submission with one catalogued mistake gives the expected partial score.

Executing the course notebooks (student versions and autograding) is marked `slow`.
"""

from __future__ import annotations

import ast
import copy
import importlib.util
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbgrader.nbgraderformat import MetadataValidator

from gptlib.lessons.checks import REGISTRY

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"
SCRIPT = ROOT / "scripts" / "classroom.py"
FIXTURE_NOTEBOOK = FIXTURES / "classroom_fixture.ipynb"
COURSE_NOTEBOOKS = sorted((ROOT / "notebooks").glob("0[1-8]_*.ipynb"))
BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
REGISTERED_BEFORE_FIXTURES = frozenset(REGISTRY)


def _load_script():
    spec = importlib.util.spec_from_file_location("classroom_script", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the file executes
    spec.loader.exec_module(module)
    return module


classroom = _load_script()


def _params(slow_for_course: bool) -> list:
    course_mark = [pytest.mark.slow] if slow_for_course else []
    return [pytest.param(FIXTURE_NOTEBOOK, id=FIXTURE_NOTEBOOK.stem)] + [
        pytest.param(path, id=path.stem, marks=course_mark) for path in COURSE_NOTEBOOKS
    ]


@dataclass(frozen=True)
class ExerciseCells:
    """A solution cell, the check cell right under it, and what the check call names."""

    solution: int
    check: int
    exercise: str
    function: str


def _nbgrader(cell) -> dict:
    return cell.metadata.get("nbgrader", {})


def _check_call(source: str) -> tuple[str, str] | None:
    """(exercise name, function name) of a `check("name", function)` call in `source`."""
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Call)
            and getattr(node.func, "id", getattr(node.func, "attr", None)) == "check"
            and len(node.args) >= 2
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[1], ast.Name)
        ):
            return node.args[0].value, node.args[1].id
    return None


def _imports_check(source: str) -> bool:
    return any(
        isinstance(node, ast.ImportFrom)
        and node.module == "gptlib.lessons.checks"
        and any(alias.name == "check" for alias in node.names)
        for node in ast.walk(ast.parse(source))
    )


def exercise_cells(nb) -> list[ExerciseCells]:
    """Each solution cell with the check cell under it (asserting the pairing is right)."""
    found = []
    for i, cell in enumerate(nb.cells):
        if not _nbgrader(cell).get("solution"):
            continue
        grade_id = _nbgrader(cell)["grade_id"]
        assert cell.cell_type == "code", f"solution cell {grade_id!r} is not a code cell"
        assert i + 1 < len(nb.cells), f"solution cell {grade_id!r} has no check cell under it"
        test = nb.cells[i + 1]
        call = _check_call(test.source) if test.cell_type == "code" else None
        assert _nbgrader(test).get("grade") and call, (
            f"the cell under solution {grade_id!r} must be a graded cell calling "
            'check("<exercise>", <your function>)'
        )
        found.append(ExerciseCells(i, i + 1, *call))
    return found


def solution_only_lines(nb) -> set[str]:
    """Lines that appear only between the solution markers of the source notebook."""
    inside, outside = set(), set()
    for cell in nb.cells:
        in_solution = False
        for line in cell.source.splitlines():
            text = line.strip()
            if BEGIN in text or END in text:
                in_solution = BEGIN in text
                continue
            (inside if in_solution else outside).add(text)
    return {line for line in inside - outside if line}


@pytest.fixture(scope="session")
def fixture_exercises():
    """Register the fixture notebook's exercises here and make them importable by kernels."""
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(FIXTURES))
        pythonpath = os.environ.get("PYTHONPATH")
        patch.setenv("PYTHONPATH", os.pathsep.join(p for p in (str(FIXTURES), pythonpath) if p))
        module = importlib.import_module("classroom_fixture_checks")
        yield module
        for exercise in module.EXERCISES:
            REGISTRY.pop(exercise.name, None)


@pytest.fixture(scope="session")
def course(tmp_path_factory, fixture_exercises) -> Path:
    """A course directory holding the released fixture and course notebooks."""
    course_dir = tmp_path_factory.mktemp("course")
    classroom.release([FIXTURE_NOTEBOOK, *COURSE_NOTEBOOKS], course_dir)
    return course_dir


def _released(course_dir: Path, path: Path):
    return nbformat.read(course_dir / "release" / path.stem / path.name, as_version=4)


@pytest.mark.parametrize("path", _params(slow_for_course=False))
def test_exercises_are_well_formed_nbgrader_cells(path, fixture_exercises):
    nb = nbformat.read(path, as_version=4)
    MetadataValidator().validate_nb(nb)
    graded = [c for c in nb.cells if _nbgrader(c)]
    assert all(_nbgrader(c)["schema_version"] == 3 for c in graded)
    grade_ids = [_nbgrader(c)["grade_id"] for c in graded]
    assert len(grade_ids) == len(set(grade_ids)), f"duplicate grade_ids in {grade_ids}"

    exercises = exercise_cells(nb)
    assert len(exercises) >= 2, f"{path.name} has {len(exercises)} exercise(s); at least 2"
    for ex in exercises:
        solution, test = nb.cells[ex.solution], nb.cells[ex.check]
        meta = _nbgrader(test)
        assert meta["locked"] and not meta["solution"] and meta["points"] > 0, meta
        assert BEGIN in solution.source and END in solution.source, (
            f"{_nbgrader(solution)['grade_id']}: without markers nbgrader blanks the whole cell"
        )
        assert ex.exercise in REGISTRY, f"{ex.exercise!r} is not a registered exercise"
        defined = {
            node.name
            for node in ast.parse(solution.source).body
            if isinstance(node, ast.FunctionDef | ast.ClassDef)
        }
        assert ex.function in defined, f"{ex.function} is not defined by the cell above its check"
        preceding = "\n".join(c.source for c in nb.cells[: ex.check + 1] if c.cell_type == "code")
        assert _imports_check(preceding), (
            "import the check: from gptlib.lessons.checks import check"
        )
    graded_cells = [i for i, c in enumerate(nb.cells) if _nbgrader(c).get("grade")]
    assert graded_cells == [ex.check for ex in exercises], "every graded cell is an exercise check"
    names = [ex.exercise for ex in exercises]
    assert len(names) == len(set(names)), f"an exercise is checked twice: {names}"


@pytest.mark.skipif(not COURSE_NOTEBOOKS, reason="no course notebooks yet")
def test_every_registered_exercise_is_used_by_a_notebook():
    used = set()
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        used |= {ex.exercise for ex in exercise_cells(nb)}
    unused = sorted(REGISTERED_BEFORE_FIXTURES - used)
    assert not unused, f"registered exercises no notebook checks: {unused}"


@pytest.mark.parametrize("path", _params(slow_for_course=False))
def test_student_version_has_no_solution_and_no_output(path, course):
    source = nbformat.read(path, as_version=4)
    student = _released(course, path)
    assert len(student.cells) == len(source.cells)
    secret = solution_only_lines(source)
    assert secret, "the source notebook holds no solution text"
    for cell in student.cells:
        lines = {line.strip() for line in cell.source.splitlines()}
        assert not lines & secret, f"solution text in the student version: {lines & secret}"
        assert "BEGIN SOLUTION" not in cell.source and "END SOLUTION" not in cell.source
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None
    for ex in exercise_cells(source):
        stub = student.cells[ex.solution].source
        assert "raise NotImplementedError()" in stub
        top_level = ast.parse(stub).body
        assert not any(isinstance(node, ast.Raise) for node in top_level), (
            "the stub must define the function, not raise when its cell runs"
        )
        assert student.cells[ex.check].source == source.cells[ex.check].source
        assert student.cells[ex.check].metadata["editable"] is False


def _execute(nb, cwd: Path) -> None:
    client = NotebookClient(
        nb,
        timeout=600,
        kernel_name="python3",
        allow_errors=True,
        resources={"metadata": {"path": str(cwd)}},
    )
    client.execute()


@pytest.mark.parametrize("path", _params(slow_for_course=True))
def test_student_version_runs_to_the_first_exercise_and_stops_cleanly(path, course, monkeypatch):
    pythonpath = os.environ.get("PYTHONPATH")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (str(ROOT), pythonpath) if p))
    monkeypatch.setenv("GPTLIB_DEVICE", "cpu")
    student = _released(course, path)
    first = exercise_cells(nbformat.read(path, as_version=4))[0]
    student.cells = student.cells[: first.check + 1]
    _execute(student, course / "release" / path.stem)

    errors = {
        i: output
        for i, cell in enumerate(student.cells)
        if cell.cell_type == "code"
        for output in cell.outputs
        if output.output_type == "error"
    }
    assert list(errors) == [first.check], f"cells that raised: {list(errors)}"
    error = errors[first.check]
    assert error.ename == "NotImplementedYet"
    assert error.evalue.startswith(f"{first.exercise}: not implemented yet")
    assert "site-packages/torch" not in "".join(error.traceback)


def submission_with_mistake(source, student):
    """The student version with every exercise solved by the reference, except the last one,
    which makes the first mistake of its catalogue. Returns the notebook, the expected score
    and the expected failure line."""
    submission = copy.deepcopy(student)
    exercises = exercise_cells(source)
    for ex in exercises:
        submission.cells[ex.solution].source = source.cells[ex.solution].source
    last = exercises[-1]
    mistake = REGISTRY[last.exercise].mistakes[0]
    submission.cells[last.solution].source += (
        "\n\nfrom gptlib.lessons.checks import REGISTRY\n\n"
        f"{last.function} = REGISTRY[{last.exercise!r}].mistakes[0].implementation\n"
    )
    points = [_nbgrader(source.cells[ex.check])["points"] for ex in exercises]
    check_id = _nbgrader(source.cells[last.check])["grade_id"]
    failure = f"{check_id}: CheckError: {last.exercise}: {mistake.message}"
    return submission, sum(points) - points[-1], sum(points), failure


@pytest.mark.parametrize("path", _params(slow_for_course=True))
def test_autograde_gives_partial_score_for_one_catalogued_mistake(path, course, tmp_path):
    source = nbformat.read(path, as_version=4)
    submission, expected, total, failure = submission_with_mistake(source, _released(course, path))
    folder = tmp_path / "mia"
    folder.mkdir()
    nbformat.write(submission, folder / path.name)

    [score] = classroom.autograde(classroom.find_submissions([folder]), course)

    assert (score.student, score.notebook) == ("mia", path.stem)
    assert (score.score, score.max_score) == (expected, total)
    assert score.failures == (failure,)


def test_release_and_autograde_commands_end_to_end(tmp_path, fixture_exercises):
    """The documented commands on the fixture: one student with a hand-written mistake (the
    softmax over columns), one who solved nothing and replaced the checks by a print."""

    def run(*args: str) -> str:
        command = [sys.executable, str(SCRIPT), *args, "--course-dir", str(tmp_path / "course")]
        done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=600)
        assert done.returncode == 0, done.stderr
        return done.stdout

    out = run("release", str(FIXTURE_NOTEBOOK))
    released = tmp_path / "course" / "release" / FIXTURE_NOTEBOOK.stem / FIXTURE_NOTEBOOK.name
    assert out.strip() == f"released {released}"

    source = nbformat.read(FIXTURE_NOTEBOOK, as_version=4)
    student = nbformat.read(released, as_version=4)
    ada = copy.deepcopy(student)
    first, second = exercise_cells(source)
    ada.cells[first.solution].source = "def row_softmax(x):\n    return torch.softmax(x, dim=0)"
    ada.cells[second.solution].source = source.cells[second.solution].source
    bob = copy.deepcopy(student)
    for ex in (first, second):
        bob.cells[ex.check].source = 'print("all good")'
    for name, nb in (("ada", ada), ("bob", bob)):
        (tmp_path / "class" / name).mkdir(parents=True)
        nbformat.write(nb, tmp_path / "class" / name / FIXTURE_NOTEBOOK.name)

    lines = run("autograde", str(tmp_path / "class")).splitlines()

    assert lines[0].split() == ["ada", "classroom_fixture", "1", "/", "2"]
    assert (
        "row-softmax-check: CheckError: fixture-row-softmax: softmax over the wrong axis"
        in (lines[1])
    )
    assert lines[2].split() == ["bob", "classroom_fixture", "0", "/", "2"]
    assert all("NotImplementedYet" in line and "not implemented yet" in line for line in lines[3:])
    assert len(lines) == 5


def test_submissions_are_found_in_each_layout(tmp_path):
    for path in ("solo/02_x.ipynb", "class/ann/03_y.ipynb", "class/ben/03_y/03_y.ipynb"):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("{}")

    assert classroom.find_submissions([tmp_path / "solo"]) == [
        ("solo", tmp_path / "solo/02_x.ipynb")
    ]
    assert classroom.find_submissions([tmp_path / "solo"], student="sam")[0][0] == "sam"
    assert classroom.find_submissions([tmp_path / "class/ann/03_y.ipynb"])[0][0] == "ann"
    assert classroom.find_submissions([tmp_path / "class"]) == [
        ("ann", tmp_path / "class/ann/03_y.ipynb"),
        ("ben", tmp_path / "class/ben/03_y/03_y.ipynb"),
    ]
    (tmp_path / "twice/cid/old").mkdir(parents=True)
    for path in ("twice/cid/03_y.ipynb", "twice/cid/old/03_y.ipynb"):
        (tmp_path / path).write_text("{}")
    with pytest.raises(ValueError, match="cid handed in 03_y twice"):
        classroom.find_submissions([tmp_path / "twice"])
    with pytest.raises(ValueError, match="one folder per student; drop --student"):
        classroom.find_submissions([tmp_path / "class"], student="sam")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="no notebooks found"):
        classroom.find_submissions([tmp_path / "empty"])
    with pytest.raises(ValueError, match="neither a notebook nor a folder"):
        classroom.find_submissions([tmp_path / "solo/notes.txt"])


def test_bad_input_is_explained(tmp_path):
    with pytest.raises(ValueError, match="no such notebook: .*missing.ipynb"):
        classroom.release([tmp_path / "missing.ipynb"], tmp_path)
    (tmp_path / "source" / "01_a").mkdir(parents=True)
    with pytest.raises(ValueError, match=r"02_b.ipynb is not a released notebook .*01_a"):
        classroom.autograde([("ann", tmp_path / "02_b.ipynb")], tmp_path)
