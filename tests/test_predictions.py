"""A prediction asks for what the student must work out (issues 33 and 42): nothing the student can
read before the reveal gives its answer away.

For each `Prediction` of a lesson, the answer is read from the stored output of the cell that
reveals it (`measured = …`, one line per reveal, in the order of the reveal calls). A number with
at least two significant digits within 0.5% of a numeric answer gives it away when it stands

* in the chapter's text (tests/fixtures/chapter_numbers.txt);
* in the notebook before the prediction: a markdown cell, or a code cell's stored output;
* between the prediction and its reveal, in a markdown cell (the code cells there are the
  experiment, whose outputs are the measurement the reveal compares with);
* in the stored output of an earlier lesson (its number is smaller);
* or when one multiplication of the question's own numbers (any two, a number by itself, or one
  alone) lands within 0.5% of it: the prediction is then arithmetic, not a prediction.

A choice prediction's answer (the choice the reveal prints as measured) gives itself away when
what it names (its words before a colon or a parenthesis) stands, as a phrase, in a markdown cell
above the reveal.

A number that matches by coincidence (the same digits for another quantity) is listed in
COINCIDENCES with what it is instead. `python -m tests.test_predictions` prints the table: per
prediction, its notebook, question, answer, the nearest give-away found and the verdict.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from functools import cache
from itertools import combinations_with_replacement
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# The chapter's numbers (not its text, which the repository does not hold).
CHAPTER_NUMBERS = ROOT / "tests" / "fixtures" / "chapter_numbers.txt"
NOTEBOOKS = sorted((ROOT / "notebooks").glob("0[0-9]_*.ipynb"))
NUMBER = re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?")
PREDICTION = re.compile(r"(\w+)\s*=\s*Prediction\(")
MEASURED = re.compile(r"^measured = (.*)$", re.M)
TOLERANCE = 0.005

# (notebook, prediction, number or phrase as written, the notebook it stands in or "the
# chapter"): what it is instead.
COINCIDENCES = {
    ("00_start_here", "guess_per_char", "256", "00_start_here"): "the model's number of "
    "positions, not the parameters one character adds, which the student works out as 2·d",
    ("00_start_here", "guess_per_char", "256", "the chapter"): "the chapter's block size, not "
    "the parameters one character adds",
    ("07_build_the_gpt", "guess_first", "2.40", "04_multi_head_attention"): "a loss in 04's "
    "table of heads trained on another task, not the capstone's loss at position 0",
    ("07_build_the_gpt", "guess_first", "2.39", "02_scaled_dot_product_attention"): "a "
    "retrieval head's loss at step 100 in 02's seeds table, not the capstone's loss at position 0",
    ("08_train_and_sample", "guess_gap", "0.21", "02_scaled_dot_product_attention"): "the "
    "scaled head's loss at step 150 in 02's table, not 08's gap between held-out and training",
    ("09_cost_accounting", "guess_tables", "5.3", "02_scaled_dot_product_attention"): "one "
    "seed's gradient ratio in 02, not GPT-2 XL's share of parameters in its tables",
    ("09_cost_accounting", "guess_tables", "5.286", "02_scaled_dot_product_attention"): "02's "
    "measured gradient ratio (its own prediction's answer), not a share of parameters",
}


@dataclass(frozen=True)
class Case:
    """One prediction: where it is asked and revealed, its question and its answer."""

    notebook: str
    name: str
    question: str
    answer: float | str
    asked: int  # the prediction's cell
    revealed: int  # the cell that reveals it


@dataclass(frozen=True)
class Found:
    """A number or phrase that may give an answer away, and where it stands."""

    written: str
    where: str
    distance: float  # relative to the answer; 0 for a phrase
    source: str = ""  # the notebook it stands in, or "the chapter"

    @property
    def gives_away(self) -> bool:
        return self.distance <= TOLERANCE


def numbers(text: str) -> list[tuple[str, float]]:
    """The numbers of `text` with at least two significant digits, as written and as floats."""
    return [(w, v) for w, v in all_numbers(text) if len(significant(w)) >= 2]


def all_numbers(text: str) -> list[tuple[str, float]]:
    written = [m.group(0).rstrip(",") for m in NUMBER.finditer(text)]
    return [(w, float(w.replace(",", ""))) for w in written]


def significant(written: str) -> str:
    return re.sub(r"\D", "", written.split("e")[0]).lstrip("0")


@cache
def cells_of(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def source(cell: dict) -> str:
    return "".join(cell["source"])


def output_text(cell: dict) -> str:
    """A code cell's stored text: streams and the text form of every result."""
    parts = []
    for output in cell.get("outputs", []):
        parts.append("".join(output.get("text", "")))
        parts.append("".join(output.get("data", {}).get("text/plain", "")))
    return "\n".join(parts)


