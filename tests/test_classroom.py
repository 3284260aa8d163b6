"""The classroom pipeline (`scripts/classroom.py` over nbgrader), on a fixture notebook and on
every course notebook `notebooks/NN_*.ipynb` with exercises: exercises are well formed, student
versions hold no solution and no output, the fixture's runs from top to bottom with every
exercise left undone (each check scoring zero, the reference standing in; the course notebooks'
student edition, the workbook, is run by tests/test_workbook.py), autograding a submission with one
catalogued mistake gives the expected partial score, and a class of synthetic submissions
gives the expected misconception report and feedback.

Executing the course notebooks is marked `slow`: each student version runs once, and only the
first course notebook is autograded (autograding runs a whole notebook again).
"""

from __future__ import annotations

import ast
import copy
import csv
import html
import importlib
import inspect
import os
import re
import subprocess
import sys
import textwrap
from dataclasses import dataclass, replace
from pathlib import Path

import matplotlib.image
import nbformat
import pytest
from nbclient import NotebookClient
from nbgrader.nbgraderformat import MetadataValidator
from nbgrader.utils import determine_grade

from gptlib.lessons.engine.checks import REGISTRY, Property, read_outcome
from gptlib.lessons.engine.checks.outcomes import NOT_IMPLEMENTED
from tests.executed import raised, stream_text
from tests.scripts import load_script

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"
FIXTURE_NOTEBOOK = FIXTURES / "classroom_fixture.ipynb"
BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
REGISTERED_BEFORE_FIXTURES = frozenset(REGISTRY)


classroom = load_script("classroom")
editions = load_script("editions")
COURSE_NOTEBOOKS = [
    path
    for path in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    if classroom.has_exercises(path)
]


def _params(slow_for_course: bool, course: list[Path] = COURSE_NOTEBOOKS) -> list:
    course_mark = [pytest.mark.slow] if slow_for_course else []
    return [pytest.param(FIXTURE_NOTEBOOK, id=FIXTURE_NOTEBOOK.stem)] + [
        pytest.param(path, id=path.stem, marks=course_mark) for path in course
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
        and node.module == "gptlib.lessons.engine.checks"
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


def verified_outcome(name: str, answer) -> str:
    """What `verify` says of `answer`, from a first try: passed, not implemented, the mistake's
    name or wrong."""
    from gptlib.lessons.engine.checks import CheckError, NotImplementedYet, verify
    from gptlib.lessons.engine.checks.core import forget_tries

    forget_tries()
    try:
        verify(name, answer)
    except NotImplementedYet:
        return "not implemented"
    except CheckError as e:
        return e.mistake or "wrong"
    finally:
        forget_tries()
    return "passed"


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


def _assignment_source(path: Path):
    """The notebook as the student versions see it: without its solved-only cells."""
    return editions.without_guards(nbformat.read(path, as_version=4))


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
            "import the check: from gptlib.lessons.engine.checks import check"
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
    source = _assignment_source(path)
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


@pytest.mark.parametrize("path", _params(slow_for_course=False, course=COURSE_NOTEBOOKS)[1:])
def test_the_classroom_version_is_the_workbook(path, course):
    """One generator makes both student versions (scripts/editions.py's preprocessors run inside
    nbgrader's generate_assignment): the released notebook has the workbook's cells, but for
    the workbook's setup cell, its first cell's note and its last section, the student's own
    record (which a submission must not carry). So the workbook's tests (the core path alone
    among them, tests/test_core_path.py) hold for the classroom's version too."""
    released = [c.source for c in _released(course, path).cells]
    workbook = [c.source for c in nbformat.read(editions.WORKBOOK / path.name, as_version=4).cells]
    assert workbook[0].startswith(released[0]) and "*Workbook edition:" in workbook[0]
    record = [c.source for c in editions.record_cells(path.name)]
    assert workbook[-2:] == record and "engine.record" not in "".join(released)
    assert released[1:] == workbook[2:-2]


def _execute(nb, cwd: Path) -> None:
    client = NotebookClient(
        nb,
        timeout=600,
        kernel_name="python3",
        allow_errors=True,
        resources={"metadata": {"path": str(cwd)}},
    )
    client.execute()


@pytest.fixture
def kernel_env(monkeypatch):
    """What a kernel needs: this checkout's gptlib and the CPU (a corpus directory, where one is
    needed, comes from the environment, as for nbval)."""
    pythonpath = os.environ.get("PYTHONPATH")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (str(ROOT), pythonpath) if p))
    monkeypatch.setenv("GPTLIB_DEVICE", "cpu")


