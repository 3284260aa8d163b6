"""A prediction asks for what the student must work out (issue 33): the number it reveals appears
neither in the chapter nor in the notebook's markdown above the prediction.

For each `Prediction` of a lesson, the measured answer is read from the stored output of the cell
that reveals it (`measured = …`, one line per reveal, in the order of the reveal calls). A number
of the chapter's text, or of a markdown cell above the prediction, with at least two significant
digits and within 0.5% of that answer counts as giving it away. Choice predictions reveal words,
not numbers, and are read by people. A number that matches by coincidence (the same digits for
another quantity) is listed in COINCIDENCES with what it is instead.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# The chapter's numbers (not its text, which the repository does not hold).
CHAPTER_NUMBERS = ROOT / "tests" / "fixtures" / "chapter_numbers.txt"
NOTEBOOKS = sorted((ROOT / "notebooks").glob("0[0-9]_*.ipynb"))
NUMBER = re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?")
PREDICTION = re.compile(r"(\w+)\s*=\s*Prediction\(")
MEASURED = re.compile(r"^measured = (.*)$", re.M)

# (notebook, prediction, number in the text): what that number is instead.
COINCIDENCES = {
    ("00_start_here", "guess_per_char", "256"): "the model's number of positions (and the "
    "chapter's block size), not the parameters one character adds, which the student works out "
    "as 2·d",
}


def numbers(text: str) -> list[tuple[str, float]]:
    """The numbers of `text` with at least two significant digits, as written and as floats."""
    found = []
    for match in NUMBER.finditer(text):
        written = match.group(0)
        digits = re.sub(r"\D", "", written.split("e")[0]).lstrip("0")
        if len(digits) >= 2:
            found.append((written, float(written.replace(",", ""))))
    return found


def predictions(path: Path) -> list[tuple[str, str, float]]:
    """(prediction, markdown above it, measured answer) of every numeric prediction."""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    found = []
    for index, cell in enumerate(cells):
        match = PREDICTION.search("".join(cell["source"])) if cell["cell_type"] == "code" else None
        if not match:
            continue
        name = match.group(1)
        above = "\n".join(
            "".join(c["source"]) for c in cells[:index] if c["cell_type"] == "markdown"
        )
        for later in cells[index:]:
            source = "".join(later["source"])
            reveals = re.findall(r"(\w+)\.reveal\(", source)
            if later["cell_type"] != "code" or name not in reveals:
                continue
            text = "".join("".join(o.get("text", "")) for o in later.get("outputs", []))
            value = MEASURED.findall(text)[reveals.index(name)].strip()
            if re.fullmatch(r"[-\d.,e+]+", value):
                found.append((name, above, float(value.replace(",", ""))))
            break
    return found


CASES = [
    pytest.param(path, name, above, value, id=f"{path.stem[:2]}-{name}")
    for path in NOTEBOOKS
    for name, above, value in predictions(path)
]


def test_the_scan_finds_the_numeric_predictions():
    assert len(CASES) >= 10


def test_a_nearby_number_with_two_digits_counts():
    assert numbers("about 11.3, or 7, or 0.05 and 2,048") == [("11.3", 11.3), ("2,048", 2048.0)]


@pytest.mark.parametrize(("path", "name", "above", "value"), CASES)
def test_a_predictions_answer_is_not_in_the_chapter_or_the_text_above(path, name, above, value):
    chapter = "\n".join(
        line for line in CHAPTER_NUMBERS.read_text().splitlines() if not line.startswith("#")
    )
    for where, text in (("the markdown above it", above), ("the chapter", chapter)):
        given = [
            written
            for written, number in numbers(text)
            if abs(number - value) <= 0.005 * abs(value)
            and (path.stem, name, written) not in COINCIDENCES
        ]
        assert not given, f"{path.stem}: {name}'s answer {value} appears in {where} as {given}"