def question_of(cell_source: str, name: str) -> str:
    """The question string of `name = Prediction("...", ...)` in a cell's source."""
    for node in ast.walk(ast.parse(cell_source)):
        if (
            isinstance(node, ast.Assign)
            and [getattr(t, "id", None) for t in node.targets] == [name]
            and isinstance(node.value, ast.Call)
            and node.value.args
        ):
            try:
                return str(ast.literal_eval(node.value.args[0]))
            except ValueError:
                return ast.unparse(node.value.args[0])
    return ""


def cases_of(path: Path) -> list[Case]:
    """Every prediction of the notebook with a reveal, numeric or choice."""
    cells = cells_of(path)
    found = []
    for index, cell in enumerate(cells):
        if cell["cell_type"] != "code":
            continue
        for name in PREDICTION.findall(source(cell)):
            question = question_of(source(cell), name)
            for later in range(index, len(cells)):
                reveals = re.findall(r"(\w+)\.reveal\(", source(cells[later]))
                if cells[later]["cell_type"] != "code" or name not in reveals:
                    continue
                value = MEASURED.findall(output_text(cells[later]))[reveals.index(name)].strip()
                answer: float | str
                if re.fullmatch(r"-?[\d.,]+(?:e[-+]?\d+)?", value):
                    answer = float(value.replace(",", ""))
                else:
                    answer = value.strip("'\"")
                found.append(Case(path.stem, name, question, answer, index, later))
                break
    return found


CASES = [case for path in NOTEBOOKS for case in cases_of(path)]


def chapter() -> str:
    lines = CHAPTER_NUMBERS.read_text(encoding="utf-8").splitlines()
    return "\n".join(line for line in lines if not line.startswith("#"))


def texts_before(case: Case) -> list[tuple[str, str, str]]:
    """(where, the notebook it stands in, text) of everything a student reads before the reveal,
    as the rules above say."""
    path = ROOT / "notebooks" / f"{case.notebook}.ipynb"
    cells = cells_of(path)
    texts = [("the chapter", "the chapter", chapter())]
    for index, cell in enumerate(cells[: case.revealed]):
        if cell["cell_type"] == "markdown":
            where = "above the prediction" if index < case.asked else "before the reveal"
            texts.append((f"markdown cell {index} ({where})", case.notebook, source(cell)))
        elif index < case.asked:
            texts.append((f"output of cell {index}", case.notebook, output_text(cell)))
    for earlier in NOTEBOOKS:
        if earlier.stem < case.notebook:
            for index, cell in enumerate(cells_of(earlier)):
                if cell["cell_type"] == "code":
                    where = f"{earlier.stem} output of cell {index}"
                    texts.append((where, earlier.stem, output_text(cell)))
    return texts


def products(question: str) -> list[tuple[str, float]]:
    """Each question number alone, each product of two of them (a number by itself too) and
    each quotient of two."""
    found = all_numbers(question)
    result = list(found)
    for (wa, a), (wb, b) in combinations_with_replacement(found, 2):
        result.append((f"{wa} × {wb}", a * b))
    return result


def named(choice: str) -> str:
    """What a choice names, without its explanation: 'above a uniform guess' of 'above a uniform
    guess: worse than knowing nothing', 'it passes' of 'it passes (every gap 0)'."""
    return re.split(r"[:(]", choice)[0].strip()