# The course notebooks' student edition runs to the end in tests/test_workbook.py (the workbook
# is the nbgrader release less nothing but its setup cell); here the fixture, through nbgrader.
@pytest.mark.parametrize("path", _params(slow_for_course=True, course=[]))
def test_student_version_runs_to_the_end_and_scores_zero(path, course, kernel_env):
    """Run All on an untouched student version: no cell raises; each check says 'not
    implemented yet' on stderr, shows the stand-in box, and nbgrader's own grading rule gives
    it zero points; graded cells other than checks (none today) keep their full points."""
    source = _assignment_source(path)
    student = _released(course, path)
    _execute(student, course / "release" / path.stem)

    errors = raised(student)
    assert not errors, f"the student version stopped: {errors}"
    exercises = exercise_cells(source)
    for ex in exercises:
        cell = student.cells[ex.check]
        outcome = read_outcome(stream_text(cell, "stderr"))
        assert (outcome.exercise, outcome.status) == (ex.exercise, NOT_IMPLEMENTED)
        [notice] = [o for o in cell.outputs if o.output_type == "display_data"]
        assert f"<code>{ex.function}</code> stands in for yours below" in notice.data["text/html"]
        assert determine_grade(cell) == (0, _nbgrader(cell)["points"])
    checks = {ex.check for ex in exercises}
    for i, cell in enumerate(student.cells):
        if _nbgrader(cell).get("grade") and i not in checks:
            assert determine_grade(cell)[0] == _nbgrader(cell)["points"]


# One catalogued mistake per notebook, written as a student would write it: the grader's kernel
# holds no mistake's code (nor any reference) to plant.
PLANTED_MISTAKES = {
    "classroom_fixture": (
        "fixture-row-softmax", "wrong-axis",
        "def row_softmax(x):\n    return torch.softmax(x, dim=0)\n",
    ),
    "01_embeddings_and_positions": (
        "embed", "positions-by-token-id", "def embed(idx, E, P):\n    return E[idx] + P[idx]\n",
    ),
}  # fmt: skip


def submission_with_mistake(source, student, path: Path):
    """The student version with every exercise solved as in the solved notebook, except one,
    which makes a catalogued mistake (`PLANTED_MISTAKES`). Returns the notebook, the expected
    score, the total and the expected failure line."""
    submission = copy.deepcopy(student)
    exercises = exercise_cells(source)
    for ex in exercises:
        submission.cells[ex.solution].source = source.cells[ex.solution].source
    name, mistake_name, code = PLANTED_MISTAKES[path.stem]
    [planted] = [ex for ex in exercises if ex.exercise == name]
    submission.cells[planted.solution].source = code
    mistake = next(m for m in REGISTRY[name].mistakes if m.name == mistake_name)
    points = [_nbgrader(source.cells[ex.check])["points"] for ex in exercises]
    lost = _nbgrader(source.cells[planted.check])["points"]
    check_id = _nbgrader(source.cells[planted.check])["grade_id"]
    message = " ".join(mistake.message.split())
    failure = f"{check_id}: {name}: {message} (misconception: {mistake.name})"
    return submission, sum(points) - lost, sum(points), failure


