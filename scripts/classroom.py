"""Classroom versions of the notebooks with nbgrader: release student copies, grade submissions,
report the class's misconceptions, and write each student's feedback.

    python scripts/classroom.py release                      # every notebook that has exercises
    python scripts/classroom.py release notebooks/02_*.ipynb
    python scripts/classroom.py release --graded notebooks/02_*.ipynb   # and a gptlib for students
    python scripts/classroom.py autograde SUBMISSION [SUBMISSION ...] [--jobs N]  # N: cores
    python scripts/classroom.py report [ASSIGNMENT ...]      # default: every graded assignment
    python scripts/classroom.py feedback [ASSIGNMENT ...]
    python scripts/classroom.py autograde --course-dir DIR ... # another course directory

The tracked notebooks (solutions included) are the source. `release` copies each notebook into
the course directory (default `classroom/`) as `source/<name>/<name>.ipynb`, one assignment per
notebook, and runs nbgrader's generate_assignment, configured (classroom/nbgrader_config.py) with
the student-edition preprocessors that also write the workbook (scripts/editions.py): the student
version, without the solved edition's own cells (guards, committed answers), every solution
replaced by `raise NotImplementedError()` and every output cleared, lands in
`release/<name>/<name>.ipynb`.

`release --graded` also builds `release/gptlib`, the copy of gptlib the students install for a
graded assignment (`pip install <course-dir>/release/gptlib`; its pyproject.toml requires the
lessons' packages): the results that the exercises' references and catalogued mistakes give
on each check's fixed inputs are recorded (`gptlib.lessons.engine.checks.recorded`; no mistake's
fix), and each lesson's `gptlib/lessons/nbNN/checks.py` is cut down to what the checks need
besides (the inputs' objects, the adapters, the properties: `...checks.shipped`), without any
reference or mistake. A student's check still passes a right answer and names a catalogued
mistake, but no reference can be printed (`show_solution` says it is switched off) and no
reference stands in for an unfinished answer. Every lesson with exercises can be released so,
and each graded release keeps the exercises of those released graded before.

`autograde` takes a student's folder of notebooks (the student id is the folder name, or
`--student`), a single notebook, or a folder of such student folders. It copies each notebook
to `submitted/<student>/<name>/`, runs nbgrader's autograde (the check cells are restored from
the gradebook first, so edited checks do not count) and prints each notebook's score with the
message of every check that did not pass. Grades are kept in `<course-dir>/gradebook.db`. The
kernels import `grading/gptlib`, a copy of gptlib built like a graded release for the graded
assignments' exercises, with hidden inputs beside the visible ones, and first on their
PYTHONPATH: no reference to call or to stand in. A submission that is not named like a released
notebook, or that nbgrader cannot grade, is named on stderr and skipped. One student per core
is graded at once by default, each in a process of its own; `--jobs N` sets how many.

`report` reads the gradebook and the autograded notebooks, whose check cells say what each
answer was (passed, not implemented, a catalogued misconception by name, or wrong otherwise),
and writes per assignment `reports/<assignment>/scores.csv` (one row per student),
`misconceptions.csv` (one row per exercise and outcome, with counts) and `misconceptions.png`
(one bar chart per exercise). `feedback` runs nbgrader's generate_feedback: one HTML page per
student and assignment in `feedback/<student>/<assignment>/`, check messages included.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import hashlib
import io
import json
import os
import pickle
import re
import shutil
import subprocess
import sys
import tomllib
import warnings
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import nbformat
import torch

from gptlib.lessons.engine.checks import REGISTRY, Outcome
from gptlib.lessons.engine.checks.outcomes import (
    MISTAKE,
    NOT_IMPLEMENTED,
    PASSED,
    UNEXPLAINED,
    outcome_from_outputs,
)
from gptlib.lessons.engine.checks.shipped import NotShippable, shipped_check_modules

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
COURSE_DIR = ROOT / "classroom"
CONFIG_FILE = COURSE_DIR / "nbgrader_config.py"


@dataclass(frozen=True)
class Score:
    """One autograded notebook: points earned out of the maximum, and the failed checks."""

    student: str
    notebook: str
    score: float
    max_score: float
    failures: tuple[str, ...]


def has_exercises(path: Path) -> bool:
    """True when the notebook holds at least one nbgrader solution cell."""
    nb = nbformat.read(path, as_version=4)
    return any(cell.metadata.get("nbgrader", {}).get("solution") for cell in nb.cells)


def _api(course_dir: Path):
    """nbgrader's Python API on `course_dir`, configured by `classroom/nbgrader_config.py`."""
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config.loader import PyFileConfigLoader

    config = PyFileConfigLoader(CONFIG_FILE.name, path=str(CONFIG_FILE.parent)).load_config()
    config.CourseDirectory.root = str(course_dir.resolve())
    return NbGraderAPI(coursedir=CourseDirectory(config=config), config=config)


