"""The d_k explorer of notebook 02: drag d_k, toggle the 1/√d_k scaling, watch the softmax.

It shows the results of a sweep (`gptlib.lessons.nb02.experiments.saturation_sweep`, run
with the student's `measure_softmax` and `softmax_rows`), so a redraw looks its numbers up
instead of measuring.
"""

from __future__ import annotations

from collections.abc import Sequence

import ipywidgets as widgets

from gptlib.lessons.engine.explorer import Explorer
from gptlib.lessons.nb02.experiments import Saturation
from gptlib.lessons.nb02.plots import SaturationView


class SaturationExplorer(Explorer):
    """A d_k slider over the sweep's widths and a scaled/unscaled toggle (notebook 02).

    `curves` is `saturation_sweep(widths, measure, softmax)`: {False: unscaled runs, True:
    scaled runs}, one per width, in the same order.
    """

    def __init__(
        self, curves: dict[bool, Sequence[Saturation]], d_k: int = 128, scaled: bool = False
    ) -> None:
        self.runs = {(run.d_k, s): run for s in (False, True) for run in curves[s]}
        widths = tuple(run.d_k for run in curves[False])
        if d_k not in widths:
            raise ValueError(f"d_k must be one of the sweep's widths {widths}, got {d_k}")
        self.d_k = widgets.SelectionSlider(
            options=widths, value=d_k, description="d_k", continuous_update=True
        )
        self.scaled = widgets.ToggleButtons(
            options=[("unscaled", False), ("scaled by 1/√d_k", True)], value=scaled
        )
        super().__init__([self.d_k, self.scaled], figsize=SaturationView.FIGSIZE)
        self.view = SaturationView(self.figure, curves)
        self.redraw()

    def compute(self) -> Saturation:
        return self.runs[self.d_k.value, self.scaled.value]

    def draw(self, result: Saturation) -> None:
        self.view.update(result)
