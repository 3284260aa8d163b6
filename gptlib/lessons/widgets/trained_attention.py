"""Notebook 07's attention explorer: a trained model's attention map by layer and head.

`attention_summary` is the pure function (tested on its own); `AttentionExplorer` adds sliders.
"""

from __future__ import annotations

from dataclasses import dataclass

import ipywidgets as widgets
import torch

from gptlib.data.tokenizer import CharTokenizer
from gptlib.lessons.viz.trained_attention import AttentionMapView
from gptlib.lessons.widgets.explorer import Explorer
from gptlib.model import GPT


@dataclass(frozen=True)
class AttentionSummary:
    """One head's weights [T, T] on a text, with numbers that describe where it looks."""

    layer: int
    head: int
    weights: torch.Tensor

    @property
    def mean_look_back(self) -> float:
        """Average distance i − j from a query to the keys it reads, weighted by attention."""
        T = self.weights.shape[0]
        distance = (torch.arange(T)[:, None] - torch.arange(T)[None, :]).clamp(min=0)
        return (self.weights * distance).sum(-1).mean().item()

    @property
    def previous_char_weight(self) -> float:
        """Mean weight a character puts on the one just before it."""
        return self.weights.diagonal(offset=-1).mean().item()

    @property
    def self_weight(self) -> float:
        return self.weights.diagonal().mean().item()

    def title(self) -> str:
        return f"layer {self.layer}, head {self.head}"

    def lines(self) -> list[str]:
        """The numbers as `name = value` lines (what the explorer prints)."""
        return [
            f"layer = {self.layer}",
            f"head = {self.head}",
            f"max weight = {self.weights.max().item():.3f}",
            f"mean look-back = {self.mean_look_back:.2f} characters",
            f"weight on the previous character = {self.previous_char_weight:.3f}",
            f"weight on itself = {self.self_weight:.3f}",
        ]


def attention_summary(
    model: GPT, tokenizer: CharTokenizer, text: str, layer: int, head: int
) -> AttentionSummary:
    """The attention weights of (layer, head) on `text`, [T, T], with summary numbers."""
    c = model.config
    if not (0 <= layer < c.n_layers and 0 <= head < c.n_heads):
        raise ValueError(
            f"layer must be in 0..{c.n_layers - 1} and head in 0..{c.n_heads - 1}, got "
            f"layer={layer}, head={head}"
        )
    idx = tokenizer.encode(text)[None].to(next(model.parameters()).device)
    maps = model.attention_maps(idx)  # [L, 1, h, T, T]
    return AttentionSummary(layer, head, maps[layer, 0, head].cpu())


class AttentionExplorer(Explorer):
    """Layer and head sliders over the attention maps of `text` (notebook 07)."""

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