def _run(result: dict, what: str) -> None:
    if not result["success"]:
        details = "\n".join(result.get(key, "") for key in ("log", "error"))
        raise RuntimeError(f"nbgrader {what} failed:\n{details}")


@contextlib.contextmanager
def _nbgrader_environment(grading: Path | None = None) -> Iterator[None]:
    """Let the kernels nbgrader starts import gptlib, let nbgrader find its `alembic` tool (it
    runs the executable from PATH, which lacks the environment's bin/ when not activated), and
    silence the SQLAlchemy warnings nbgrader's gradebook raises on every submission.

    With `grading` (the grading copy of gptlib, `grading_package`: the folder holding its
    pyproject.toml and its `gptlib` package), that copy comes first on the kernels' PYTHONPATH,
    in place of this checkout: `import gptlib` there finds the copy, which holds no reference
    (the checkout's editable install is found only after PYTHONPATH; a kernel runs in the
    submission's folder, which holds no gptlib)."""
    from sqlalchemy.exc import SAWarning

    before = {key: os.environ.get(key) for key in ("PYTHONPATH", "PATH")}
    first = str(grading) if grading is not None else str(ROOT)
    additions = {"PYTHONPATH": first, "PATH": str(Path(sys.executable).parent)}
    for key, path in additions.items():
        os.environ[key] = os.pathsep.join(p for p in (path, before[key]) if p)
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", category=SAWarning)
            yield
    finally:
        for key, value in before.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def release(notebooks: list[Path], course_dir: Path = COURSE_DIR) -> list[Path]:
    """Generate the student version of each notebook; return the paths of the released copies."""
    missing = [str(p) for p in notebooks if not p.is_file()]
    if missing:
        raise ValueError(f"no such notebook: {', '.join(missing)}")
    api = _api(course_dir)
    released = []
    with _nbgrader_environment():
        for path in notebooks:
            name = path.stem
            source = course_dir / "source" / name / path.name
            source.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, source)
            result = api.generate_assignment(name, force=True, create=True)
            _run(result, f"generate_assignment {name}")
            released.append(course_dir / "release" / name / path.name)
    return released


def exercises_of(notebooks: list[Path]) -> list[str]:
    """The names of the exercises the notebooks check, in order."""
    names = []
    for path in notebooks:
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("grade"):
                names += _CHECK_CALL.findall(cell.source)
    return names


# The seed offset of the hidden grading inputs (`record(names, seed_offset=...)`): any number
# other than 0 makes inputs the students never saw; it is kept out of what they receive.
GRADING_SEED_OFFSET = 7919
# Where a copy of gptlib keeps its recorded checks (`gptlib.lessons.engine.checks.RECORDING`).
RECORDED = Path("gptlib", "lessons", "engine", "checks", "recorded.pt")


def student_package(notebooks: list[Path], out: Path) -> Path:
    """The copy of gptlib a graded assignment's students install (`pip install OUT`): without
    the exercises' references and catalogued mistakes (each lesson's gptlib/lessons/nbNN/checks.py
    cut down to its inputs and adapters), with the recorded results of those exercises instead
    (`recorded.pt`, no mistake's fix in it), so that the checks still name mistakes while no
    solution can be printed. The exercises already recorded in `out` (an earlier graded release)
    stay in it, recorded again from today's references, so that releasing a later lesson keeps
    the earlier assignments working. Returns `out`."""
    names = list(dict.fromkeys([*recorded_names(out), *exercises_of(notebooks)]))
    what = ", ".join(nb.stem for nb in notebooks)
    return _package(record_or_refuse(names, what), out, what)


def grading_package(names: list[str], out: Path) -> Path:
    """The copy of gptlib the grader's kernels import (`autograde`): the students' release of
    the exercises `names`, recorded on their visible inputs and on hidden ones
    (`GRADING_SEED_OFFSET`). No reference is in it, so nothing can hand a student's code an
    answer and nothing stands in for a wrong one. Kept under the course directory, never
    released. Rebuilt only when the exercises or gptlib's sources changed. Returns `out`."""
    stamp = out / "built-from.txt"
    key = _grading_key(names)
    if stamp.is_file() and stamp.read_text() == key:
        return out
    what = "the graded assignments' exercises"
    _package(record_or_refuse(names, what, GRADING_SEED_OFFSET), out, what)
    stamp.write_text(key)
    return out


