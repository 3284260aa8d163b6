"""Stored notebooks must be what `make notebooks` writes: run top to bottom in one fresh kernel,
no errors, no noisy metadata."""

import itertools
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
# every executed notebook: the lessons and the maintainers' notebook in docs/
EXECUTED = NOTEBOOKS + sorted((ROOT / "docs").glob("*.ipynb"))
ALLOWED_CELL_METADATA = {"tags", "nbgrader", "editable", "deletable"}
NOTEBOOK_METADATA = {
    "kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
    "language_info": {"name": "python"},
}
FIX = "re-run `make notebooks` (scripts/run_notebooks.py) and commit the outputs"


def test_notebooks_are_numbered_from_00():
    names = [p.name for p in NOTEBOOKS]
    assert names and names[0].startswith("00_")
    for name in names:
        assert re.fullmatch(r"\d\d_[a-z0-9_]+\.ipynb", name), name


@pytest.mark.parametrize("path", EXECUTED, ids=lambda p: p.name)
def test_executed_top_to_bottom_in_one_fresh_kernel(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert all("".join(c["source"]).strip() for c in code), f"{path.name}: empty code cell"
    counts = [c["execution_count"] for c in code]
    assert counts == list(range(1, len(code) + 1)), f"{path.name}: counts {counts}; {FIX}"
    for cell in code:
        for out in cell["outputs"]:
            assert out["output_type"] != "error", f"{path.name}: stored error output; {FIX}"
            if out["output_type"] == "stream":
                assert "Traceback" not in "".join(out["text"]), f"{path.name}: traceback"
        names = [o.get("name") for o in cell["outputs"]]  # stdout/stderr; None if not a stream
        split = [a for a, b in zip(names[:-1], names[1:], strict=True) if a and a == b]
        assert not split, f"{path.name}: printed text split over several outputs; {FIX}"


@pytest.mark.parametrize("path", EXECUTED, ids=lambda p: p.name)
def test_no_noisy_metadata(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    assert nb["metadata"] == NOTEBOOK_METADATA, f"{path.name}: notebook metadata; {FIX}"
    for i, cell in enumerate(nb["cells"]):
        extra = set(cell.get("metadata", {})) - ALLOWED_CELL_METADATA
        assert not extra, f"{path.name} cell {i}: metadata {sorted(extra)}; {FIX}"


@pytest.mark.parametrize("path", EXECUTED, ids=lambda p: p.name)
def test_markdown_opens_every_notebook_and_plots_end_with_show(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    assert nb["cells"][0]["cell_type"] == "markdown"
    for cell in nb["cells"]:
        source = "".join(cell["source"])
        if cell["cell_type"] == "code" and "plt." in source and "plt.show()" not in source:
            pytest.fail(f"{path.name}: a plotting cell without plt.show():\n{source[:200]}")


@pytest.mark.parametrize("path", EXECUTED, ids=lambda p: p.name)
def test_solution_markers_only_in_nbgrader_solution_cells(path):
    """nbgrader strips everything between the markers, wherever they stand (markdown too)."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    for i, cell in enumerate(nb["cells"]):
        source = "".join(cell["source"])
        if "### BEGIN SOLUTION" in source or "### END SOLUTION" in source:
            assert cell["cell_type"] == "code", f"{path.name} cell {i}: markers in markdown"
            assert cell["metadata"].get("nbgrader", {}).get("solution"), (
                f"{path.name} cell {i}: solution markers in a cell nbgrader does not treat "
                "as a solution cell"
            )


def _code_cells(path: Path) -> list[dict]:
    nb = json.loads(path.read_text(encoding="utf-8"))
    return [c for c in nb["cells"] if c["cell_type"] == "code"]


def _shows_a_widget(cell: dict) -> bool:
    return any(
        "application/vnd.jupyter.widget-view+json" in out.get("data", {}) for out in cell["outputs"]
    )


# Cells whose output varies by nature and holds no result to assert: versions, the machine,
# timings. Anything else that nbval does not compare must check its numbers itself.
MACHINE_DEPENDENT = re.compile(r"__version__|pick_device|get_num_threads|perf_counter|time_calls")


@pytest.mark.parametrize("path", EXECUTED, ids=lambda p: p.name)
def test_cells_nbval_ignores_assert_what_they_show(path):
    """The nbval policy (docs/authoring.md): an ignored output is checked by the cell itself,
    and the marker is a cell tag, out of the code a student reads, never a comment."""
    cells = _code_cells(path)
    for i, cell in enumerate(cells):
        source = "".join(cell["source"])
        guards = "".join(
            "\n" + "".join(c["source"])
            for c in itertools.takewhile(
                lambda c: "guard" in c["metadata"].get("tags", []), cells[i + 1 :]
            )
        )
        assert not re.search(r"^\s*#\s*NBVAL_", source, re.M), (
            f"{path.name}: mark the cell with the tag nbval-ignore-output (or another nbval "
            f"tag) in its metadata instead of a comment:\n{source[:200]}"
        )
        if "nbval-ignore-output" not in cell["metadata"].get("tags", []):
            continue
        if _shows_a_widget(cell) or MACHINE_DEPENDENT.search(source):
            continue
        assert re.search(r"^\s*(assert |torch\.testing\.assert_close)", source + guards, re.M), (
            f"{path.name}: a cell whose output nbval ignores must assert what it shows, "
            f"itself or in a guard cell under it "
            f"(docs/authoring.md):\n{source[:300]}"
        )


LESSONS = [p for p in NOTEBOOKS if "01" <= p.name[:2] <= "09"]


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.name)
def test_lessons_end_with_takeaways_and_keep_answers_out_of_sight(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    markdown = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown"]
    takeaways = [m for m in markdown if m.lstrip().startswith("## Takeaways")]
    assert len(takeaways) == 1, f"{path.name}: one '## Takeaways' section"
    bullets = re.findall(r"^[-*] ", takeaways[0], re.M)
    assert 3 <= len(bullets) <= 5, f"{path.name}: 3–5 takeaways, found {len(bullets)}"
    for text in markdown:  # answers live in gptlib.lessons.engine.answers and show folded
        assert "<details>" not in text, f"{path.name}: an answer typed into markdown"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_answer_cell_shows_its_answer(path):
    """`answer(...)` only shows when it is the cell's last expression: nothing may follow it."""
    for cell in _code_cells(path):
        source = "".join(cell["source"])
        if not re.search(r"^answer\(", source, re.M):
            continue
        shown = [out for out in cell["outputs"] if out.get("output_type") == "execute_result"]
        assert shown, (
            f"{path.name}: an answer that is not displayed (end the cell with it):\n{source}"
        )