@pytest.mark.parametrize("path", _params(slow_for_course=True, course=COURSE_NOTEBOOKS[:1]))
def test_autograde_scores_one_catalogued_mistake_and_untouched_stubs(
    path, course, tmp_path, capsys
):
    """Mia makes one catalogued mistake: every point but that exercise's, and its message.
    Nia hands in the student version untouched: zero, every check 'not implemented yet'. Oli's
    copy named `<notebook> (1).ipynb` is no released notebook, and Pat's file is no notebook:
    each is named on stderr and skipped, and the rest of the class is graded."""
    source = _assignment_source(path)
    student = _released(course, path)
    submission, expected, total, failure = submission_with_mistake(source, student, path)
    for name, nb in (("mia", submission), ("nia", student)):
        (tmp_path / name).mkdir()
        nbformat.write(nb, tmp_path / name / path.name)
    (tmp_path / "oli").mkdir()
    nbformat.write(submission, tmp_path / "oli" / f"{path.stem} (1).ipynb")
    (tmp_path / "pat").mkdir()
    (tmp_path / "pat" / path.name).write_text("not a notebook")
    capsys.readouterr()

    mia, nia = classroom.autograde(classroom.find_submissions([tmp_path]), course)

    skipped = [line for line in capsys.readouterr().err.splitlines() if line.startswith("skipped")]
    assert [line.split(":")[0] for line in skipped] == [
        f"skipped {tmp_path / 'oli' / f'{path.stem} (1).ipynb'}",
        f"skipped {tmp_path / 'pat' / path.name}",
    ]
    assert "is not a released notebook" in skipped[0]
    assert (mia.student, mia.notebook) == ("mia", path.stem)
    assert (mia.score, mia.max_score) == (expected, total)
    assert mia.failures == (failure,)
    assert (nia.student, nia.score, nia.max_score) == ("nia", 0, total)
    assert nia.failures == tuple(
        f"{_nbgrader(source.cells[ex.check])['grade_id']}: {ex.exercise}: not implemented yet"
        for ex in exercise_cells(source)
    )


def _class_of_five(source, student) -> dict:
    """Five synthetic submissions of the fixture notebook, each with known answers."""
    first, second = exercise_cells(source)
    right = {ex: source.cells[ex.solution].source for ex in (first, second)}
    answers = {
        "ben": {},  # solved nothing, and replaced both checks by a print
        "cat": {
            first: "def row_softmax(x):\n    return torch.softmax(x, dim=0)",
            second: right[second],
        },
        "dan": {
            first: right[first],
            second: "def scaled_scores(q, k):\n    return q @ k.T / q.shape[-1]",
        },
        "eve": {
            first: "def row_softmax(x):\n    return x.softmax(0)",
            second: "def scaled_scores(q, k):\n    return q @ k.T",
        },
        "fay": {first: "", second: "def scaled_scores(q, k):\n    return q @ k.T / k.shape[1]"},
    }
    notebooks = {}
    for name, cells in answers.items():
        nb = copy.deepcopy(student)
        for ex, code in cells.items():
            nb.cells[ex.solution].source = code
        notebooks[name] = nb
    for ex in (first, second):
        notebooks["ben"].cells[ex.check].source = 'print("all good")'
    return notebooks