def _grading_key(names: list[str]) -> str:
    """What a grading copy is built from: the exercises, the seed offset, torch's version and a
    digest of gptlib's files (the check modules, the engine)."""
    digest = hashlib.sha256()
    for path in sorted((ROOT / "gptlib").rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            digest.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes())
    lines = [f"seed offset {GRADING_SEED_OFFSET}", f"torch {torch.__version__}",
             f"gptlib {digest.hexdigest()}", *sorted(names)]  # fmt: skip
    return "\n".join(lines) + "\n"


def recorded_names(package: Path) -> list[str]:
    """The exercises recorded in the copy of gptlib at `package` (none when there is none)."""
    recording = package / RECORDED
    if not recording.is_file():
        return []
    return [name for name in torch.load(recording, weights_only=False) if name in REGISTRY]


def record_or_refuse(names: list[str], what: str, seed_offset: int | None = None) -> bytes:
    """The recording of `names` (`record`), saved to bytes; ValueError naming `what` when an
    exercise cannot be recorded."""
    from gptlib.lessons.engine.checks.recorded import record

    unknown = [name for name in names if name not in REGISTRY]
    if unknown:
        raise ValueError(f"{what}: no exercise named {', '.join(unknown)} in gptlib")
    buffer = io.BytesIO()
    try:
        torch.save(record(names, seed_offset=seed_offset), buffer)
    except (AttributeError, TypeError, pickle.PicklingError) as exc:  # a local function
        raise ValueError(_NOT_RECORDABLE.format(names=what, why=exc)) from exc
    return buffer.getvalue()


def _package(recording: bytes, out: Path, what: str) -> Path:
    """A copy of gptlib at `out` that pip installs: each lesson's checks.py cut down to what
    `recording` loads by name (none where it loads nothing), `recording` as its recorded.pt, and
    the lessons' dependencies required (they are an extra in gptlib's own pyproject.toml).
    ValueError when a cut would ship an answer or its checks cannot be imported."""
    try:
        shipped = shipped_check_modules(recording)
    except NotShippable as exc:
        raise ValueError(_NOT_RECORDABLE.format(names=what, why=exc)) from exc
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    shutil.copyfile(ROOT / "README.md", out / "README.md")
    (out / "pyproject.toml").write_text(
        installable_pyproject((ROOT / "pyproject.toml").read_text())
    )
    lessons = ROOT / "gptlib" / "lessons"
    shutil.copytree(
        ROOT / "gptlib",
        out / "gptlib",
        ignore=lambda folder, names: [
            n
            for n in names
            if n == "__pycache__"
            or (
                n == "checks.py"
                and re.fullmatch(r"nb\d+", Path(folder).name)
                and Path(folder).parent == lessons
            )
            or (Path(folder) == ROOT / RECORDED.parent and n == RECORDED.name)
        ],
    )
    (out / RECORDED).write_bytes(recording)
    for module, source in shipped.items():
        (out / Path(*module.split("."))).with_suffix(".py").write_text(source, encoding="utf-8")
    loaded = subprocess.run(
        [sys.executable, "-c", "import gptlib.lessons.engine.checks"],
        capture_output=True, text=True, cwd=out, env={**os.environ, "PYTHONPATH": str(out)},
    )  # fmt: skip
    if loaded.returncode != 0:
        shutil.rmtree(out)
        why = (loaded.stderr.strip().splitlines() or ["no message"])[-1]
        raise ValueError(_NOT_RECORDABLE.format(names=what, why=why))
    return out


def installable_pyproject(text: str) -> str:
    """gptlib's pyproject.toml for a graded release: the `lessons` extra's packages become
    required, so that `pip install <release>/gptlib` alone gives a kernel that runs the
    lessons (package data, `recorded.pt` included, is declared in gptlib's own file)."""
    project = tomllib.loads(text)["project"]
    required = list(dict.fromkeys([*project["dependencies"],
                                   *project["optional-dependencies"]["lessons"]]))  # fmt: skip
    block = re.compile(r"^dependencies = \[\n(?:.*\n)*?\]\n", re.M)
    listed = "".join(f"    {json.dumps(dep)},\n" for dep in required)
    edited, count = block.subn(lambda _: f"dependencies = [\n{listed}]\n", text, count=1)
    if count != 1 or tomllib.loads(edited)["project"]["dependencies"] != required:
        raise RuntimeError("pyproject.toml's dependencies list is not where the release edits it")
    return edited


