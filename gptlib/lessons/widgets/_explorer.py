"""The frame every explorer shares: controls, the numbers as text, and the figure as an image.

Each change of a control recomputes through a pure gptlib function, redraws one reused
matplotlib Figure and swaps the PNG, so nothing depends on the notebook's plotting backend.
"""

from __future__ import annotations

import io
from typing import Any

import ipywidgets as widgets
from matplotlib.figure import Figure


def figure_png(fig: Figure, dpi: int = 80) -> bytes:
    """The figure as PNG bytes, for an `ipywidgets.Image`."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi)
    return buffer.getvalue()


class Explorer:
    """Controls above an Output of `name = value` lines and an Image of the figure.

    Subclasses build their view on `self.figure`, then implement `draw() -> lines`: compute from
    the controls' values, update the view, and return the numbers to print. `lines` holds the
    last numbers shown.
    """

    def __init__(self, controls: list[widgets.Widget], figsize: tuple[float, float]) -> None:
        self.numbers = widgets.Output()
        self.image = widgets.Image(format="png")
        self.figure = Figure(figsize=figsize)
        self.widget = widgets.VBox([widgets.HBox(controls), self.numbers, self.image])
        self.lines: list[str] = []
        for control in controls:
            control.observe(self.redraw, names="value")

    def draw(self) -> list[str]:
        raise NotImplementedError

    def redraw(self, _change: Any = None) -> None:
        """Recompute and redraw for the controls' current values (called on every change)."""
        self.lines = self.draw()
        self.image.value = figure_png(self.figure)
        text = "\n".join(self.lines) + "\n"
        self.numbers.outputs = ({"output_type": "stream", "name": "stdout", "text": text},)

    def _repr_mimebundle_(self, **kwargs: Any) -> dict:
        return self.widget._repr_mimebundle_(**kwargs)