@pytest.mark.slow
def test_a_class_is_graded_reported_and_given_feedback(tmp_path, fixture_exercises, capsys):
    """The documented commands on a class of five with known answers: scores, the report's
    counts per exercise and outcome, its figure, and feedback that names the misconception."""

    def run(*args: str) -> str:
        code = classroom.main([*args, "--course-dir", str(tmp_path / "course")])
        out, err = capsys.readouterr()
        assert code == 0, err
        return out

    out = run("release", str(FIXTURE_NOTEBOOK))
    released = tmp_path / "course" / "release" / FIXTURE_NOTEBOOK.stem / FIXTURE_NOTEBOOK.name
    assert out.strip() == f"released {released}"
    source = nbformat.read(FIXTURE_NOTEBOOK, as_version=4)
    for name, nb in _class_of_five(source, nbformat.read(released, as_version=4)).items():
        (tmp_path / "class" / name).mkdir(parents=True)
        nbformat.write(nb, tmp_path / "class" / name / FIXTURE_NOTEBOOK.name)

    lines = run("autograde", str(tmp_path / "class"), "--jobs", "2").splitlines()  # in parallel

    scores = {line.split()[0]: line.split()[2] for line in lines if not line.startswith(" ")}
    assert scores == {"ben": "0", "cat": "1", "dan": "1", "eve": "0", "fay": "0"}
    assert (
        "    ✘ row-softmax-check: fixture-row-softmax: softmax over the wrong axis: normalise "
        "each row (dim=-1), not each column. (misconception: wrong-axis)"
    ) in lines
    assert "    ✘ row-softmax-check: fixture-row-softmax: not implemented yet" in lines

    report_dir = tmp_path / "course" / "reports" / FIXTURE_NOTEBOOK.stem
    assert run("report").split() == [
        "wrote",
        str(report_dir / "scores.csv"),
        "wrote",
        str(report_dir / "misconceptions.csv"),
        "wrote",
        str(report_dir / "misconceptions.png"),
    ]
    with (report_dir / "scores.csv").open() as f:
        rows = list(csv.reader(f))
    assert rows == [
        ["student", "score", "max_score", "fixture-row-softmax", "fixture-scaled-scores"],
        ["ben", "0", "2", "not implemented", "not implemented"],
        ["cat", "1", "2", "wrong-axis", "passed"],
        ["dan", "1", "2", "passed", "divided-by-d"],
        ["eve", "0", "2", "wrong-axis", "unscaled"],
        ["fay", "0", "2", "unexplained", "divided-by-d"],
    ]
    with (report_dir / "misconceptions.csv").open() as f:
        tallies = list(csv.DictReader(f))
    counts = [(r["exercise"], r["outcome"], r["mistake"], r["students"], r["who"]) for r in tallies]
    assert counts == [
        ("fixture-row-softmax", "passed", "", "1", "dan"),
        ("fixture-row-softmax", "not implemented", "", "1", "ben"),
        ("fixture-row-softmax", "mistake", "wrong-axis", "2", "cat;eve"),
        ("fixture-row-softmax", "unexplained", "", "1", "fay"),
        ("fixture-scaled-scores", "passed", "", "1", "cat"),
        ("fixture-scaled-scores", "not implemented", "", "1", "ben"),
        ("fixture-scaled-scores", "mistake", "divided-by-d", "2", "dan;fay"),
        ("fixture-scaled-scores", "mistake", "unscaled", "1", "eve"),
        ("fixture-scaled-scores", "unexplained", "", "0", ""),
    ]
    assert tallies[3]["message"] == (
        "the check cell raised NameError: name 'row_softmax' is not defined"
    )
    assert tallies[2]["message"].startswith("softmax over the wrong axis")
    assert tallies[2]["share"] == "0.40"
    height, width, _ = matplotlib.image.imread(report_dir / "misconceptions.png").shape
    assert width >= 1900 and height >= 600  # 13.33 in wide at 150 dpi: a slide

    written = run("feedback").split()[1::2]
    feedback = tmp_path / "course" / "feedback"
    assert written == [
        str(feedback / who / FIXTURE_NOTEBOOK.stem / f"{FIXTURE_NOTEBOOK.stem}.html")
        for who in ("ben", "cat", "dan", "eve", "fay")
    ]
    eve = html.unescape(Path(written[3]).read_text())
    assert "softmax over the wrong axis: normalise each row (dim=-1), not each column." in eve
    assert "misconception:" not in eve  # the report names mistakes; the student reads messages


def test_autograde_takes_a_positive_number_of_jobs(tmp_path):
    with pytest.raises(ValueError, match="jobs must be a positive int .* got 0"):
        classroom.autograde([], tmp_path, jobs=0)


def test_report_and_feedback_need_graded_work(tmp_path):
    assert classroom.main(["report", "--course-dir", str(tmp_path)]) == 1
    with pytest.raises(ValueError, match="02_x has no autograded submissions"):
        classroom.feedback(["02_x"], tmp_path)


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


CAPSTONE = ROOT / "notebooks" / "07_build_the_gpt.ipynb"