_NOT_RECORDABLE = (
    "{names} cannot be released graded yet: the recorded checks need every exercise's inputs "
    "and adapter defined at module level in its lesson's checks.py, without using a reference "
    "or a mistake ({why}). See docs/authoring.md, 'A graded release', or release without --graded"
)


def find_submissions(paths: list[Path], student: str | None = None) -> list[tuple[str, Path]]:
    """(student id, notebook) pairs from notebooks, student folders or folders of student folders.

    A folder with notebooks directly inside is one student's (id: `student` or the folder name);
    a folder without is a class, each subfolder one student (notebooks found at any depth, so
    nbgrader's own `submitted/<student>/<assignment>/` layout works too).
    """
    found = []
    for path in paths:
        if path.is_file() and path.suffix == ".ipynb":
            found.append((student or path.parent.name, path))
        elif path.is_dir() and any(path.glob("*.ipynb")):
            found += [(student or path.name, nb) for nb in sorted(path.glob("*.ipynb"))]
        elif path.is_dir():
            if student:
                raise ValueError(f"{path} holds one folder per student; drop --student {student}")
            for folder in sorted(p for p in path.iterdir() if p.is_dir()):
                notebooks = sorted(folder.rglob("*.ipynb"))
                found += [
                    (folder.name, nb) for nb in notebooks if ".ipynb_checkpoints" not in nb.parts
                ]
        else:
            raise ValueError(f"{path} is neither a notebook nor a folder")
    if not found:
        raise ValueError(f"no notebooks found in {', '.join(map(str, paths))}")
    seen: dict[tuple[str, str], Path] = {}
    for who, nb in found:
        first = seen.setdefault((who, nb.stem), nb)
        if first != nb:
            raise ValueError(f"{who} handed in {nb.stem} twice: {first} and {nb}; keep one")
    return found


