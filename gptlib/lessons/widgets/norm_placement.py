"""Notebook 06's explorer: per-block gradient norms at initialisation, by depth and norm placement.

A depth slider and a Pre-LN / Post-LN / both toggle redraw the profiles computed by the pure,
unit-tested `gptlib.lessons.experiments.norm_placement.init_gradient_profile`. Each (norm,
depth) is computed once and cached, so returning to a setting is instant.
"""

from __future__ import annotations

from functools import lru_cache

import ipywidgets as widgets
import torch

from gptlib.lessons.experiments.norm_placement import (
    GradientProfiles,
    init_gradient_profile,
    toy_data,
)
from gptlib.lessons.viz.norm_placement import GradientProfileView
from gptlib.lessons.widgets.explorer import Explorer

# One model and one batch (the notebook's table averages 4 models), so a new depth draws fast.
WIDGET_MODELS, WIDGET_BATCHES = 1, 1
NORM_CHOICES = {"Pre-LN": ("pre",), "Post-LN": ("post",), "both": ("pre", "post")}


@lru_cache(maxsize=1)
def _data():
    return toy_data()


@lru_cache(maxsize=128)
def cached_profile(norm: str, depth: int) -> torch.Tensor:
    """`init_gradient_profile` at the widget's sample sizes, memoised per (norm, depth)."""
    return init_gradient_profile(
        norm, depth, _data(), n_models=WIDGET_MODELS, n_batches=WIDGET_BATCHES
    )


def gradient_profiles(depth: int, choice: str = "both") -> GradientProfiles:
    """The profiles of `depth` blocks for a `NORM_CHOICES` key ("Pre-LN", "Post-LN", "both")."""
    if choice not in NORM_CHOICES:
        raise ValueError(f"choice must be one of {list(NORM_CHOICES)}, got {choice!r}")
    return GradientProfiles({norm: cached_profile(norm, depth) for norm in NORM_CHOICES[choice]})


class GradientNormExplorer(Explorer):
    """Depth slider (2–24 blocks) and norm toggle over `gradient_profiles` (notebook 06)."""

    def __init__(self, depth: int = 12, choice: str = "both") -> None:
        if choice not in NORM_CHOICES:
            raise ValueError(f"choice must be one of {list(NORM_CHOICES)}, got {choice!r}")
        self.depth = widgets.IntSlider(
            value=depth, min=2, max=24, step=2, description="depth", continuous_update=False
        )
        self.choice = widgets.ToggleButtons(
            options=list(NORM_CHOICES), value=choice, description="norm"
        )
        super().__init__([self.depth, self.choice], figsize=GradientProfileView.FIGSIZE)
        self.view = GradientProfileView(self.figure)
        self.redraw()

    def compute(self) -> GradientProfiles:
        return gradient_profiles(self.depth.value, self.choice.value)

    def draw(self, result: GradientProfiles) -> None:
        self.view.update(result.profiles)
