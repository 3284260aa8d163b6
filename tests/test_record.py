"""A workbook lesson solved with planted mistakes, as a student would in my-work/, leaves the
right record: each try of each exercise with its outcome, the misconceptions under the names the
class report reads from the same check cells, and a lesson's last cell that shows it. A second
kernel (a restart) counts the tries on. The solved notebooks leave no record where they run.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from gptlib.lessons.engine.checks import journal
from gptlib.lessons.engine.checks.outcomes import MISTAKE, outcome_from_outputs
from tests.executed import raised
from tests.scripts import load_script

ROOT = Path(__file__).resolve().parent.parent
editions = load_script("editions")

# Lesson 01's exercises, answered in turn as a student might: {function: [source of each try]}.
# Each try is followed by the exercise's own check cell; the last exercise stays a stub.
EMBED_RIGHT = "def embed(idx, E, P):\n    return E[idx] + P[: idx.shape[1]]"
SINUSOIDAL_RIGHT = (
    "def sinusoidal(T, d, base=10000.0):\n"
    "    pos = torch.arange(T, dtype=torch.float32)[:, None]\n"
    "    angles = pos / base ** (torch.arange(0, d, 2, dtype=torch.float32) / d)\n"
    "    P = torch.zeros(T, d)\n"
    "    P[:, 0::2], P[:, 1::2] = angles.sin(), angles.cos()\n"
    "    return P"
)
PLANTED_01 = {
    "permutation_test": [
        "def permutation_test(f, x, perm):\n"
        "    gap = (f(x[perm]) - f(x)).abs().amax(dim=-1)  # compared position by position\n"
        "    return gap, torch.zeros(x.shape[0])"
    ],
    "embed": [
        "def embed(idx, E, P):\n    return E[idx] + P[idx]",
        "def embed(idx, E, P):\n    return 2 * E[idx] + P[: idx.shape[1]]",
        EMBED_RIGHT,
    ],
    "sinusoidal": [
        "def sinusoidal(T, d, base=10000.0):\n"
        "    return torch.arange(T)[:, None].float() @ torch.ones(d + 1, 1)",
        SINUSOIDAL_RIGHT,
    ],
}
# (exercise, try, outcome, mistake) of every event the run above must write, in order.
EXPECTED_01 = [
    ("permutation-test", 1, "mistake", "outputs-not-moved"),
    ("embed", 1, "mistake", "positions-by-token-id"),
    ("embed", 2, "unexplained", None),
    ("embed", 3, "passed", None),
    ("sinusoidal-positions", 1, "crashed", None),
    ("sinusoidal-positions", 2, "passed", None),
]


def planted(nb: nbformat.NotebookNode, answers: dict[str, list[str]]) -> nbformat.NotebookNode:
    """`nb` with each function's stub replaced by its first planted try, and every further try
    added after the exercise's check cell, followed by that check again."""
    cells = nb.cells
    for function, tries in answers.items():
        [stub] = [
            i
            for i, c in enumerate(cells)
            if c.metadata.get("nbgrader", {}).get("solution")
            and c.source.startswith(f"def {function}(")
        ]
        check = next(i for i in range(stub, len(cells)) if f", {function})" in cells[i].source)
        cells[stub].source = tries[0]
        extra = []
        for source in tries[1:]:
            extra += [
                nbformat.v4.new_code_cell(source),
                nbformat.v4.new_code_cell(cells[check].source),
            ]
        cells[check + 1 : check + 1] = extra
    return nb


def execute(nb: nbformat.NotebookNode, folder: Path) -> nbformat.NotebookNode:
    """Run `nb` in a fresh kernel whose working directory is `folder`, as JupyterLab runs a
    notebook opened there."""
    client = NotebookClient(
        nb, timeout=600, kernel_name="python3", allow_errors=True,
        resources={"metadata": {"path": str(folder)}},
    )  # fmt: skip
    client.execute()
    return nb


def student_folder(tmp_path: Path) -> Path:
    """my-work/ as `make lab` makes it: the workbook's copies and their .workbook.json."""
    work = tmp_path / "my-work"
    editions.open_workbook(editions.WORKBOOK, work)
    return work


def solve_01(work: Path) -> nbformat.NotebookNode:
    path = work / "01_embeddings_and_positions.ipynb"
    nb = planted(nbformat.read(path, as_version=4), PLANTED_01)
    return execute(nb, work)


