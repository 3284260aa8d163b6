"""The heads explorer of notebook 04: the number of heads at a fixed width d, with the attention
layer's parameter count (the same for every choice) and every head's attention pattern.

Driven by `gptlib.lessons.nb04.experiments.multihead.head_patterns` (pure and unit-tested).
"""

from __future__ import annotations

from collections.abc import Sequence

import ipywidgets as widgets
import torch

from gptlib.lessons.engine.explorer import Explorer
from gptlib.lessons.nb04.experiments.multihead import HeadPatterns, head_patterns
from gptlib.lessons.shared.plots.multihead import HeadPatternsView
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
        figsize = HeadPatternsView.figsize(max(models), len(labels))
        super().__init__([self.n_heads], figsize=figsize)
        self.view = HeadPatternsView(self.figure, labels, max_heads=max(models))
        self.redraw()

    def compute(self) -> HeadPatterns:
        return head_patterns(self.models[self.n_heads.value], self.idx)

    def draw(self, result: HeadPatterns) -> None:
        self.view.update(result.weights, title=result.title())
