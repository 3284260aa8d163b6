"""The base every explorer shares: controls, the numbers as `name = value` lines, one figure.

An explorer is a few controls above an Output of `name = value` lines and an Image of one
reused matplotlib Figure. Every change of a control recomputes through a pure, unit-tested
function that returns a result dataclass with a `lines() -> list[str]` method, updates the
figure in place and swaps the PNG, so nothing depends on the notebook's plotting backend.

A notebook shows an explorer by making it the last value of a cell; building one displays
nothing. The static rendering under it draws the same view on a fresh figure and prints
`"\\n".join(result.lines())`, which is also what browser tests read.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Protocol

import ipywidgets as widgets
from matplotlib.figure import Figure

# One printed line: a name, " = ", then a value (a number, a word or a list; it may be
# followed by a unit or a note in parentheses). The name holds no "=".
NAME_VALUE = re.compile(r"(?P<name>[^=\n]*[^=\s]) = (?P<value>\S[^\n]*)")


class Result(Protocol):
    """What an explorer's pure function returns: its numbers as `name = value` lines."""

    def lines(self) -> list[str]: ...


def check_lines(lines: Sequence[str]) -> list[str]:
    """`lines` as a list, after checking that each is one `name = value` line."""
    lines = list(lines)
    wrong = [line for line in lines if not NAME_VALUE.fullmatch(line)]
    if wrong:
        raise ValueError(f"expected `name = value` lines, got {wrong}")
    return lines


def figure_png(fig: Figure, dpi: int = 80) -> bytes:
    """The figure as PNG bytes, for an `ipywidgets.Image`."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi)
    return buffer.getvalue()


class Explorer:
    """Controls above an Output of `name = value` lines and an Image of one reused Figure.

    A subclass creates its controls, calls `super().__init__(controls, figsize)`, builds its
    view on `self.figure`, then calls `self.redraw()`. The notebook stretches the image to the
    cell's width: a narrow figure with small text (a map labelled by character) needs a
    higher `dpi` to stay sharp, at some cost in redraw time. It implements `compute()` (call the
    pure function with the controls' values) and `draw(result)` (update the view). After
    every redraw `result` is the last result and `lines` its `name = value` lines.
    """

    _held = 0  # > 0 while `holding()`: control changes do not redraw

    def __init__(
        self, controls: Sequence[widgets.Widget], figsize: tuple[float, float], dpi: int = 80
    ) -> None:
        self.controls, self.dpi = list(controls), dpi
        self.numbers = widgets.Output()
        self.image = widgets.Image(format="png")
        self.figure = Figure(figsize=figsize)
        wrap = widgets.Layout(flex_flow="row wrap")
        self.widget = widgets.VBox(
            [widgets.HBox(self.controls, layout=wrap), self.numbers, self.image]
        )
        self.result: Result | None = None
        self.lines: list[str] = []
        for control in self.controls:
            control.observe(self.redraw, names="value")

    def compute(self) -> Result:
        """The pure function's result at the controls' current values."""
        raise NotImplementedError

    def draw(self, result: Result) -> None:
        """Show `result` on `self.figure` (update the view in place)."""
        raise NotImplementedError

    def redraw(self, _change: Any = None) -> None:
        """Recompute, redraw and reprint for the controls' values (called on every change)."""
        if self._held:
            return
        result = self.compute()
        lines = check_lines(result.lines())
        self.draw(result)
        self.result, self.lines = result, lines
        self.image.value = figure_png(self.figure, self.dpi)
        text = "\n".join(lines) + "\n"
        self.numbers.outputs = ({"output_type": "stream", "name": "stdout", "text": text},)

    @contextmanager
    def holding(self, redraw: bool = True) -> Iterator[None]:
        """Move several controls with one redraw at the end (none if `redraw` is False)."""
        self._held += 1
        try:
            yield
        finally:
            self._held -= 1
        if redraw and not self._held:
            self.redraw()

    def _repr_mimebundle_(self, **kwargs: Any) -> dict:
        bundle = self.widget._repr_mimebundle_(**kwargs)
        bundle["text/plain"] = (
            f"{type(self).__name__}: an interactive explorer (open the notebook in "
            "JupyterLab to move its controls)"
        )
        return bundle