@pytest.fixture
def kernel_env(monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    monkeypatch.setenv("GPTLIB_DEVICE", "cpu")
    monkeypatch.delenv(journal.ENVIRONMENT, raising=False)
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)


@pytest.mark.slow
def test_a_lesson_solved_with_planted_mistakes_leaves_the_right_record(tmp_path, kernel_env):
    work = student_folder(tmp_path)
    nb = solve_01(work)
    assert not raised(nb), raised(nb)
    events, damaged = journal.read_events(work / journal.RECORD_NAME)
    assert damaged == 0
    assert [(e.exercise, e.attempt, e.outcome, e.mistake) for e in events] == EXPECTED_01
    assert {e.lesson for e in events} == {"01"}

    # The misconceptions carry the names the class report reads from the same check cells.
    checks = [c for c in nb.cells if c.cell_type == "code" and c.source.startswith("check(")]
    reported = [outcome_from_outputs(c.outputs) for c in checks]
    mistakes = [o.mistake for o in reported if o is not None and o.status == MISTAKE]
    assert mistakes == [e.mistake for e in events if e.outcome == "mistake"]

    # The lesson's last cell shows its part of the record.
    last = nb.cells[-1]
    assert last.source == editions.record_cells("01_x.ipynb")[1].source
    [shown] = [o for o in last.outputs if o.output_type == "display_data"]
    text = shown.data["text/plain"]
    assert text.splitlines()[0] == (
        "Your record of 01 · Embeddings and positions (.gptlib-record.jsonl): 2 of 4 exercises "
        "solved, 2 misconceptions shown by your wrong tries."
    )
    for line in (
        "  permutation-test: not solved yet (1 try)",
        "    try 1: outputs-not-moved (you compared the shuffled run with the first run position "
        "by position)",
        "    revisit: 2. What does attention see of word order? › Exercise 1: the permutation test",
        "  embed: solved at try 3",
        "    try 1: positions-by-token-id (you looked the positions up with the token ids)",
        "    try 2: wrong in a way no catalogued mistake explains",
        "    revisit: 3. Adding positions: `x = E[idx] + P[:T]` › Exercise 2: token vectors plus "
        "position vectors",
        "  sinusoidal-positions: solved at try 2",
        "    try 1: your code raised an error",
        "  similarity-by-offset: not tried yet",
    ):
        assert line in text.splitlines(), f"{line!r} not in\n{text}"
    html = shown.data["text/html"]
    assert '<a href="01_embeddings_and_positions.ipynb#Exercise-2:' in html
    assert "<code>positions-by-token-id</code>" in html

    # A new kernel (after a restart) counts the tries on, and the course's view holds them.
    again = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell(
                "import torch\n\nfrom gptlib.lessons.engine.checks import check\n\n"
                + PLANTED_01["permutation_test"][0]
                + '\n\n\ncheck("permutation-test", permutation_test)'
            ),
            nbformat.v4.new_code_cell("from gptlib.lessons.engine.record import show\n\nshow()"),
        ]
    )
    execute(again, work)
    events, _ = journal.read_events(work / journal.RECORD_NAME)
    assert (events[-1].exercise, events[-1].attempt) == ("permutation-test", 2)
    course = again.cells[-1].outputs[0].data["text/plain"]
    assert course.startswith("Your record across the course (.gptlib-record.jsonl): 2 of ")
    assert "  permutation-test: not solved yet (2 tries)" in course
    assert "02 · Scaled dot-product attention: not started (4 exercises)." in course


@pytest.mark.slow
def test_the_solved_edition_and_a_folder_without_a_marker_leave_no_record(tmp_path, kernel_env):
    nb = nbformat.read(ROOT / "workbook" / "01_embeddings_and_positions.ipynb", as_version=4)
    nb = execute(planted(nb, PLANTED_01), tmp_path)  # a folder that is not a student's
    assert list(tmp_path.iterdir()) == []
    shown = nb.cells[-1].outputs[0].data["text/plain"]
    assert shown.startswith("No record is kept in this folder.")
    assert not (ROOT / "notebooks" / journal.RECORD_NAME).exists()
    assert not (ROOT / "workbook" / journal.RECORD_NAME).exists()