def candidates(case: Case) -> list[Found]:
    """Every number (numeric answer) or phrase (choice) found before the reveal, nearest first."""
    if isinstance(case.answer, str):
        head = named(case.answer)
        phrase = re.compile(rf"(?<!\w){re.escape(head)}(?!\w)", re.I)
        found = [
            Found(f"'{head}'", where, 0.0, stands_in)
            for where, stands_in, text in texts_before(case)
            if where.startswith("markdown") and phrase.search(text)
        ]
        return [f for f in found if not coincidence(case, f)]
    if case.answer == 0:
        return []
    found = []
    for where, stands_in, text in texts_before(case):
        found += [Found(w, where, abs(v / case.answer - 1), stands_in) for w, v in numbers(text)]
    found += [
        Found(w, "one multiplication of the question's numbers", abs(v / case.answer - 1))
        for w, v in products(case.question)
    ]
    return sorted((f for f in found if not coincidence(case, f)), key=lambda f: f.distance)


def coincidence(case: Case, found: Found) -> bool:
    return (case.notebook, case.name, found.written, found.source) in COINCIDENCES


def giveaways(case: Case) -> list[Found]:
    return [f for f in candidates(case) if f.gives_away]


def test_the_scan_finds_the_predictions():
    assert len([c for c in CASES if isinstance(c.answer, float)]) >= 10
    assert len([c for c in CASES if isinstance(c.answer, str)]) >= 5


def test_a_nearby_number_with_two_digits_counts():
    assert numbers("about 11.3, or 7, or 0.05 and 2,048") == [("11.3", 11.3), ("2,048", 2048.0)]


def test_one_multiplication_of_the_questions_numbers_counts(monkeypatch):
    case = Case("99_probe", "guess", "With 16 heads of 64 numbers, how many?", 1024.0, 0, 1)
    monkeypatch.setattr("tests.test_predictions.cells_of", lambda path: [])
    monkeypatch.setattr("tests.test_predictions.NOTEBOOKS", [])
    monkeypatch.setattr("tests.test_predictions.chapter", lambda: "")
    assert [f.written for f in giveaways(case)] == ["16 × 64"]


def test_a_choice_named_in_the_text_above_its_reveal_counts(monkeypatch):
    case = Case("99_probe", "guess", "Does it?", "stays above", 1, 3)
    cells = [
        {"cell_type": "markdown", "source": "The loss stays above the floor."},
        {"cell_type": "code", "source": "guess = Prediction('Does it?')", "outputs": []},
        {"cell_type": "markdown", "source": "Now train."},
        {"cell_type": "code", "source": "guess.reveal('stays above')", "outputs": []},
    ]
    monkeypatch.setattr("tests.test_predictions.cells_of", lambda path: cells)
    monkeypatch.setattr("tests.test_predictions.NOTEBOOKS", [])
    monkeypatch.setattr("tests.test_predictions.chapter", lambda: "")
    [found] = giveaways(case)
    assert found.where == "markdown cell 0 (above the prediction)"


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.notebook[:2]}-{c.name}")
def test_nothing_before_the_reveal_gives_the_predictions_answer_away(case):
    given = giveaways(case)
    assert not given, (
        f"{case.notebook}: {case.name} ({case.question!r}), answer {case.answer}, is given away "
        + "; ".join(f"as {f.written} in {f.where}" for f in given)
    )


def table() -> str:
    """The predictions, their answers, the nearest give-away found and the verdict."""
    rows = [("notebook", "prediction", "question", "answer", "nearest found", "verdict")]
    for case in CASES:
        found = candidates(case)
        nearest = (
            f"{found[0].written} in {found[0].where} ({100 * found[0].distance:z.2f}% off)"
            if found
            else "-"
        )
        verdict = "GIVEN AWAY" if found and found[0].gives_away else "ok"
        question = case.question if len(case.question) <= 60 else case.question[:57] + "..."
        rows.append((case.notebook[:2], case.name, question, str(case.answer), nearest, verdict))
    return "\n".join(" | ".join(row) for row in rows)


if __name__ == "__main__":
    print(table())
