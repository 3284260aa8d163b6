"""The heads explorer of notebook 04: the number of heads at a fixed width d, with the attention
layer's parameter count (the same for every choice) and every head's attention pattern.

Driven by `gptlib.lessons.experiments.multihead.head_patterns` (pure and unit-tested).
"""

from __future__ import annotations

from collections.abc import Sequence

import ipywidgets as widgets
import torch

from gptlib.lessons.experiments.multihead import head_patterns
from gptlib.lessons.viz.multihead import HeadPatternsView
from gptlib.lessons.widgets._explorer import Explorer
from gptlib.model import GPT


class HeadsExplorer(Explorer):
    """A slider over the head counts of `models` ({n_heads: model}) for one sequence idx [1, T]."""

    def __init__(
        self, models: dict[int, GPT], idx: torch.Tensor, labels: Sequence[str], n_heads: int = 4
    ) -> None:
        if n_heads not in models:
            raise ValueError(f"n_heads must be one of {sorted(models)}, got {n_heads}")
        self.models, self.idx = models, idx
        self.n_heads = widgets.SelectionSlider(
            options=sorted(models), value=n_heads, description="n_heads"
        )
        rows = (max(models) + 3) // 4
        super().__init__([self.n_heads], figsize=(10.4, 2.6 * rows + 0.5))
        self.view = HeadPatternsView(self.figure, labels, max_heads=max(models))
        self.redraw()

    def draw(self) -> list[str]:
        result = head_patterns(self.models[self.n_heads.value], self.idx)
        self.view.update(result.weights, title=result.title())
        return result.summary_lines()


def heads_explorer(
    models: dict[int, GPT], idx: torch.Tensor, labels: Sequence[str], n_heads: int = 4
) -> HeadsExplorer:
    """Build the explorer at its default setting; display it as a notebook cell's last value."""
    return HeadsExplorer(models, idx, labels, n_heads)
