"""The course as the website shows it: its notebooks, what each teaches, how long each runs.

Everything is read at build time: the notebooks are the files `notebooks/NN_*.ipynb` (so a
renumbered or added notebook needs no edit here), a notebook's title is its first heading and
what it teaches is the plan its opening cell lays out, and the run times come from
`notebooks/timings.json`, which `scripts/run_notebooks.py` writes when it executes the notebooks.
The guides are docs/*.md and the notebooks kept with them (docs/*.ipynb: the maintainers'
docs/under_the_hood.ipynb), pages of the site that are not part of the numbered course.
`landing_page` and `table_of_contents` turn these into the book's `index.md` and `_toc.yml`.
"""

from __future__ import annotations

import importlib.util
import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import nbformat
from markdown_it import MarkdownIt

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK_GLOB = "notebooks/[0-9][0-9]_*.ipynb"
TIMINGS = "notebooks/timings.json"
# Guides in this order first, then any other docs/*.md and docs/*.ipynb by name (the lessons'
# experiment cards, docs/experiments/nbNN.md, among them: the notebooks link to them).
GUIDES_FIRST = ("docs/classroom.md", "docs/claims.md")
GUIDE_GLOBS = ("docs/*.md", "docs/*.ipynb", "docs/experiments/*.md")
UNDER_THE_HOOD = "docs/under_the_hood.ipynb"
_NUMBER_PREFIX = re.compile(r"^\d\d\s*[·:.\-–—]\s*")


