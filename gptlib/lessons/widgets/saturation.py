"""The d_k explorer of notebook 02: drag d_k, toggle the 1/√d_k scaling, watch the softmax.

Driven by `gptlib.lessons.experiments.saturation.saturation` (pure and unit-tested).
"""

from __future__ import annotations

import ipywidgets as widgets

from gptlib.lessons.experiments.saturation import Saturation, saturation, saturation_sweep
from gptlib.lessons.viz.saturation import SaturationView
from gptlib.lessons.widgets.explorer import Explorer

DK_CHOICES = tuple(2**p for p in range(11))  # 1, 2, 4, ..., 1024


class SaturationExplorer(Explorer):
    """d_k slider (powers of two, 1..1024) and a scaled/unscaled toggle (notebook 02)."""

    def __init__(self, d_k: int = 128, scaled: bool = False, seed: int = 0) -> None:
        if d_k not in DK_CHOICES:
            raise ValueError(f"d_k must be one of {DK_CHOICES}, got {d_k}")
        self.seed = seed
        self.curves = saturation_sweep(DK_CHOICES, seed)
        self.d_k = widgets.SelectionSlider(
            options=DK_CHOICES, value=d_k, description="d_k", continuous_update=True
        )
        self.scaled = widgets.ToggleButtons(
            options=[("unscaled", False), ("scaled by 1/√d_k", True)], value=scaled
        )
        super().__init__([self.d_k, self.scaled], figsize=SaturationView.FIGSIZE)
        self.view = SaturationView(self.figure, self.curves)
        self.redraw()

    def compute(self) -> Saturation:
        return saturation(self.d_k.value, self.scaled.value, self.seed)

    def draw(self, result: Saturation) -> None:
        self.view.update(result)
