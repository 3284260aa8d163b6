"""Attention maps of a trained model, one layer and head at a time (notebook 07)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import torch
from matplotlib.axes import Axes

from gptlib.lessons.viz.sampling import printable


def plot_attention_map(
    weights: torch.Tensor, text: str, ax: Axes | None = None, title: str = ""
) -> Axes:
    """Heatmap of weights [T, T] (row: the query character, column: the key it reads)."""
    if ax is None:
        _, ax = plt.subplots(figsize=(5.5, 5.5))
    labels = [printable(c) for c in text]
    ax.imshow(weights.numpy(), cmap="viridis", vmin=0, vmax=1)
    ax.set_xticks(range(len(labels)), labels, fontsize=7)
    ax.set_yticks(range(len(labels)), labels, fontsize=7)
    ax.set_xlabel("key (character attended to)")
    ax.set_ylabel("query (character predicting the next)")
    ax.set_title(title)
    return ax


def plot_attention_grid(maps: torch.Tensor, text: str, size: float = 2.0) -> plt.Figure:
    """Every layer (rows) and head (columns) of maps [L, h, T, T] as small heatmaps."""
    L, h = maps.shape[:2]
    fig, axes = plt.subplots(L, h, figsize=(size * h, size * L), squeeze=False)
    for layer in range(L):
        for head in range(h):
            ax = axes[layer, head]
            ax.imshow(maps[layer, head].cpu().numpy(), cmap="viridis", vmin=0, vmax=1)
            ax.set_xticks([])
            ax.set_yticks([])
            if layer == 0:
                ax.set_title(f"head {head}", fontsize=9)
            if head == 0:
                ax.set_ylabel(f"layer {layer}", fontsize=9)
    shown = text if len(text) <= 30 else text[:30] + "…"
    fig.suptitle(f"attention of every layer and head on {shown!r}")
    fig.tight_layout()
    return fig
