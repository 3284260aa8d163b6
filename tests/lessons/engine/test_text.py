"""The one convention for printed numbers (gptlib/lessons/engine/text.py), and that the course
keeps it."""

import json
import re
from pathlib import Path

import pytest
import torch

from gptlib.lessons.engine.text import fmt, number

ROOT = Path(__file__).resolve().parents[3]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
SOURCES = sorted(
    p
    for folder in ("gptlib", "scripts", "benchmarks", "book")
    for p in (ROOT / folder).rglob("*.py")
)
# A float format spec inside braces, e.g. {x:z.3f}, {x:>z8.2e}, {x:z,.0f}, {x:+z.3f}; group "z".
FLOAT_SPEC = re.compile(
    r"(?<=[^:\[(\s]):(?:[^{}<>=^\s]?[<>=^])?[+\-]?(?P<z>z?)#?0?\d*[,_]?(?:\.\d+)?[eEfFgG%]\}"
)
NEGATIVE_ZERO = re.compile(r"(?<![\w.])-0(?:\.0+)?(?![\d.])")


def test_number_fixes_the_decimals_and_never_prints_a_negative_zero():
    assert number(1.0) == "1.000" and number(0.99999994) == "1.000"
    assert number(-1e-9) == "0.000" and number(-0.0) == "0.000" and number(-0.0006) == "-0.001"
    assert number(torch.tensor(2.0), digits=1) == "2.0"
    assert number(float("-inf")) == "-inf" and number(float("nan")) == "nan"


def test_fmt_reads_the_same_whether_values_are_exact_or_not():
    exact, rounded = torch.ones(4), torch.full((4,), 0.99999994)
    assert repr(exact) != repr(rounded)  # torch: tensor([1., 1., 1., 1.]) vs tensor([1.0000, ...])
    assert fmt(exact) == fmt(rounded) == "[1.000, 1.000, 1.000, 1.000]"
    assert fmt(torch.tensor([-1e-7, 0.5])) == "[0.000, 0.500]"


def test_fmt_aligns_matrices_and_keeps_integers_integral():
    m = torch.tensor([[1.0, 0.0], [0.304, float("-inf")]])
    assert fmt(m) == "[[1.000, 0.000],\n [0.304,  -inf]]"
    assert fmt(torch.tensor([[2, 9], [3, 10]])) == "[[ 2,  9],\n [ 3, 10]]"
    assert (
        fmt(torch.arange(8.0).view(2, 2, 2), digits=0)
        == "[[[0, 1],\n  [2, 3]],\n\n [[4, 5],\n  [6, 7]]]"
    )
    assert fmt([0.25, 0.75], digits=2) == "[0.25, 0.75]" and fmt(3.14159) == "3.142"
    assert fmt(torch.zeros(0)) == "[]" and fmt(torch.tensor(7)) == "7"


def _code_cells(path: Path) -> list[str]:
    nb = json.loads(path.read_text(encoding="utf-8"))
    return ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]


@pytest.mark.parametrize("path", SOURCES + NOTEBOOKS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_float_format_drops_the_negative_zero(path):
    texts = _code_cells(path) if path.suffix == ".ipynb" else [path.read_text(encoding="utf-8")]
    plain = [m.group(0) for text in texts for m in FLOAT_SPEC.finditer(text) if not m.group("z")]
    assert not plain, f"{path.name}: float formats without `z` (prints -0.000): {plain}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_stored_outputs_hold_no_tensor_repr_and_no_negative_zero(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    for i, cell in enumerate(c for c in nb["cells"] if c["cell_type"] == "code"):
        for out in cell["outputs"]:
            text = "".join(out.get("text", "")) + "".join(out.get("data", {}).get("text/plain", ""))
            assert "tensor(" not in text, f"{path.name} cell {i}: torch's repr; print with fmt"
            assert not NEGATIVE_ZERO.search(text), f"{path.name} cell {i}: a negative zero"