@cache
def _run_notebooks_module():
    """scripts/run_notebooks.py, which writes the timings (one definition of the code digest)."""
    spec = importlib.util.spec_from_file_location(
        "run_notebooks", ROOT / "scripts" / "run_notebooks.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@dataclass(frozen=True)
class Timing:
    """One measured run of a notebook, as recorded in notebooks/timings.json."""

    seconds: float
    measured: str
    machine: str
    current: bool  # False when the notebook's code changed after this measurement


@dataclass(frozen=True)
class Notebook:
    """One notebook of the course. `path` is relative to the repository root."""

    path: str
    title: str
    summary: str  # markdown, from the notebook's opening cell
    timing: Timing | None

    @property
    def number(self) -> str:
        return Path(self.path).name[:2]

    @property
    def docname(self) -> str:
        """The page's name in the book: the path without '.ipynb'."""
        return self.path.removesuffix(".ipynb")


def title_of(opening: str, path: str) -> str:
    """The first '# heading' of the opening cell, without its 'NN ·' prefix."""
    for line in opening.splitlines():
        if line.startswith("# "):
            return _NUMBER_PREFIX.sub("", line[2:].strip())
    raise ValueError(f"{path}: the first cell has no '# title' line; start the notebook with one")


def summary_of(opening: str) -> str:
    """What the notebook teaches, in the words of its opening cell (markdown).

    The first list of the cell with the sentence that leads into it ("In this notebook you
    will:"), or the first paragraph after the title when the cell has no list.
    """
    lines = opening.splitlines()
    blocks = [t for t in MarkdownIt("commonmark").parse(opening) if t.level == 0 and t.map]
    kinds = [t.type for t in blocks]
    for i, kind in enumerate(kinds):
        if kind in ("bullet_list_open", "ordered_list_open"):
            start, end = blocks[i].map
            items = "\n".join(lines[start:end]).strip()
            lead = ""
            if i and kinds[i - 1] == "paragraph_open":
                previous = " ".join(lines[slice(*blocks[i - 1].map)]).strip()
                lead = re.split(r"(?<=[.!?])\s+(?=[A-Z*_`])", previous)[-1]
            return f"{lead}\n\n{items}" if lead else items
    for block in blocks:
        if block.type == "paragraph_open":
            return "\n".join(lines[slice(*block.map)]).strip()
    return ""


def load_timings(root: Path = ROOT) -> dict:
    path = root / TIMINGS
    return json.loads(path.read_text())["notebooks"] if path.exists() else {}


def read_notebook(path: Path, timings: dict, root: Path = ROOT) -> Notebook:
    nb = nbformat.read(path, as_version=4)
    first = nb.cells[0] if nb.cells else None
    if first is None or first.cell_type != "markdown":
        raise ValueError(f"{path}: the first cell must be markdown with the notebook's title")
    entry = timings.get(path.name)
    timing = None
    if entry:
        digest = _run_notebooks_module().code_digest(nb)
        timing = Timing(
            entry["seconds"], entry["measured"], entry["machine"], entry["code_sha256"] == digest
        )
    return Notebook(
        path.relative_to(root).as_posix(),
        title_of(first.source, str(path)),
        summary_of(first.source),
        timing,
    )


def notebooks(root: Path = ROOT) -> list[Notebook]:
    """Every notebooks/NN_*.ipynb, in order."""
    paths = sorted(root.glob(NOTEBOOK_GLOB))
    if not paths:
        raise ValueError(f"no {NOTEBOOK_GLOB} under {root}")
    timings = load_timings(root)
    return [read_notebook(path, timings, root) for path in paths]


def guides(root: Path = ROOT) -> list[str]:
    """docs/*.md, docs/*.ipynb and docs/experiments/*.md, relative to root: the instructors'
    guide and claims ledger first, then the others by name."""
    present = {p.relative_to(root).as_posix() for g in GUIDE_GLOBS for p in root.glob(g)}
    first = [g for g in GUIDES_FIRST if g in present]
    return first + sorted(present - set(first))


def format_seconds(seconds: float) -> str:
    """12.3 -> '12 s'; 75 -> '1 min 15 s'."""
    whole = round(seconds)
    if whole < 60:
        return f"{max(whole, 1)} s"
    minutes, rest = divmod(whole, 60)
    return f"{minutes} min {rest} s" if rest else f"{minutes} min"


def run_time(notebook: Notebook) -> str:
    timing = notebook.timing
    if timing is None:
        return "not measured yet (`make notebooks` measures it)"
    shown = format_seconds(timing.seconds)
    return shown if timing.current else f"{shown}, measured on an earlier version of its code"


def _link(notebook: Notebook) -> str:
    return f"[{notebook.number} · {notebook.title}]({notebook.path})"


def landing_page(course: list[Notebook], guide_paths: list[str]) -> str:
    """The book's index.md: the course map, a notebook per row and then a section each."""
    machines = sorted({n.timing.machine for n in course if n.timing})
    dates = sorted({n.timing.measured for n in course if n.timing})
    when = f"{dates[0]} to {dates[-1]}" if len(dates) > 1 else "".join(dates)
    measured_on = (
        f" They were measured {when} on {' / '.join(machines)}." if machines else " None yet."
    )
    guide = (
        " Teaching with graded assignments: [the instructors' guide](docs/classroom.md)."
        if "docs/classroom.md" in guide_paths
        else ""
    )
    if UNDER_THE_HOOD in guide_paths:
        guide += (
            " How the widgets and the training step are timed, what a checkpoint holds and how"
            f" the stored outputs are tested: [the maintainers' notebook]({UNDER_THE_HOOD})."
        )
    rows = "\n".join(f"| {_link(n)} | {run_time(n)} |" for n in course)
    sections = "\n\n".join(
        f"### {_link(n)}\n\n*Runs in {run_time(n)}.*\n\n{n.summary}" for n in course
    )
    return f"""# The Transformer, computed

An interactive course on the Transformer, from token embeddings to a trained GPT and the cost
of training a 7-billion-parameter model, in {len(course)} notebooks. These pages show the
notebooks as they are committed, with the outputs their code printed when they were last run;
the test suite re-runs every notebook and checks that it still prints the same. Each notebook
page starts with how to open it in JupyterLab, where the controls of its widgets move; here,
each widget is shown by the static rendering the notebook draws beside it.

Setting up, the tests and the command line: [the README](README.md).{guide}

## Course map

| notebook | runs in |
|---|---|
{rows}

Run times are wall-clock time for the whole notebook, top to bottom in a fresh kernel on the
CPU, as `scripts/run_notebooks.py` (`make notebooks`) measured it; the site reads them from
`notebooks/timings.json` when it is built, nothing is typed in.{measured_on}

## What each notebook teaches

{sections}
"""


def table_of_contents(course: list[Notebook], guide_paths: list[str]) -> str:
    """The book's _toc.yml: the landing page, the notebooks, then the README and the guides."""
    chapters = "\n".join(f"      - file: {n.docname}" for n in course)
    extra = "\n".join(f"      - file: {Path(p).with_suffix('').as_posix()}" for p in guide_paths)
    return f"""# Generated by book/course.py from notebooks/NN_*.ipynb and docs/; do not edit.
format: jb-book
root: index
parts:
  - caption: Notebooks
    chapters:
{chapters}
  - caption: Set up and teach
    chapters:
      - file: README
        title: Set up, tests, command line
{extra}
"""
