"""Every experiment a lesson's prose draws a conclusion from has a card (issue 43).

A lesson's cards are one page, `docs/experiments/nbNN.md`: a first line `# Lesson NN: experiment
cards`, then one `## NN-name: title` section per experiment, each with the fields of `FIELDS` as
`- **Field:** text` items. For every lesson with a page this test checks that

- every card has every field, none empty, and a `Supports` field quoting (in double quotes) text
  that the notebook's markdown holds (whitespace aside);
- its `Cell` field names the tag `experiment:NN-name` and the notebook, and that tag is on
  exactly one code cell of the solved notebook and of its workbook twin;
- every `experiment:*` tag of the notebook has a card, and a markdown cell of the notebook names
  the card (a link to `nbNN.md#NN-name`, or the id in plain words);
- every code cell that runs a lesson experiment is tagged: the rule, mechanical on purpose, is a
  call of a name imported from a `gptlib.lessons` module whose path holds `experiments`. The
  experiment's main cell carries `experiment:NN-name`; another cell that runs part of it (a
  question's cell reusing its function) carries `experiment-helper:NN-name`, and that card's
  `Cell` field names the helper tag.

Lessons without a page yet are listed in `NOT_YET_CARDED`, which must be exactly the lessons
without one: a new page removes its lesson from the set.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CARDS = ROOT / "docs" / "experiments"
NOT_YET_CARDED: set[str] = set()
FIELDS = (
    "Cell",
    "Question",
    "Varies / held fixed",
    "Seeds and spread",
    "Budget, and why it suffices",
    "Metric and evaluation set",
    "Supports",
    "Other explanations and the controls that rule them out",
)
TAG, HELPER = "experiment:", "experiment-helper:"


def lessons() -> dict[str, Path]:
    """Lesson number -> solved notebook, for the numbered lessons 01-09."""
    found = {p.name[:2]: p for p in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))}
    return {n: p for n, p in found.items() if n != "00"}


def carded() -> list[str]:
    return sorted(n for n in lessons() if (CARDS / f"nb{n}.md").exists())


def parse_page(text: str) -> tuple[str, dict[str, dict[str, str]]]:
    """(first line, {card id: {field: text}}) of a cards page."""
    first, *rest = text.splitlines()
    cards: dict[str, dict[str, str]] = {}
    card: dict[str, str] | None = None
    field = None
    for line in rest:
        heading = re.match(r"## (\S+?):\s", line)
        item = re.match(r"- \*\*(.+?):\*\*\s*(.*)", line)
        if heading:
            card, field = cards.setdefault(heading.group(1), {}), None
        elif line.startswith("#"):
            card, field = None, None
        elif card is not None and item:
            field = item.group(1)
            card[field] = item.group(2).strip()
        elif card is not None and field and line.startswith("  ") and line.strip():
            card[field] += " " + line.strip()
        elif not line.strip():
            field = None
    return first, cards


def cells_of(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def source(cell: dict) -> str:
    return "".join(cell["source"])


def tags(cell: dict) -> list[str]:
    return cell["metadata"].get("tags", [])


def squashed(text: str) -> str:
    return " ".join(text.split())


def _tree(code: str) -> ast.Module:
    kept = [line for line in code.splitlines() if not line.lstrip().startswith(("%", "!"))]
    return ast.parse("\n".join(kept))


def experiment_names(cells: list[dict]) -> set[str]:
    """Names a notebook imports from a `gptlib.lessons` module whose path holds `experiments`
    (a module imported whole counts by its name)."""
    names = set()
    for cell in cells:
        if cell["cell_type"] != "code":
            continue
        for node in ast.walk(_tree(source(cell))):
            if isinstance(node, ast.ImportFrom) and _is_experiments(node.module or ""):
                names |= {alias.asname or alias.name for alias in node.names}
            elif isinstance(node, ast.Import):
                names |= {
                    alias.asname or alias.name
                    for alias in node.names
                    if _is_experiments(alias.name)
                }
    return names


def _is_experiments(module: str) -> bool:
    return module.startswith("gptlib.lessons.") and "experiments" in module.split(".")


def runs_an_experiment(cell: dict, names: set[str]) -> bool:
    """A call of an imported experiment function (`f(...)` or `module.f(...)`)."""
    for node in ast.walk(_tree(source(cell))):
        if isinstance(node, ast.Call):
            func = node.func
            while isinstance(func, ast.Attribute):
                func = func.value
            if isinstance(func, ast.Name) and func.id in names:
                return True
    return False


def test_not_yet_carded_is_exactly_the_lessons_without_a_page():
    without = {n for n in lessons() if not (CARDS / f"nb{n}.md").exists()}
    assert without == NOT_YET_CARDED, (
        f"lessons without a page in docs/experiments: {sorted(without)}; NOT_YET_CARDED says "
        f"{sorted(NOT_YET_CARDED)} (a new page removes its lesson from the set)"
    )


def test_the_parser_reads_fields_and_continuation_lines():
    page = (
        "# Lesson 99: experiment cards\n\nIntro.\n\n## 99-demo: a title\n\n"
        "- **Cell:** `experiment:99-demo` in x\n- **Question:** one\n  and two\n\n"
        '## 99-other: another\n\n- **Supports:** "a"\n'
    )
    first, cards = parse_page(page)
    assert first == "# Lesson 99: experiment cards"
    assert cards == {
        "99-demo": {"Cell": "`experiment:99-demo` in x", "Question": "one and two"},
        "99-other": {"Supports": '"a"'},
    }


def test_the_experiment_rule_finds_calls_of_imported_experiment_functions():
    cells = [
        {"cell_type": "code", "source": "from gptlib.lessons.nb99.experiments import run\n"},
        {"cell_type": "code", "source": "import gptlib.lessons.shared.experiments.loop as loop\n"},
        {"cell_type": "code", "source": "%matplotlib inline\nresult = run(3)\n"},
        {"cell_type": "code", "source": "out = loop.train(2)\n"},
        {"cell_type": "code", "source": "print(result)  # run( in a comment\n"},
    ]
    names = experiment_names(cells)
    assert names == {"run", "loop"}
    assert [runs_an_experiment(c, names) for c in cells] == [False, False, True, True, False]


@pytest.mark.parametrize("lesson", carded())
def test_every_card_is_complete_and_tied_to_its_cell(lesson):
    notebook = lessons()[lesson]
    first, cards = parse_page((CARDS / f"nb{lesson}.md").read_text(encoding="utf-8"))
    assert first == f"# Lesson {lesson}: experiment cards", f"nb{lesson}.md: first line {first!r}"
    assert cards, f"nb{lesson}.md has no card"
    solved, twin = cells_of(notebook), cells_of(ROOT / "workbook" / notebook.name)
    markdown = squashed(" ".join(source(c) for c in solved if c["cell_type"] == "markdown"))
    for card_id, fields in cards.items():
        assert card_id.startswith(f"{lesson}-"), f"card {card_id} must start with {lesson}-"
        missing = [f for f in FIELDS if not fields.get(f, "").strip()]
        assert not missing, f"card {card_id}: fields missing or empty: {missing}"
        assert f"`{TAG}{card_id}`" in fields["Cell"] and notebook.name in fields["Cell"], (
            f"card {card_id}: its Cell field must name `{TAG}{card_id}` and {notebook.name}"
        )
        for edition, cells in (("solved", solved), ("workbook", twin)):
            holders = [c for c in cells if TAG + card_id in tags(c)]
            assert len(holders) == 1, (
                f"card {card_id}: {len(holders)} cells of the {edition} {notebook.name} carry "
                f"the tag {TAG}{card_id} (need exactly one)"
            )
            assert holders[0]["cell_type"] == "code", f"card {card_id}: tag on a markdown cell"
        quotes = re.findall(r'"([^"]+)"', fields["Supports"])
        assert quotes, f"card {card_id}: Supports must quote the notebook's prose in double quotes"
        for quote in quotes:
            assert squashed(quote) in markdown, (
                f"card {card_id}: the quoted prose {quote!r} is not in {notebook.name}'s markdown"
            )
        assert card_id in markdown, f"card {card_id}: no markdown cell of {notebook.name} names it"


@pytest.mark.parametrize("lesson", carded())
def test_every_experiment_cell_has_a_card(lesson):
    notebook = lessons()[lesson]
    _, cards = parse_page((CARDS / f"nb{lesson}.md").read_text(encoding="utf-8"))
    cells = cells_of(notebook)
    names = experiment_names(cells)
    for index, cell in enumerate(cells):
        if cell["cell_type"] != "code":
            continue
        for tag in tags(cell):
            for prefix in (TAG, HELPER):
                if tag.startswith(prefix):
                    card_id = tag.removeprefix(prefix)
                    assert card_id in cards, f"cell {index}: tag {tag} has no card in nb{lesson}.md"
            if tag.startswith(HELPER):
                assert f"`{tag}`" in cards[tag.removeprefix(HELPER)]["Cell"], (
                    f"cell {index}: the card's Cell field must name its helper `{tag}`"
                )
        if runs_an_experiment(cell, names):
            assert any(t.startswith((TAG, HELPER)) for t in tags(cell)), (
                f"{notebook.name}, code cell {index} runs a lesson experiment but carries no "
                f"{TAG}NN-name or {HELPER}NN-name tag:\n{source(cell)[:300]}"
            )
