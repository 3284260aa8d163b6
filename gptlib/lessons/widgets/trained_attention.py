"""Notebook 07's attention explorer: a trained model's attention map by layer and head.

`attention_summary` is the pure function (tested on its own); `attention_explorer` adds sliders.
"""

from __future__ import annotations

import io
from dataclasses import dataclass

import ipywidgets as widgets
import matplotlib.pyplot as plt
import torch
from IPython.display import Image, display

from gptlib.data.tokenizer import CharTokenizer
from gptlib.lessons.viz.trained_attention import plot_attention_map
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

    def lines(self) -> str:
        return "\n".join(
            [
                f"layer = {self.layer}, head = {self.head}",
                f"max weight = {self.weights.max().item():.3f}",
                f"mean look-back = {self.mean_look_back:.2f} characters",
                f"weight on the previous character = {self.previous_char_weight:.3f}",
                f"weight on itself = {self.self_weight:.3f}",
            ]
        )


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
    idx = tokenizer.encode(text)[None].to(model.lm_head.weight.device)
    maps = model.attention_maps(idx)  # [L, 1, h, T, T]
    return AttentionSummary(layer, head, maps[layer, 0, head].cpu())


def attention_explorer(model: GPT, tokenizer: CharTokenizer, text: str) -> widgets.Widget:
    """Layer and head sliders over the attention maps of `text`; returns the displayed widget."""
    c = model.config
    layer = widgets.IntSlider(value=0, min=0, max=c.n_layers - 1, description="layer")
    head = widgets.IntSlider(value=0, min=0, max=c.n_heads - 1, description="head")
    out = widgets.Output()

    def redraw(change: dict | None = None) -> None:
        summary = attention_summary(model, tokenizer, text, layer.value, head.value)
        fig, ax = plt.subplots(figsize=(5.5, 5.5))
        plot_attention_map(
            summary.weights, text, ax, title=f"layer {layer.value}, head {head.value}"
        )
        # Fixed margins and one draw: plt.show() would crop to a tight box, drawing the figure
        # twice, and each draw of the 2·T character labels takes about 90 ms.
        fig.subplots_adjust(left=0.14, right=0.97, bottom=0.11, top=0.94)
        png = io.BytesIO()
        fig.savefig(png, format="png")
        plt.close(fig)
        with out:
            out.clear_output(wait=True)
            display(Image(png.getvalue()))
            print(summary.lines())

    layer.observe(redraw, names="value")
    head.observe(redraw, names="value")
    redraw()
    box = widgets.VBox([widgets.HBox([layer, head]), out])
    display(box)
    return box