@pytest.mark.slow
@pytest.mark.skipif(not CAPSTONE.exists(), reason="notebook 07_build_the_gpt is not in this tree")
def test_autograde_the_capstone_right_and_with_a_model_missing_its_final_norm(tmp_path, kernel_env):
    """Notebook 07, graded as handed in: Ada's six answers (attention, MLP, Block, GPT, generate,
    the KV cache) are right, so all points; Ben's GPT (two points) reads the logits out without
    the final LayerNorm, the catalogued mistake, so he loses those two points only, with its
    message."""
    course_dir = tmp_path / "course"
    classroom.release([CAPSTONE], course_dir)
    source = _assignment_source(CAPSTONE)
    exercises = {ex.exercise: ex for ex in exercise_cells(source)}
    assert set(exercises) == {
        "gpt-attention",
        "gpt-mlp",
        "gpt-block",
        "gpt",
        "generate",
        "kv-cache",
    }
    right = copy.deepcopy(_released(course_dir, CAPSTONE))
    for ex in exercises.values():
        right.cells[ex.solution].source = source.cells[ex.solution].source
    wrong = copy.deepcopy(right)
    capstone = wrong.cells[exercises["gpt"].solution]
    readout = "logits = self.lm_head(self.ln_f(x))"
    assert capstone.source.count(readout) == 1
    capstone.source = capstone.source.replace(readout, "logits = self.lm_head(x)")
    for name, nb in (("ada", right), ("ben", wrong)):
        (tmp_path / name).mkdir()
        nbformat.write(nb, tmp_path / name / CAPSTONE.name)

    ada, ben = classroom.autograde(classroom.find_submissions([tmp_path / "ada", tmp_path / "ben"]),
                                   course_dir)  # fmt: skip

    points = {ex.exercise: _nbgrader(source.cells[ex.check])["points"] for ex in exercises.values()}
    assert points == {"gpt-attention": 1, "gpt-mlp": 1, "gpt-block": 1, "gpt": 2, "generate": 1,
                      "kv-cache": 1}  # fmt: skip
    assert (ada.score, ada.max_score, ada.failures) == (7, 7, ())
    mistake = next(m for m in REGISTRY["gpt"].mistakes if m.name == "no-final-layernorm")
    message = " ".join(mistake.message.split())
    assert (ben.score, ben.max_score) == (5, 7)
    assert ben.failures == (f"nb07-gpt-check: gpt: {message} (misconception: no-final-layernorm)",)


# --- a graded release: the students' gptlib holds recorded results, not references ----------

GRADED_LESSONS = [p for p in COURSE_NOTEBOOKS if re.fullmatch(r"0[1-9]", p.stem[:2])]
# Recording runs every catalogued mistake on every input: these lessons' take more than a few
# seconds here (their mistakes train or run whole models).
SLOW_TO_RECORD = {"03", "06", "07", "08"}
# Exercises that ask the student to write again a piece of the library the course builds on:
# their reference is library code (gptlib.model, or a `references` module of the lessons: shared
# when another lesson runs it), which a graded release keeps because later cells and lessons
# import it. Every other reference lives in a lesson's `checks.py`, which the release leaves out.
REFERENCE_IN_THE_LIBRARY = {
    "sinusoidal-positions": "gptlib.lessons.shared.references",
    "held-out-losses": "gptlib.lessons.shared.references",
    # notebook 05 runs it as its gradient-flow measurement, so the library keeps it
    "block_gradient_norms": "gptlib.lessons.shared.references",
    "attention-module": "gptlib.model",
    "mlp": "gptlib.model",
    "layer_norm": "gptlib.lessons.nb06.references",
    "gpt-attention": "gptlib.model",
    "gpt-mlp": "gptlib.model",
}


def _graded_params() -> list:
    return [
        pytest.param(p, id=p.stem, marks=[pytest.mark.slow] if p.stem[:2] in SLOW_TO_RECORD else [])
        for p in GRADED_LESSONS
    ]


@pytest.fixture(scope="module")
def graded_package(tmp_path_factory):
    """The students' gptlib of a graded release of one lesson, built once per lesson."""
    built: dict[str, Path] = {}

    def package(path: Path) -> Path:
        if path.stem not in built:
            out = tmp_path_factory.mktemp(f"graded-{path.stem[:2]}") / "gptlib-student"
            built[path.stem] = classroom.student_package([path], out)
        return built[path.stem]

    return package


def _lesson_exercises(path: Path) -> list[str]:
    return classroom.exercises_of([path])


def _implementations(exercise) -> list:
    """The reference and each catalogued mistake's implementation, as functions or classes."""
    found = [exercise.reference] + [m.implementation for m in exercise.mistakes]
    return [getattr(f, "func", f) for f in found]


def _student_run(package: Path, script: str) -> subprocess.CompletedProcess:
    """`script` run by Python in a student's environment: only the released gptlib importable
    (not this repository, whose gptlib holds the check modules)."""
    return subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True, text=True, cwd=package.parent,
        env={**os.environ, "PYTHONPATH": str(package)},
    )  # fmt: skip


