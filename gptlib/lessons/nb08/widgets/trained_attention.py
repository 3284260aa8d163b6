"""Notebook 08's attention explorer: a trained model's attention map by layer and head.

`gptlib.lessons.shared.experiments.trained_attention.attention_summary` is the pure function (tested
on its own); `AttentionExplorer` adds sliders.
"""

from __future__ import annotations

import ipywidgets as widgets

from gptlib.data.tokenizer import CharTokenizer
from gptlib.lessons.engine.explorer import Explorer
from gptlib.lessons.shared.experiments.trained_attention import AttentionSummary, attention_summary
from gptlib.lessons.shared.plots.trained_attention import AttentionMapView
from gptlib.model import GPT


class AttentionExplorer(Explorer):
    """Layer and head sliders over the attention maps of `text` (notebook 08)."""

    def __init__(self, model: GPT, tokenizer: CharTokenizer, text: str) -> None:
        self.model, self.tokenizer, self.text = model, tokenizer, text
        c = model.config
        self.layer = widgets.IntSlider(value=0, min=0, max=c.n_layers - 1, description="layer")
        self.head = widgets.IntSlider(value=0, min=0, max=c.n_heads - 1, description="head")
        # 110 dpi: the narrow map, stretched to the cell's width, keeps its 8 pt labels sharp.
        super().__init__([self.layer, self.head], figsize=AttentionMapView.FIGSIZE, dpi=110)
        self.view = AttentionMapView(self.figure, text)
        self.redraw()

    def compute(self) -> AttentionSummary:
        return attention_summary(
            self.model, self.tokenizer, self.text, self.layer.value, self.head.value
        )

    def draw(self, result: AttentionSummary) -> None:
        self.view.update(result.weights, title=result.title())