def default_jobs() -> int:
    """The cores this process may run on: how many students `autograde` grades at once."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def grading_copy(course_dir: Path, assignments: list[str]) -> Path:
    """Build (or keep, when up to date) `<course-dir>/grading/gptlib`, the copy of gptlib the
    grader's kernels import, for the course's exercises in `assignments` and those it already
    holds; return it (the folder to put on the kernels' PYTHONPATH).
    Exercises a notebook registers itself (not gptlib's) are left to the notebook."""
    package = course_dir / "grading" / "gptlib"
    sources = [course_dir / "source" / a / f"{a}.ipynb" for a in assignments]
    wanted = [n for n in exercises_of([s for s in sources if s.is_file()]) if _course_exercise(n)]
    names = list(dict.fromkeys([*recorded_names(package), *wanted]))
    return grading_package(names, package)


def _course_exercise(name: str) -> bool:
    """Whether exercise `name` is one of gptlib's own (registered by its lessons), rather than
    one a notebook registers itself."""
    exercise = REGISTRY.get(name)
    make_inputs = getattr(exercise, "make_inputs", None)
    return getattr(make_inputs, "__module__", "").startswith("gptlib.")


def autograde(
    submissions: list[tuple[str, Path]], course_dir: Path = COURSE_DIR, jobs: int | None = None
) -> list[Score]:
    """Autograde each (student, notebook) against its released assignment; return the scores,
    in the order of `submissions`, of those graded. `jobs` students are graded at once (each in
    a process of its own; a student's notebooks one after the other; default: one per core),
    all into the one gradebook. A submission that is not a released notebook, or that nbgrader
    cannot grade, is named on stderr and left out; ValueError when nothing can be graded.

    The kernels import the grading copy of gptlib (`grading_copy`): the checks run on the
    visible and on hidden inputs, from recorded results, and no reference is there to call or
    to stand in for a wrong answer."""
    from nbgrader.api import Gradebook

    if jobs is None:
        jobs = default_jobs()
    if not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"jobs must be a positive int (processes grading at once), got {jobs!r}")
    released = {p.name for p in (course_dir / "source").glob("*") if p.is_dir()}
    gradable = [(student, path) for student, path in submissions if path.stem in released]
    unreleased = [
        f"{path}: {path.name} is not a released notebook (released: "
        f"{', '.join(sorted(released)) or 'none'}); name submissions like the notebooks, and run "
        "`release` first"
        for _, path in submissions
        if path.stem not in released
    ]
    if not gradable:
        raise ValueError("nothing to grade: " + "; ".join(unreleased))
    for reason in unreleased:
        print(f"skipped {reason}", file=sys.stderr)
    by_student: dict[str, list[Path]] = {}
    for student, path in gradable:
        target = course_dir / "submitted" / student / path.stem / path.name
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.resolve() != path.resolve():
            shutil.copyfile(path, target)
        by_student.setdefault(student, []).append(path)
    grading = grading_copy(course_dir, sorted({path.stem for _, path in gradable}))
    api = _api(course_dir)
    with (
        _nbgrader_environment(),
        Gradebook(api.coursedir.db_url, api.coursedir.course_id) as gradebook,
    ):
        for student in by_student:  # before the processes start: none of them adds a student
            gradebook.update_or_create_student(student)
    work = [(course_dir, student, paths, grading) for student, paths in by_student.items()]
    if jobs == 1 or len(work) == 1:
        graded = [_autograde_student(*item) for item in work]
    else:
        with (
            _nbgrader_environment(grading),
            ProcessPoolExecutor(min(jobs, len(work))) as pool,
        ):
            graded = list(pool.map(_autograde_student, *zip(*work, strict=True)))
    scores = {}
    for student_scores, problems in graded:
        scores |= {(s.student, s.notebook): s for s in student_scores}
        for path, why in problems:
            print(f"skipped {path}: {why}", file=sys.stderr)
    return [scores[key] for student, path in gradable if (key := (student, path.stem)) in scores]


def _autograde_student(
    course_dir: Path, student: str, paths: list[Path], grading: Path
) -> tuple[list[Score], list[tuple[Path, str]]]:
    """Autograde one student's notebooks, one after the other (one process of `autograde`), in
    kernels that import the grading copy of gptlib under `grading`. Returns the scores, and
    each notebook nbgrader could not grade with why."""
    from nbgrader.api import Gradebook

    api = _api(course_dir)
    scores, problems = [], []
    with _nbgrader_environment(grading):
        for path in paths:
            try:
                _run(
                    api.autograde(path.stem, student, force=True, create=True), f"autograde {path}"
                )
            except RuntimeError as error:  # the rest of the class is still graded
                said = [line.strip() for line in str(error).splitlines() if line.strip()]
                problems.append((path, f"nbgrader could not grade it ({said[-1]})"))
                continue
            with Gradebook(api.coursedir.db_url, api.coursedir.course_id) as gradebook:
                graded = gradebook.find_submission_notebook(path.stem, path.stem, student)
                score, max_score = graded.score, graded.max_score
            autograded = course_dir / "autograded" / student / path.stem / path.name
            scores.append(Score(student, path.stem, score, max_score, failed_checks(autograded)))
    return scores, problems


_CHECK_CALL = re.compile(r"""\bcheck\(\s*["']([^"']+)["']""")


@dataclass(frozen=True)
class CheckResult:
    """One graded check cell of an autograded notebook and what its check said."""

    grade_id: str
    outcome: Outcome


def _stream(cell, name: str) -> str:
    return "".join(o.text for o in cell.outputs if o.output_type == "stream" and o.name == name)


def cell_outcome(cell) -> Outcome:
    """What a graded check cell reported, read from its outputs (see gptlib's `outcomes`)."""
    called = _CHECK_CALL.search(cell.source)
    exercise = called.group(1) if called else cell.metadata["nbgrader"]["grade_id"]
    for output in cell.outputs:
        if output.output_type == "error":
            return Outcome(
                exercise, UNEXPLAINED, f"the check cell raised {output.ename}: {output.evalue}"
            )
    stderr = _stream(cell, "stderr")
    reported = outcome_from_outputs(cell.outputs)
    if reported is None:
        return Outcome(exercise, UNEXPLAINED, "the check cell printed no result")
    if reported.status == PASSED and stderr.strip():
        first = stderr.strip().splitlines()[0]
        return Outcome(exercise, UNEXPLAINED, f"passed, but the cell wrote to stderr: {first}")
    return reported


def check_results(path: Path, points: dict[str, tuple[float, float]]) -> list[CheckResult]:
    """The graded check cells of an autograded notebook, with (points, max) from `points`
    (grade id → gradebook score): a cell with full points counts as passed whatever it printed,
    so the report always agrees with the grades."""
    nb = nbformat.read(path, as_version=4)
    results = []
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type != "code" or not meta.get("grade") or not _CHECK_CALL.search(cell.source):
            continue
        got, most = points.get(meta["grade_id"], (0.0, float(meta.get("points", 0))))
        outcome = cell_outcome(cell)
        if got >= most > 0 and outcome.status != PASSED:
            outcome = Outcome(outcome.exercise, PASSED)
        results.append(CheckResult(meta["grade_id"], outcome))
    return results


def describe_outcome(outcome: Outcome) -> str:
    if outcome.status == NOT_IMPLEMENTED:
        return f"{outcome.exercise}: not implemented yet"
    if outcome.status == MISTAKE:
        return f"{outcome.exercise}: {outcome.message} (misconception: {outcome.mistake})"
    return f"{outcome.exercise}: {outcome.message}"


def failed_checks(path: Path) -> tuple[str, ...]:
    """`grade_id: exercise: message` for each check cell of an autograded notebook that did not
    pass (judged from its outputs, as nbgrader does: an error or any stderr)."""
    nb = nbformat.read(path, as_version=4)
    failures = []
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type != "code" or not meta.get("grade"):
            continue
        failed = any(
            o.output_type == "error" or (o.output_type == "stream" and o.name == "stderr")
            for o in cell.outputs
        )
        if failed:
            failures.append(f"{meta['grade_id']}: {describe_outcome(cell_outcome(cell))}")
    return tuple(failures)


def format_scores(scores: list[Score]) -> str:
    lines = []
    for s in scores:
        lines.append(f"{s.student:16s} {s.notebook:32s} {s.score:zg} / {s.max_score:zg}")
        lines += [f"    ✘ {failure}" for failure in s.failures]
    return "\n".join(lines)


# --- the class report ------------------------------------------------------------------------


@dataclass(frozen=True)
class Graded:
    """One student's autograded submission of one assignment."""

    student: str
    score: float
    max_score: float
    results: tuple[CheckResult, ...]


def label(outcome: Outcome) -> str:
    """The short word for an outcome in the report: passed, not implemented, the
    misconception's name, or unexplained."""
    return outcome.mistake if outcome.status == MISTAKE else outcome.status


def graded_submissions(assignment: str, course_dir: Path = COURSE_DIR) -> list[Graded]:
    """Every autograded submission of `assignment`, with scores from the gradebook."""
    from nbgrader.api import Gradebook, MissingEntry

    api = _api(course_dir)
    found = []
    with _nbgrader_environment(), Gradebook(api.coursedir.db_url, api.coursedir.course_id) as gb:
        try:
            submissions = gb.assignment_submissions(assignment)
        except MissingEntry:
            submissions = []
        for submission in sorted(submissions, key=lambda s: s.student.id):
            student, results, score, max_score = submission.student.id, [], 0.0, 0.0
            for notebook in submission.notebooks:
                path = course_dir / "autograded" / student / assignment / f"{notebook.name}.ipynb"
                if not path.is_file():
                    continue
                points = {g.name: (float(g.score), float(g.max_score)) for g in notebook.grades}
                results += check_results(path, points)
                score += float(notebook.score)
                max_score += float(notebook.max_score)
            if results:
                found.append(Graded(student, score, max_score, tuple(results)))
    return found


def graded_assignments(course_dir: Path = COURSE_DIR) -> list[str]:
    """Names of the assignments that have autograded submissions."""
    autograded = course_dir / "autograded"
    if not autograded.is_dir():
        return []
    return sorted({p.parent.name for p in autograded.glob("*/*/*.ipynb")})


@dataclass(frozen=True)
class Tally:
    """How many students reached one outcome of one exercise (a row of misconceptions.csv)."""

    exercise: str
    outcome: str
    mistake: str
    students: tuple[str, ...]
    message: str


def _who(outcomes: dict[str, Outcome], status: str, mistake: str | None = None) -> tuple:
    return tuple(s for s, o in outcomes.items() if o.status == status and o.mistake == mistake)


def tally(graded: list[Graded]) -> list[Tally]:
    """Per exercise (in notebook order): passed, not implemented, every catalogued mistake
    (registered ones even when nobody made them; most frequent first), and unexplained, with
    who and why."""
    exercises = list(dict.fromkeys(r.outcome.exercise for g in graded for r in g.results))
    rows = []
    for exercise in exercises:
        outcomes = {
            g.student: r.outcome
            for g in graded
            for r in g.results
            if r.outcome.exercise == exercise
        }
        catalogue = {m.name: m.message for m in getattr(REGISTRY.get(exercise), "mistakes", ())}
        said: dict[str, dict[str, None]] = {}  # outcomes no catalogue names: what each student read
        for o in outcomes.values():
            if o.status == MISTAKE and o.mistake not in catalogue:
                said.setdefault(o.mistake, {})[o.message] = None
        catalogue |= {name: " | ".join(messages) for name, messages in said.items()}
        made = {name: _who(outcomes, MISTAKE, name) for name in catalogue}
        unexplained = _who(outcomes, UNEXPLAINED)
        reasons = " | ".join(dict.fromkeys(outcomes[s].message for s in unexplained))
        rows.append(Tally(exercise, PASSED, "", _who(outcomes, PASSED), ""))
        rows.append(Tally(exercise, NOT_IMPLEMENTED, "", _who(outcomes, NOT_IMPLEMENTED), ""))
        rows += [
            Tally(exercise, MISTAKE, name, made[name], catalogue[name])
            for name in sorted(catalogue, key=lambda name: -len(made[name]))
        ]
        rows.append(Tally(exercise, UNEXPLAINED, "", unexplained, reasons))
    return rows


def write_report(assignment: str, graded: list[Graded], out_dir: Path) -> list[Path]:
    """scores.csv, misconceptions.csv and misconceptions.png for one assignment."""
    if not graded:
        raise ValueError(f"{assignment} has no autograded submissions; run `autograde` first")
    out_dir.mkdir(parents=True, exist_ok=True)
    exercises = list(dict.fromkeys(r.outcome.exercise for g in graded for r in g.results))
    scores_csv = out_dir / "scores.csv"
    with scores_csv.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["student", "score", "max_score", *exercises])
        for g in graded:
            by_exercise = {r.outcome.exercise: label(r.outcome) for r in g.results}
            row = [g.student, f"{g.score:zg}", f"{g.max_score:zg}"]
            writer.writerow(row + [by_exercise.get(e, "") for e in exercises])
    rows = tally(graded)
    tally_csv = out_dir / "misconceptions.csv"
    with tally_csv.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["exercise", "outcome", "mistake", "students", "share", "who", "message"])
        for row in rows:
            share = f"{len(row.students) / len(graded):z.2f}"
            who = ";".join(row.students)
            writer.writerow(
                [row.exercise, row.outcome, row.mistake, len(row.students), share, who, row.message]
            )
    figure = out_dir / "misconceptions.png"
    plot_report(assignment, rows, len(graded), figure)
    return [scores_csv, tally_csv, figure]


