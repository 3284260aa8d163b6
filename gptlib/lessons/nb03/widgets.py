"""The causal-mask explorer of notebook 03: switch the mask on or off, change one token, and see
which positions' outputs move.

It reads the change matrices the student measured (`output_changes` in the notebook), one per
model, through `gptlib.lessons.nb03.experiments.perturbation` (pure and unit-tested).
"""

from __future__ import annotations

from collections.abc import Sequence

import ipywidgets as widgets
import torch

from gptlib.lessons.engine.explorer import Explorer
from gptlib.lessons.nb03.experiments import Perturbation, perturbation
from gptlib.lessons.nb03.plots import OutputChangeView


class CausalMaskExplorer(Explorer):
    """A mask toggle and a slider for the token to change, over the change matrices [T, T] of
    the same sequence measured with the mask (`changes[True]`) and without it (`changes[False]`).
    """

    def __init__(
        self,
        changes: dict[bool, torch.Tensor],
        labels: Sequence[str],
        position: int = 10,
        causal: bool = True,
    ) -> None:
        if set(changes) != {True, False}:
            raise ValueError(
                f"give the change matrices with the mask (True) and without it (False), got "
                f"keys {sorted(changes)}"
            )
        T = len(labels)
        if any(c.shape != (T, T) for c in changes.values()):
            shapes = {k: list(c.shape) for k, c in changes.items()}
            raise ValueError(f"give one label per token: {T} labels, change matrices {shapes}")
        if not 0 <= position < T:
            raise ValueError(f"position must be in 0..{T - 1}, got {position}")
        self.changes = changes
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
        causal = self.causal.value
        return perturbation(self.changes[causal], self.position.value, causal)

    def draw(self, result: Perturbation) -> None:
        self.view.update(result)
