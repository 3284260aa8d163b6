"""Attention maps of a trained model, one layer and head at a time (notebook 07)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import torch
from matplotlib.axes import Axes

from gptlib.viz.sampling import printable


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
