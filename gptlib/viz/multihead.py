"""Plots for notebook 04: per-head attention patterns and the (head, position) slots a token
reaches after a head split."""

from __future__ import annotations

import math
from collections.abc import Sequence

import matplotlib.pyplot as plt
import torch
from matplotlib.figure import Figure

from gptlib.viz.labels import char_labels


def plot_head_patterns(weights: torch.Tensor, labels: Sequence[str], title: str = "") -> Figure:
    """One heatmap per head of attention weights [h, T, T], at most four per row.

    Only the first panel carries the character tick labels (queries down, keys across; every
    panel shows the same sentence): labelling all of them would make each widget redraw
    several times slower.
    """
    h, T, _ = weights.shape
    cols = min(h, 4)
    rows = math.ceil(h / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(2.6 * cols, 2.6 * rows + 0.5), squeeze=False)
    fig.subplots_adjust(left=0.06, right=0.98, bottom=0.08, top=0.86, wspace=0.15, hspace=0.3)
    ticks = char_labels(labels)
    for i, ax in enumerate(axes.flat):
        if i >= h:
            ax.axis("off")
            continue
        ax.imshow(weights[i].detach().numpy(), cmap="viridis", vmin=0, vmax=1)
        ax.set_title(f"head {i}", fontsize=9)
        if i == 0:
            ax.set_xticks(range(T), ticks, fontsize=6)
            ax.set_yticks(range(T), ticks, fontsize=6)
        else:
            ax.set_xticks([])
            ax.set_yticks([])
    if title:
        fig.suptitle(title)
    return fig


def plot_head_slots(slots: dict[str, torch.Tensor], token: int) -> Figure:
    """Boolean grids [h, T], one per split method: which (head, position) slots token moved."""
    fig, axes = plt.subplots(
        1, len(slots), figsize=(4.5 * len(slots), 2.4), squeeze=False, constrained_layout=True
    )
    for ax, (name, grid) in zip(axes.flat, slots.items(), strict=True):
        h, T = grid.shape
        ax.imshow(grid.float().numpy(), cmap="Reds", vmin=0, vmax=1.4)
        ax.set_xticks(range(T))
        ax.set_yticks(range(h), [f"head {i}" for i in range(h)])
        ax.set_xlabel("position slot")
        ax.set_title(f"{name}: token {token} lands in", fontsize=10)
    return fig