@pytest.mark.parametrize("path", _graded_params())
def test_a_graded_release_holds_no_reference_and_no_mistake(path, graded_package):
    """The students' gptlib holds each lesson's check module cut down to its inputs and
    adapters: it registers nothing, names nothing undefined (ruff's F821) and holds no mistake's
    fix; and no source of a reference or of a catalogued mistake is anywhere in the package,
    except the references that are library code (`REFERENCE_IN_THE_LIBRARY`, which the release
    keeps on purpose). (A fix may be a line the library computes too, 02's scaled scores in 04's
    experiments: only the cuts must not hold one.)"""
    package = graded_package(path)
    lessons = package / "gptlib" / "lessons"
    assert (lessons / "engine" / "checks" / "recorded.pt").is_file()
    cuts = sorted(lessons.glob("nb*/checks.py"))
    assert lessons / f"nb{path.stem[:2]}" / "checks.py" in cuts
    for cut in cuts:
        assert "register(" not in cut.read_text() and "Mistake(" not in cut.read_text(), cut
    ruff = [sys.executable, "-m", "ruff", "check", "--isolated", "--select", "F821,F811"]
    undefined = subprocess.run([*ruff, *map(str, cuts)], capture_output=True, text=True)
    assert undefined.returncode == 0, undefined.stdout
    shipped = {p: p.read_text() for p in (package / "gptlib").rglob("*.py")}
    for name in _lesson_exercises(path):
        exercise = REGISTRY[name]
        for fix in (m.fix for m in exercise.mistakes if m.fix):
            assert not [cut for cut in cuts if fix in shipped[cut]], (name, fix)
        if name in REFERENCE_IN_THE_LIBRARY:
            assert exercise.reference.__module__ == REFERENCE_IN_THE_LIBRARY[name]
        else:
            assert re.fullmatch(r"gptlib\.lessons\.nb\d+\.checks", exercise.reference.__module__)
        for fn in _implementations(exercise)[name in REFERENCE_IN_THE_LIBRARY :]:
            try:
                source = textwrap.dedent(inspect.getsource(fn))
            except (OSError, TypeError):  # a lambda's line, a builtin: nothing to search for
                continue
            holding = [str(p.relative_to(package)) for p, text in shipped.items() if source in text]
            assert not holding, f"{name}: {fn.__qualname__} is shipped in {holding}"


@pytest.mark.parametrize("path", _graded_params())
def test_a_student_cannot_obtain_a_reference(path, graded_package):
    """What a student might try in a graded release's environment: show_solution, looking in
    the check module, calling or reading an exercise's reference or a mistake's code, the
    stand-in box. Each says there is nothing to get; the lesson's exercises are registered."""
    package = graded_package(path)
    names = _lesson_exercises(path)
    module = f"gptlib.lessons.nb{path.stem[:2]}.checks"
    answers = sorted(
        fn.__name__
        for name in names
        for fn in _implementations(REGISTRY[name])
        if getattr(fn, "__module__", None) == module and "<" not in fn.__qualname__
    )
    assert answers, f"{module} defines no reference or mistake to look for"
    script = f"""
import contextlib, importlib, inspect, io
import gptlib.lessons.engine.checks as checks
from gptlib.lessons.engine.checks import REGISTRY, check
assert checks.__file__.startswith({str(package)!r}), checks.__file__
assert sorted(REGISTRY) == {sorted(names)!r}, sorted(REGISTRY)
for name, exercise in REGISTRY.items():
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        checks.show_solution(name)
    assert out.getvalue().startswith("show_solution is switched off"), out.getvalue()
    try:
        exercise.reference()
    except RuntimeError as e:
        assert "no reference" in str(e)
    code = inspect.getsource(exercise.reference)
    assert "_no_reference" in code and "raise RuntimeError" in code, code
    for mistake in exercise.mistakes:
        assert mistake.implementation is exercise.reference
    def stub(*args, **kwargs):
        raise NotImplementedError()
    namespace = {{"stub": stub}}
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        check(name, stub, namespace=namespace)
    assert namespace["stub"] is stub, "something stood in for the student's answer"
    assert "not implemented yet" in err.getvalue(), (name, err.getvalue())
cut = importlib.import_module({module!r})
print("found", sorted(set(dir(cut)) & set({answers!r})))
"""
    done = _student_run(package, script)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["found", "[]"]


