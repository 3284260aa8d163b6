"""Classroom versions of the notebooks with nbgrader: release student copies, grade submissions.

    python scripts/classroom.py release                      # every notebook that has exercises
    python scripts/classroom.py release notebooks/02_*.ipynb
    python scripts/classroom.py autograde SUBMISSION [SUBMISSION ...]
    python scripts/classroom.py autograde --course-dir DIR ... # another course directory

The tracked notebooks (solutions included) are the source. `release` copies each notebook into
the course directory (default `classroom/`) as `source/<name>/<name>.ipynb`, one assignment per
notebook, and runs nbgrader's generate_assignment: the student version, every solution replaced
by `raise NotImplementedError()` and every output cleared, lands in `release/<name>/<name>.ipynb`.

`autograde` takes a student's folder of notebooks (the student id is the folder name, or
`--student`), a single notebook, or a folder of such student folders. It copies each notebook
to `submitted/<student>/<name>/`, runs nbgrader's autograde (the check cells are restored from
the gradebook first, so edited checks do not count) and prints each notebook's score with the
message of every failed check. Grades are kept in `<course-dir>/gradebook.db`.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import sys
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import nbformat

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
def _nbgrader_environment() -> Iterator[None]:
    """Let the kernels nbgrader starts import gptlib, let nbgrader find its `alembic` tool (it
    runs the executable from PATH, which lacks the environment's bin/ when not activated), and
    silence the SQLAlchemy warnings nbgrader's gradebook raises on every submission."""
    from sqlalchemy.exc import SAWarning

    before = {key: os.environ.get(key) for key in ("PYTHONPATH", "PATH")}
    additions = {"PYTHONPATH": str(ROOT), "PATH": str(Path(sys.executable).parent)}
    for key, first in additions.items():
        os.environ[key] = os.pathsep.join(p for p in (first, before[key]) if p)
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


def autograde(submissions: list[tuple[str, Path]], course_dir: Path = COURSE_DIR) -> list[Score]:
    """Autograde each (student, notebook) against its released assignment; return the scores."""
    from nbgrader.api import Gradebook

    released = {p.name for p in (course_dir / "source").glob("*") if p.is_dir()}
    for _, path in submissions:
        if path.stem not in released:
            raise ValueError(
                f"{path.name} is not a released notebook (released: {sorted(released) or 'none'});"
                " name submissions like the notebooks, and run `release` first"
            )
    for student, path in submissions:
        target = course_dir / "submitted" / student / path.stem / path.name
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.resolve() != path.resolve():
            shutil.copyfile(path, target)
    api = _api(course_dir)
    scores = []
    with _nbgrader_environment():
        for student, path in submissions:
            _run(api.autograde(path.stem, student, force=True, create=True), f"autograde {path}")
            with Gradebook(api.coursedir.db_url, api.coursedir.course_id) as gradebook:
                graded = gradebook.find_submission_notebook(path.stem, path.stem, student)
                score, max_score = graded.score, graded.max_score
            autograded = course_dir / "autograded" / student / path.stem / path.name
            scores.append(Score(student, path.stem, score, max_score, failed_checks(autograded)))
    return scores


def failed_checks(path: Path) -> tuple[str, ...]:
    """`grade_id: Error: message` for each graded cell of an autograded notebook that failed."""
    nb = nbformat.read(path, as_version=4)
    failures = []
    for cell in nb.cells:
        if not cell.metadata.get("nbgrader", {}).get("grade") or cell.cell_type != "code":
            continue
        for output in cell.outputs:
            if output.output_type == "error":
                grade_id = cell.metadata["nbgrader"]["grade_id"]
                failures.append(f"{grade_id}: {output.ename}: {output.evalue}")
    return tuple(failures)


def format_scores(scores: list[Score]) -> str:
    lines = []
    for s in scores:
        lines.append(f"{s.student:16s} {s.notebook:32s} {s.score:g} / {s.max_score:g}")
        lines += [f"    ✘ {failure}" for failure in s.failures]
    return "\n".join(lines)


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
        else:
            submissions = find_submissions(args.submissions, args.student)
            print(format_scores(autograde(submissions, args.course_dir)))
    except (ValueError, RuntimeError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
