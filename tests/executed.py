"""What an executed notebook's outputs say, for the tests that run the workbook and the release."""

from __future__ import annotations

import nbformat


def raised(nb: nbformat.NotebookNode) -> list[str]:
    """Every error a run left in `nb`, as 'cell i: Name: message'."""
    return [
        f"cell {i}: {o.ename}: {o.evalue}"
        for i, cell in enumerate(nb.cells)
        if cell.cell_type == "code"
        for o in cell.outputs
        if o.output_type == "error"
    ]


def stream_text(cell: nbformat.NotebookNode, stream: str) -> str:
    """All that `cell` printed on `stream` ("stdout" or "stderr")."""
    return "".join(o.text for o in cell.outputs if o.output_type == "stream" and o.name == stream)
