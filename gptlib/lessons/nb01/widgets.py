"""The positional-encoding explorer of notebook 01: d_model, length and base of the sinusoids.

Driven by `gptlib.lessons.nb01.experiments.position_summary` (pure and unit-tested).
"""

from __future__ import annotations

import ipywidgets as widgets

from gptlib.lessons.engine.explorer import Explorer
from gptlib.lessons.nb01.experiments import PositionSummary, position_summary
from gptlib.lessons.nb01.plots import PositionView


class PositionExplorer(Explorer):
    """Sliders for d_model (even, 4..256), length (8..512) and base (10..100000)."""

    def __init__(self, d_model: int = 64, length: int = 128, base: float = 10000.0) -> None:
        self.d_model = widgets.IntSlider(
            value=d_model, min=4, max=256, step=2, description="d_model"
        )
        self.length = widgets.IntSlider(value=length, min=8, max=512, step=8, description="length")
        self.base = widgets.FloatLogSlider(
            value=base, base=10, min=1, max=5, step=0.25, description="base"
        )
        super().__init__([self.d_model, self.length, self.base], figsize=PositionView.FIGSIZE)
        self.view = PositionView(self.figure)
        self.redraw()

    def compute(self) -> PositionSummary:
        return position_summary(self.length.value, self.d_model.value, self.base.value)

    def draw(self, result: PositionSummary) -> None:
        self.view.update(result)