@pytest.mark.parametrize("path", _graded_params())
def test_a_graded_release_grades_planted_answers_as_the_full_check(
    path, graded_package, monkeypatch
):
    """The lesson's recorded checks, as the students' gptlib loads them, on planted answers:
    each gets the outcome the full check gives it: an independent right answer passes, a stub is
    not implemented, and each catalogued mistake is named, or, where its code calls what the
    exercise forbids, refused as the full check refuses a student's own copy of it (the full
    check lets the catalogue's own objects call anything: it runs them to recognise a mistake).
    The reference is not planted: the full check refuses it as the course's own answer, and the
    recording knows it only where the release keeps it."""
    from gptlib.lessons.engine.checks.core import forget_tries
    from gptlib.lessons.engine.checks.recorded import load_recording
    from tests.lessons.engine.checks.test_every_exercise import INDEPENDENT

    package = graded_package(path)
    names = _lesson_exercises(path)
    full = {name: REGISTRY[name] for name in names}

    def stub(*args, **kwargs):
        raise NotImplementedError()

    planted = {
        name: [("independent", INDEPENDENT[name]), ("stub", stub)]
        + [(m.name, m.implementation) for m in full[name].mistakes]
        for name in names
    }
    expected = {
        (n, label): verified_outcome(n, answer) for n in names for label, answer in planted[n]
    }
    as_students = {(n, m.name): verified_outcome(n, _own_copy(m.implementation))
                   for n in names for m in full[n].mistakes}  # fmt: skip
    recorded = load_recording(package / "gptlib" / "lessons" / "engine" / "checks" / "recorded.pt")
    assert sorted(r.name for r in recorded) == sorted(names)
    for exercise in recorded:
        assert not exercise.has_solution
        assert len(exercise.properties) == len(full[exercise.name].properties)
        monkeypatch.setitem(REGISTRY, exercise.name, exercise)
    got = {(n, label): verified_outcome(n, answer) for n in names for label, answer in planted[n]}
    forget_tries()
    refused = {key for key, said in as_students.items() if said == got[key] == "delegated"}
    assert {k: v for k, v in got.items() if k not in refused} == {
        k: v for k, v in expected.items() if k not in refused
    }
    for n in names:
        assert expected[n, "independent"] == "passed"
        assert expected[n, "stub"] == "not implemented"
        for m in full[n].mistakes:
            assert expected[n, m.name] not in ("passed", "wrong"), (n, m.name)


def _own_copy(answer):
    """`answer` as a student's own object: a function calling it, or a subclass of a class."""
    if isinstance(answer, type):
        return type(answer)(answer.__name__, (answer,), {"__module__": answer.__module__})
    return lambda *args, **kwargs: answer(*args, **kwargs)


def test_a_graded_release_of_a_lesson_that_cannot_be_recorded_is_refused(tmp_path, monkeypatch):
    """An exercise whose adapter lives where a graded release cannot ship it (here a lambda,
    which cannot be pickled by name) is refused, naming the notebook, instead of shipping
    checks that cannot load."""
    nb09 = ROOT / "notebooks" / "09_cost_accounting.ipynb"
    exercise = REGISTRY["training-gpu-hours"]
    monkeypatch.setitem(REGISTRY, exercise.name, replace(exercise, adapt=lambda answer: answer))
    with pytest.raises(ValueError, match="09_cost_accounting cannot be released graded yet"):
        classroom.student_package([nb09], tmp_path / "gptlib-student")
    assert not (tmp_path / "gptlib-student").exists()


def test_a_graded_release_that_would_ship_an_answer_is_refused(tmp_path, monkeypatch):
    """What the recording names is shipped in the cut of its check module with everything it
    uses; a property test that is an exercise's reference is refused, naming the reference and
    the notebook, and nothing is written."""
    nb09 = ROOT / "notebooks" / "09_cost_accounting.ipynb"
    exercise = REGISTRY["training-gpu-hours"]
    properties = (Property("the reference itself", exercise.reference),)
    monkeypatch.setitem(REGISTRY, exercise.name, replace(exercise, properties=properties))
    with pytest.raises(ValueError, match="09_cost_accounting cannot be released graded yet") as e:
        classroom.student_package([nb09], tmp_path / "gptlib-student")
    said = f"{exercise.reference.__name__} is the reference of exercise 'training-gpu-hours'"
    assert said in str(e.value)
    assert not (tmp_path / "gptlib-student").exists()


