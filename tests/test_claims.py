"""The claims ledger (docs/claims.md) holds: every row's cell exists, asserts, and prints.

Each row names a notebook, a piece of code (the assertion that guards the claim) and a piece of
text (what the cell prints). The notebook must hold a code cell whose stored output contains the
printed text and whose source, or that of the guard cells under it (tag `guard`), contains the
assertion; no row may be left unfilled.
"""

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LEDGER = ROOT / "docs" / "claims.md"
ROW = re.compile(r"^\| *(\d+) *\|(.*)\|$")


def ledger_rows() -> list[dict[str, str]]:
    rows = []
    for line in LEDGER.read_text().splitlines():
        match = ROW.match(line)
        if match:
            cells = [c.strip() for c in match.group(2).split(" | ")]
            claim, notebook, printed, assertion = cells
            rows.append(
                {
                    "n": match.group(1),
                    "claim": claim,
                    "notebook": notebook,
                    "printed": printed.strip("`").replace("\\|", "|"),
                    "assertion": assertion.strip("`").replace("\\|", "|"),
                }
            )
    return rows


ROWS = ledger_rows()


def outputs_text(cell: dict) -> str:
    parts = []
    for out in cell.get("outputs", []):
        if "text" in out:
            parts.append("".join(out["text"]))
        for key in ("text/plain", "text/markdown", "text/html"):
            if key in out.get("data", {}):
                parts.append("".join(out["data"][key]))
    return "".join(parts)


def with_guards(cells: list[dict]) -> list[tuple[dict, str]]:
    """Each lesson cell with its source and the source of the guard cells under it."""
    pairs: list[tuple[dict, str]] = []
    for cell in cells:
        source = "".join(cell["source"])
        if "guard" in cell["metadata"].get("tags", []) and pairs:
            pairs[-1] = (pairs[-1][0], pairs[-1][1] + "\n" + source)
        else:
            pairs.append((cell, source))
    return pairs


def test_the_ledger_lists_the_chapter_claims_in_order():
    assert len(ROWS) >= 45
    assert [int(r["n"]) for r in ROWS] == list(range(1, len(ROWS) + 1))


@pytest.mark.parametrize("row", ROWS, ids=[r["n"] for r in ROWS])
def test_each_claim_is_demonstrated_by_an_asserting_cell(row):
    assert "TODO" not in row.values(), f"claim {row['n']} is not demonstrated yet"
    path = ROOT / "notebooks" / f"{row['notebook']}.ipynb"
    assert path.is_file(), f"claim {row['n']}: no notebook {path.name}"
    cells = [c for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]
    if not row["assertion"].startswith(("assert ", "torch.testing.assert_close(")):
        pytest.fail(f"claim {row['n']}: the assertion column must quote an assert statement")
    holding = [c for c, guarded in with_guards(cells) if row["assertion"] in guarded]
    assert holding, f"claim {row['n']}: no cell of {path.name} contains {row['assertion']!r}"
    printed = [c for c in holding if row["printed"] in outputs_text(c)]
    assert printed, (
        f"claim {row['n']}: the cell holding {row['assertion']!r} does not print {row['printed']!r}"
    )
