"""The causal-mask explorer of notebook 03: switch the mask on or off, change one token, and see
which positions' outputs move.

Driven by `gptlib.lessons.experiments.causality.perturb` (pure and unit-tested).
"""

from __future__ import annotations

from collections.abc import Sequence

import ipywidgets as widgets
import torch

from gptlib.lessons.experiments.causality import Perturbation, mask_twins, perturb
from gptlib.lessons.viz.causal_mask import OutputChangeView
from gptlib.lessons.widgets.explorer import Explorer
from gptlib.model import GPT


class CausalMaskExplorer(Explorer):
    """A mask toggle and a slider for the token to change, over one sequence idx [1, T]."""

    def __init__(
        self,
        model: GPT,
        idx: torch.Tensor,
        labels: Sequence[str],
        position: int = 10,
        causal: bool = True,
    ) -> None:
        T = idx.shape[1]
        if idx.shape[0] != 1 or len(labels) != T:
            raise ValueError(
                f"give one sequence idx [1, T] and one label per token, got idx "
                f"{list(idx.shape)} and {len(labels)} labels"
            )
        if not 0 <= position < T:
            raise ValueError(f"position must be in 0..{T - 1}, got {position}")
        self.twins, self.idx = mask_twins(model), idx
        self.causal = widgets.ToggleButton(value=causal, description="causal mask")
        self.position = widgets.IntSlider(
            value=position,
            min=0,
            max=T - 1,
            description="perturb token",
            style={"description_width": "initial"},
        )
        super().__init__([self.causal, self.position], figsize=OutputChangeView.FIGSIZE)
        self.view = OutputChangeView(self.figure, labels)
        self.redraw()

    def compute(self) -> Perturbation:
        return perturb(self.twins, self.idx, self.position.value, self.causal.value)

    def draw(self, result: Perturbation) -> None:
        self.view.update(result)