def test_a_graded_release_gives_students_checks_without_solutions(tmp_path):
    """The students' gptlib of a graded release (notebook 09): no reference or mistake in its
    check module's cut, show_solution switched off, and still a right answer passes and a catalogued
    mistake is named, from recorded results alone; 09's FLOP count takes models of gptlib's own
    classes, which the recording holds."""
    nb09 = ROOT / "notebooks" / "09_cost_accounting.ipynb"
    package = classroom.student_package([nb09], tmp_path / "gptlib-student")
    names = sorted(classroom.exercises_of([nb09]))
    lessons = package / "gptlib" / "lessons"
    assert sorted(lessons.glob("nb*/checks.py")) == [lessons / "nb09" / "checks.py"]
    assert (lessons / "engine" / "checks" / "recorded.pt").is_file()
    references = sorted(REGISTRY[name].reference.__name__ for name in names)
    script = (
        f"REFERENCES = {references!r}\n"
        + """
import io, contextlib
import gptlib.lessons.engine.checks as checks
from gptlib.lessons.engine.checks import REGISTRY, CheckError, show_solution, verify
assert checks.__file__.startswith(PACKAGE), checks.__file__
assert sorted(REGISTRY) == NAMES, sorted(REGISTRY)
out = io.StringIO()
with contextlib.redirect_stdout(out):
    show_solution("training-gpu-hours")
print(out.getvalue().strip())
import gptlib.lessons.nb09.checks as cut
print("nb09 without", [name for name in REFERENCES if not hasattr(cut, name)] == REFERENCES)
print(verify("training-gpu-hours", lambda n, d, peak, mfu: n * d * 6 / 3600 / (peak * mfu)))
try:
    verify("training-gpu-hours", lambda n, d, peak, mfu: 2 * n * d / (peak * mfu) / 3600)
except CheckError as e:
    print("named", e.mistake)
import torch
from torch.utils.flop_counter import FlopCounterMode
def flops(model, idx, targets=None):
    with FlopCounterMode(display=False) as counter:
        if targets is None:
            model(idx)
        else:
            model(idx, targets)[1].backward()
    bmm = counter.get_flop_counts()["Global"].get(torch.ops.aten.bmm, 0)
    return counter.get_total_flops() / idx.numel(), bmm / idx.numel()
print(verify("flops-per-token", flops))
try:
    verify("flops-per-token", lambda m, i, t=None: tuple(x * i.shape[1] for x in flops(m, i, t)))
except CheckError as e:
    print("named", e.mistake)
"""
    )
    done = subprocess.run(
        [sys.executable, "-c", f"PACKAGE = {str(package)!r}\nNAMES = {names!r}\n" + script],
        capture_output=True, text=True, cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(package)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert lines[0].startswith("show_solution is switched off for this assignment")
    names = ("training-gpu-hours", "flops-per-token")
    hours, flops = (str(len(REGISTRY[name].inputs())) for name in names)
    assert lines[1] == "nb09 without True"
    assert lines[2:] == [hours, "named forward only", flops, "named per sequence"]


def test_the_report_lists_every_message_of_an_outcome_no_catalogue_names():
    """Students refused for different delegations read different messages; the report's
    `delegated` row gives each of them, where a catalogued mistake's row gives its message."""
    from gptlib.lessons.engine.checks.outcomes import MISTAKE, Outcome

    said = {
        "eve": "your `f` called `gptlib.causal_mask`: ...",
        "dan": "your `f` called the course's reference answer to this exercise: ...",
    }
    graded = [
        classroom.Graded(
            who,
            0.0,
            1.0,
            (
                classroom.CheckResult(
                    "c", Outcome("causal-attention-weights", MISTAKE, text, "delegated")
                ),
            ),
        )
        for who, text in said.items()
    ]
    rows = {row.mistake: row for row in classroom.tally(graded) if row.outcome == MISTAKE}
    assert rows["delegated"].students == ("eve", "dan")
    assert rows["delegated"].message == " | ".join(said.values())
    assert "mask-after-softmax" in rows and rows["mask-after-softmax"].students == ()
