"""The workbook: the student edition of the course, generated from the solved notebooks.

    python scripts/editions.py build     # notebooks/ -> workbook/ (make notebooks runs it)
    python scripts/editions.py check     # exit status 1 when workbook/ is not what build writes
    python scripts/editions.py open      # copy the workbook into my-work/ (make lab runs it)

The solved notebooks (`notebooks/`) are the source: they hold the solutions, the stored outputs
nbval tests, and the guard cells (tag `guard`) whose assertions protect the lesson's results.
`build` writes one workbook per lesson 00-09 into `workbook/`, through the chain of notebook
preprocessors `STUDENT_EDITION`, which nbgrader's generate_assignment also runs for the classroom
(`classroom/nbgrader_config.py`), so the two student versions are made the same way: ours leave
out the solved edition's own cells (guards and the course's committed answers) and its nbval
tags and say in the prose what the workbook holds; nbgrader's `ClearSolutions` turns each
solution region (between `### BEGIN SOLUTION` and `### END SOLUTION`) into
`raise NotImplementedError()` and its `ClearOutput` clears every output (predictions are
unanswered, figures appear only when the student runs the cell). The workbook then gets a first
code cell that installs gptlib where it is missing (Colab) and, in a lesson with exercises, a
last section that shows the lesson's part of the student's own record (`record_cells`; the
classroom's version has none, so no record travels in a submission). Never edit `workbook/` by
hand:
`tests/test_workbook.py` fails when it differs from what `build` writes.

`open` is the student's side. It copies each workbook into `my-work/` (ignored by git) when it
is not there yet, and never overwrites a copy the student has changed. When the course's
workbook changed since the copy was made (after `git pull`, say), an untouched copy is replaced
by the new version, and an edited one is kept: the new version lands beside it as
`NN_name.new.ipynb`. Every such action is printed. `my-work/.workbook.json` records the version
each copy came from.
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import re
import shutil
import sys
from pathlib import Path

import nbformat
import yaml
from nbgrader.preprocessors import ClearOutput, ClearSolutions, NbGraderPreprocessor

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
WORKBOOK = ROOT / "workbook"
MY_WORK = ROOT / "my-work"
STATE = ".workbook.json"
CONFIG = ROOT / "book" / "_config.yml"
GUARD_TAG = "guard"
# A cell that commits the course's own answer to a "Check your understanding" question
# (`question.commit("...")`): the solved edition shows the answer; the workbook's student answers.
ANSWER_TAG = "answer"
SOLVED_ONLY_TAGS = {GUARD_TAG, ANSWER_TAG}
LESSON = re.compile(r"0\d_[a-z0-9_]+\.ipynb")
BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"


def lessons(folder: Path = NOTEBOOKS) -> list[Path]:
    """The numbered lessons 00-09 of `folder` (10, the maintainers' appendix, has no workbook)."""
    return sorted(p for p in folder.glob("*.ipynb") if LESSON.fullmatch(p.name))


def repository_url(config: Path = CONFIG) -> str:
    """The course's public address (book/_config.yml repository.url; '' when not set)."""
    return (yaml.safe_load(config.read_text()).get("repository") or {}).get("url") or ""


def setup_source(repo_url: str) -> str:
    """The workbook's first code cell: install gptlib where it is missing, as on Colab."""
    header = "# Setup: does nothing where gptlib is installed (make lab, Binder); for Colab.\n"
    if not repo_url:
        return header + (
            "import importlib.util\n\n"
            'if importlib.util.find_spec("gptlib") is None:\n'
            "    raise ModuleNotFoundError(\n"
            '        "gptlib is not installed: in a clone of the course run make lab, "\n'
            '        "or pip install -e . in its folder"\n'
            "    )"
        )
    return header + (
        "import importlib.util\nimport subprocess\nimport sys\n\n"
        'if importlib.util.find_spec("gptlib") is None:\n'
        f'    package = "gptlib[lessons] @ git+{repo_url}"\n'
        '    subprocess.run([sys.executable, "-m", "pip", "install", "-q", package], check=True)'
    )


def record_cells(name: str) -> list[nbformat.NotebookNode]:
    """The workbook's last section in lesson `name` ('02_x.ipynb'): the lesson's part of the
    student's record (gptlib.lessons.engine.record), which the checks keep in my-work/."""
    number = name[:2]
    text = (
        "## Your record\n\n"
        "Each check you ran in this lesson is in your record: which exercises you solved, at "
        "which try, which misconceptions your wrong tries showed, and the section to revisit "
        "for each. It is kept on your machine only, in `.gptlib-record.jsonl` beside your copies "
        "of the workbook in `my-work/` (the folder `make lab` makes), and survives a restart of "
        "the kernel. Run outside that folder, the cell below says so. `show()` with no lesson "
        "shows the whole course, as does the last section of notebook 00."
    )
    code = f'from gptlib.lessons.engine.record import show\n\nshow("{number}")'
    return [nbformat.v4.new_markdown_cell(text), nbformat.v4.new_code_cell(code)]


def has_checks(nb: nbformat.NotebookNode) -> bool:
    """Whether a lesson has graded checks (nbgrader's `grade`), the cells that feed the record."""
    return any(c.metadata.get("nbgrader", {}).get("grade") for c in nb.cells)


def is_guard(cell: nbformat.NotebookNode) -> bool:
    """A guard cell: the assertions that protect the lesson cell above it (solved edition only)."""
    return GUARD_TAG in cell.metadata.get("tags", [])


def is_solved_only(cell: nbformat.NotebookNode) -> bool:
    """A cell of the solved edition only: a guard (the assertions that protect the lesson cell
    above it) or the course's committed answer to a question."""
    return not SOLVED_ONLY_TAGS.isdisjoint(cell.metadata.get("tags", []))


def without_guards(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """A copy of `nb` without its solved-only cells (guards and committed answers)."""
    nb = copy.deepcopy(nb)
    nb.cells = [cell for cell in nb.cells if not is_solved_only(cell)]
    return nb


class DropSolvedOnly(NbGraderPreprocessor):
    """Leave out the cells of the solved edition only: guards and the course's committed
    answers (`is_solved_only`)."""

    def preprocess(self, nb, resources):
        nb.cells = [cell for cell in nb.cells if not is_solved_only(cell)]
        return nb, resources


class StudentText(NbGraderPreprocessor):
    """No nbval tags in a student edition: they are the tests' markers, not the student's."""

    def preprocess_cell(self, cell, resources, index):
        kept = [t for t in cell.metadata.get("tags", []) if not t.startswith("nbval")]
        if kept:
            cell.metadata["tags"] = kept
        else:
            cell.metadata.pop("tags", None)
        return cell, resources


# The student edition, one preprocessor after the other; nbgrader's generate_assignment runs the
# same ones among its own (classroom/nbgrader_config.py).
STUDENT_EDITION = (DropSolvedOnly, StudentText, ClearSolutions, ClearOutput)


def student_edition(nb: nbformat.NotebookNode, name: str, repo_url: str) -> nbformat.NotebookNode:
    """The workbook of one solved notebook `name` (a file name such as '02_x.ipynb')."""
    nb, resources = copy.deepcopy(nb), {}
    for preprocessor in STUDENT_EDITION:
        nb, resources = preprocessor()(nb, resources)  # as nbgrader runs them
    cells = nb.cells
    if not cells or cells[0].cell_type != "markdown":
        raise ValueError(f"{name}: a lesson opens with its title in markdown")
    cells[0].source += (
        f"\n\n*Workbook edition: the exercises are yours to solve and every cell's output appears "
        f"when you run it. The solved edition, with outputs, is `notebooks/{name}`.*"
    )
    cells.insert(1, nbformat.v4.new_code_cell(setup_source(repo_url)))
    if has_checks(nb):
        cells += record_cells(name)
    for cell in cells:
        cell.pop("id", None)
    return nb


def serialise(nb: nbformat.NotebookNode) -> str:
    """The notebook's file text, written the way the committed notebooks are."""
    return json.dumps(nb, indent=1, ensure_ascii=False, sort_keys=True) + "\n"


def editions(sources: Path = NOTEBOOKS, repo_url: str | None = None) -> dict[str, str]:
    """{file name: workbook file text} for every lesson in `sources`."""
    url = repository_url() if repo_url is None else repo_url
    return {
        p.name: serialise(student_edition(nbformat.read(p, as_version=4), p.name, url))
        for p in lessons(sources)
    }


def build(sources: Path = NOTEBOOKS, out: Path = WORKBOOK) -> list[Path]:
    """Write the workbooks into `out` (stale ones removed); return the paths written."""
    texts = editions(sources)
    out.mkdir(exist_ok=True)
    for stale in set(p.name for p in out.glob("*.ipynb")) - set(texts):
        (out / stale).unlink()
    for name, text in texts.items():
        (out / name).write_text(text, encoding="utf-8")
    return [out / name for name in texts]


def out_of_date(sources: Path = NOTEBOOKS, out: Path = WORKBOOK) -> list[str]:
    """The workbook files that `build` would change, add or remove."""
    texts = editions(sources)
    present = {p.name for p in out.glob("*.ipynb")}
    stale = sorted(present - set(texts))
    changed = [
        n for n in texts if not (out / n).is_file() or (out / n).read_text("utf-8") != texts[n]
    ]
    return sorted(changed + stale)


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def open_workbook(source: Path = WORKBOOK, work: Path = MY_WORK) -> list[str]:
    """Bring the student's folder `work` up to the course's workbook; return what was done.

    Never overwrites a copy the student changed: see the module docstring.
    """
    if not lessons(source):
        raise ValueError(f"{source} holds no workbook; run `python scripts/editions.py build`")
    work.mkdir(exist_ok=True)
    state_file = work / STATE
    state = json.loads(state_file.read_text()) if state_file.is_file() else {}
    done = []
    for path in lessons(source):
        mine, new = work / path.name, _digest(path)
        if not mine.is_file():
            shutil.copyfile(path, mine)
            done.append(f"copied {path.name}")
        elif state.get(path.name) == new:
            continue
        elif state.get(path.name) == _digest(mine):
            shutil.copyfile(path, mine)
            done.append(f"updated {path.name} to the course's new version (you had not changed it)")
        else:
            beside = mine.with_suffix(".new.ipynb")
            shutil.copyfile(path, beside)
            done.append(
                f"kept your {path.name}: the course changed it, and its new version is "
                f"{beside.name} beside yours"
            )
        state[path.name] = new
    state_file.write_text(json.dumps(state, indent=1, sort_keys=True) + "\n")
    return done


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("command", choices=["build", "check", "open"])
    args = parser.parse_args(argv)
    if args.command == "build":
        for path in build():
            print(f"wrote {path.relative_to(ROOT)}")
    elif args.command == "check":
        stale = out_of_date()
        if stale:
            print(f"workbook/ is out of date ({', '.join(stale)}): run make notebooks")
            return 1
        print(f"workbook/ is up to date ({len(lessons(WORKBOOK))} notebooks)")
    else:
        for line in open_workbook():
            print(f"my-work/: {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
