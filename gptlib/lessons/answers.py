"""Folded answers for the notebooks' "Check your understanding" sections (notebooks 01–08).

An answer is built by code, so the numbers in it are computed, and shows as a closed
`<details>` block in JupyterLab (click to open) and as plain text elsewhere.
"""

from __future__ import annotations

import html


class FoldedAnswer:
    """Answer text shown folded; paragraphs are separated by blank lines."""

    def __init__(self, text: str, summary: str = "Answer") -> None:
        if not text.strip():
            raise ValueError("an answer needs some text")
        self.text, self.summary = text.strip(), summary

    def _repr_html_(self) -> str:
        paragraphs = "".join(f"<p>{html.escape(p.strip())}</p>" for p in self.text.split("\n\n"))
        return f"<details><summary>{html.escape(self.summary)}</summary>{paragraphs}</details>"

    def __repr__(self) -> str:
        return f"{self.summary}: {self.text}"


def answer(text: str, summary: str = "Answer") -> FoldedAnswer:
    """Show `text` folded under `summary`; end a cell with it (e.g. `answer(f"... {x:.3f}")`)."""
    return FoldedAnswer(text, summary)