_COLOURS = {
    PASSED: "#2e7d32",
    NOT_IMPLEMENTED: "#9e9e9e",
    MISTAKE: "#ef6c00",
    UNEXPLAINED: "#c62828",
}


_BAR_ORDER = {PASSED: 0, MISTAKE: 1, UNEXPLAINED: 2, NOT_IMPLEMENTED: 3}


def _bar_label(row: Tally) -> str:
    return {MISTAKE: row.mistake, UNEXPLAINED: "wrong, not catalogued"}.get(
        row.outcome, row.outcome
    )


def plot_report(assignment: str, rows: list[Tally], n_students: int, path: Path) -> None:
    """One horizontal bar chart per exercise: passed, each misconception seen (most frequent
    first), wrong otherwise, not implemented; sized and lettered for a slide."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    exercises = list(dict.fromkeys(r.exercise for r in rows))
    shown = {
        e: sorted(
            (
                r
                for r in rows
                if r.exercise == e and (r.students or r.outcome in (PASSED, NOT_IMPLEMENTED))
            ),
            key=lambda r: _BAR_ORDER[r.outcome],
        )
        for e in exercises
    }
    columns = 1 if len(exercises) == 1 else 2
    grid_rows = -(-len(exercises) // columns)
    tallest = max(len(bars) for bars in shown.values())
    height = 1.2 + grid_rows * (0.9 + 0.45 * tallest)
    fig, axes = plt.subplots(grid_rows, columns, figsize=(13.33, max(height, 4.0)), squeeze=False)
    fig.set_layout_engine("constrained", w_pad=0.25, h_pad=0.2, wspace=0.08)
    for ax in axes.flat[len(exercises) :]:
        ax.axis("off")
    for ax, exercise in zip(axes.flat, exercises, strict=False):
        bars = shown[exercise]
        counts = [len(r.students) for r in bars]
        positions = list(range(len(bars)))
        ax.barh(positions, counts, color=[_COLOURS[r.outcome] for r in bars], height=0.7)
        ax.set_yticks(positions, [_bar_label(r) for r in bars], fontsize=13)
        ax.set_ylim(tallest - 0.5, -0.5)  # the same bar height in every panel, first on top
        for y, count in zip(positions, counts, strict=True):
            ax.text(count + n_students * 0.01, y, str(count), va="center", fontsize=13)
        passed = counts[0]
        ax.set_title(f"{exercise}: {passed} of {n_students} passed", fontsize=15, loc="left")
        ax.set_xlim(0, n_students * 1.08)
        ax.xaxis.get_major_locator().set_params(integer=True)
        ax.tick_params(axis="x", labelsize=12)
        ax.set_xlabel("students", fontsize=13)
        ax.spines[["top", "right"]].set_visible(False)
    fig.suptitle(f"{assignment}: what {n_students} students' answers show", fontsize=17)
    fig.savefig(path, dpi=150)
    plt.close(fig)


def report(
    assignments: list[str], course_dir: Path = COURSE_DIR, out_dir: Path | None = None
) -> list[Path]:
    """Write the report of each assignment under `out_dir` (default `<course-dir>/reports`)."""
    out_dir = out_dir or course_dir / "reports"
    written = []
    for assignment in assignments:
        graded = graded_submissions(assignment, course_dir)
        written += write_report(assignment, graded, out_dir / assignment)
    return written


def feedback(assignments: list[str], course_dir: Path = COURSE_DIR) -> list[Path]:
    """nbgrader's HTML feedback for every autograded submission of each assignment."""
    api = _api(course_dir)
    written = []
    with _nbgrader_environment():
        for assignment in assignments:
            if not any((course_dir / "autograded").glob(f"*/{assignment}/*.ipynb")):
                raise ValueError(
                    f"{assignment} has no autograded submissions; run `autograde` first"
                )
            _run(api.generate_feedback(assignment, force=True), f"generate_feedback {assignment}")
            written += sorted((course_dir / "feedback").glob(f"*/{assignment}/*.html"))
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--course-dir", type=Path, default=COURSE_DIR, help="nbgrader course directory"
    )
    commands = parser.add_subparsers(dest="command", required=True)
    release_cmd = commands.add_parser(
        "release", parents=[common], help="generate the student versions"
    )
    release_cmd.add_argument(
        "notebooks", nargs="*", type=Path, help="default: notebooks/*.ipynb with exercises"
    )
    release_cmd.add_argument(
        "--graded",
        action="store_true",
        help="also build <course-dir>/release/gptlib, the copy of gptlib without the reference "
        "solutions that the students install for a graded assignment",
    )
    grade_cmd = commands.add_parser(
        "autograde", parents=[common], help="grade submissions and print the scores"
    )
    grade_cmd.add_argument(
        "submissions",
        nargs="+",
        type=Path,
        help="a student's folder, a notebook, or a folder with one folder per student",
    )
    grade_cmd.add_argument("--student", help="student id (default: the folder's name)")
    grade_cmd.add_argument(
        "--jobs",
        "-j",
        type=int,
        default=None,
        help="students graded at once, each in its own process (default: one per core)",
    )
    report_cmd = commands.add_parser(
        "report", parents=[common], help="per assignment: scores and misconceptions (CSV, figure)"
    )
    report_cmd.add_argument("assignments", nargs="*", help="default: every graded assignment")
    report_cmd.add_argument("--out", type=Path, help="default: <course-dir>/reports")
    feedback_cmd = commands.add_parser(
        "feedback", parents=[common], help="nbgrader's HTML feedback for every graded submission"
    )
    feedback_cmd.add_argument("assignments", nargs="*", help="default: every graded assignment")
    args = parser.parse_args(argv)

    try:
        if args.command == "release":
            notebooks = args.notebooks or [
                p for p in sorted(NOTEBOOKS.glob("*.ipynb")) if has_exercises(p)
            ]
            if not notebooks:
                parser.error(f"no notebook in {NOTEBOOKS} holds nbgrader exercises")
            for path in release(notebooks, args.course_dir):
                print(f"released {path}")
            if args.graded:
                package = student_package(notebooks, args.course_dir / "release" / "gptlib")
                print(f"built {package}: pip install it where the students work")
        elif args.command == "autograde":
            submissions = find_submissions(args.submissions, args.student)
            print(format_scores(autograde(submissions, args.course_dir, args.jobs)))
        else:
            assignments = args.assignments or graded_assignments(args.course_dir)
            if not assignments:
                raise ValueError(f"nothing is autograded in {args.course_dir}; run `autograde`")
            if args.command == "report":
                written = report(assignments, args.course_dir, args.out)
            else:
                written = feedback(assignments, args.course_dir)
            for path in written:
                print(f"wrote {path}")
    except (ValueError, RuntimeError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
