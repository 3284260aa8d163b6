"""Notebook 04's explorer: the number of heads at a fixed width d, with the attention layer's
parameter count (the same for every choice) and every head's attention pattern."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import ipywidgets as widgets
import matplotlib.pyplot as plt
import torch

from gptlib.model import GPT
from gptlib.viz.multihead import plot_head_patterns


@dataclass(frozen=True)
class HeadPatterns:
    """One attention layer's patterns [h, T, T] on one sequence, and its sizes."""

    n_heads: int
    d_head: int
    n_parameters: int
    weights: torch.Tensor

    def entropies(self) -> torch.Tensor:
        """Mean entropy (nats) of each head's attention rows, [h]: low = sharp, high = spread."""
        return torch.special.entr(self.weights).sum(-1).mean(-1)  # entr(w) = -w ln w, entr(0) = 0

    def previous_token_weights(self) -> torch.Tensor:
        """Mean weight each head puts from query t on key t-1 (queries 1..T-1), [h]."""
        return self.weights.diagonal(offset=-1, dim1=-2, dim2=-1).mean(-1)

    def lines(self) -> list[str]:
        """The numbers as `name = value` lines (read by the browser tests)."""
        pairs = zip(self.entropies().tolist(), self.previous_token_weights().tolist(), strict=True)
        head_lines = [
            f"head {i}: mean entropy = {e:.3f}, weight on previous token = {p:.3f}"
            for i, (e, p) in enumerate(pairs)
        ]
        return [
            f"n_heads = {self.n_heads}",
            f"d_head = {self.d_head}",
            f"parameters = {self.n_parameters:,}",
            *head_lines,
        ]


@torch.no_grad()
def head_patterns(model: GPT, idx: torch.Tensor, layer: int = 0) -> HeadPatterns:
    """Every head's attention weights in one layer of `model` on one sequence idx [1, T] (pure)."""
    if idx.dim() != 2 or idx.shape[0] != 1:
        raise ValueError(f"idx must be one sequence [1, T], got shape {list(idx.shape)}")
    n_layers = len(model.blocks)
    if not 0 <= layer < n_layers:
        raise ValueError(f"layer must be in 0..{n_layers - 1}, got {layer}")
    attn = model.blocks[layer].attn
    weights = model.attention_maps(idx)[layer, 0]  # [h, T, T]
    n_parameters = sum(p.numel() for p in attn.parameters())
    return HeadPatterns(attn.n_heads, attn.d_head, n_parameters, weights)


def show_head_patterns(
    models: dict[int, GPT], idx: torch.Tensor, n_heads: int, labels: Sequence[str]
) -> HeadPatterns:
    """Print the numbers and draw each head's pattern for the model with `n_heads` heads."""
    result = head_patterns(models[n_heads], idx)
    print("\n".join(result.lines()))
    plot_head_patterns(
        result.weights,
        labels,
        title=f"{n_heads} head(s) of width {result.d_head}: {result.n_parameters:,} attention "
        "parameters",
    )
    plt.show()
    return result


def heads_explorer(
    models: dict[int, GPT], idx: torch.Tensor, labels: Sequence[str], n_heads: int = 4
) -> widgets.VBox:
    """A selector over the head counts of `models` ({n_heads: model}) for one sequence idx."""
    picker = widgets.SelectionSlider(
        options=sorted(models), value=n_heads, description="n_heads", continuous_update=True
    )
    out = widgets.interactive_output(
        lambda n_heads: show_head_patterns(models, idx, n_heads, labels), {"n_heads": picker}
    )
    return widgets.VBox([picker, out])
