"""Notebook 06's explorer: per-block gradient norms at initialisation, by depth and norm placement.

A depth slider and a Pre-LN / Post-LN / both toggle redraw the profiles that a measurement
(in the notebook, the student's `block_gradient_norms`: model, inputs, targets → [L]) gives
for one model of each placement, through `mean_over_models`, its blocks run by the student's
`block_forward` when one is given. Each (norm, depth) is computed
once per explorer, so returning to a setting is instant.
"""

from __future__ import annotations

from collections.abc import Callable, MutableMapping
from functools import lru_cache

import ipywidgets as widgets
import torch

from gptlib.lessons.engine.explorer import Explorer
from gptlib.lessons.nb06.experiments import (
    BlockForward,
    GradientProfiles,
    mean_over_models,
    toy_data,
)
from gptlib.lessons.nb06.plots import GradientProfileView
from gptlib.model import GPT

# One model (the notebook's table averages 4), so that a new depth draws fast.
WIDGET_MODELS = 1
NORM_CHOICES = {"Pre-LN": ("pre",), "Post-LN": ("post",), "both": ("pre", "post")}
Measure = Callable[[GPT, torch.Tensor, torch.Tensor], torch.Tensor]


@lru_cache(maxsize=1)
def _data() -> torch.Tensor:
    return toy_data()


def gradient_profiles(
    measure: Measure,
    depth: int,
    choice: str = "both",
    cache: MutableMapping[tuple[str, int], torch.Tensor] | None = None,
    block_forward: BlockForward | None = None,
) -> GradientProfiles:
    """`measure`'s profiles of `depth` blocks for a `NORM_CHOICES` key ("Pre-LN", "Post-LN",
    "both"), one model each, its blocks run by `block_forward` if given; `cache` keeps the
    profiles computed, by (norm, depth)."""
    if choice not in NORM_CHOICES:
        raise ValueError(f"choice must be one of {list(NORM_CHOICES)}, got {choice!r}")
    cache = {} if cache is None else cache
    for norm in NORM_CHOICES[choice]:
        if (norm, depth) not in cache:
            cache[norm, depth] = mean_over_models(
                measure, norm, depth, _data(), WIDGET_MODELS, block_forward
            )
    return GradientProfiles({norm: cache[norm, depth] for norm in NORM_CHOICES[choice]})


class GradientNormExplorer(Explorer):
    """Depth slider (2–24 blocks) and norm toggle over `gradient_profiles` (notebook 06)."""

    def __init__(
        self,
        measure: Measure,
        depth: int = 12,
        choice: str = "both",
        block_forward: BlockForward | None = None,
    ) -> None:
        if choice not in NORM_CHOICES:
            raise ValueError(f"choice must be one of {list(NORM_CHOICES)}, got {choice!r}")
        self.measure = measure
        self.block_forward = block_forward
        self.profiles: dict[tuple[str, int], torch.Tensor] = {}
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
        return gradient_profiles(
            self.measure, self.depth.value, self.choice.value, self.profiles, self.block_forward
        )

    def draw(self, result: GradientProfiles) -> None:
        self.view.update(result.profiles)
