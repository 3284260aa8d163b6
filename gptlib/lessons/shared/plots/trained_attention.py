"""Attention maps of a trained model, one head or all of them (notebook 08)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.figure import Figure

from gptlib.lessons.engine.figures import describe
from gptlib.lessons.engine.labels import char_labels


class AttentionMapView:
    """One head's weights [T, T] on a text: queries down, keys across, one label per character.

    Built once for the text; `update(weights, title)` swaps the image. Tick labels are 8 pt and
    a colorbar gives the scale (weights 0 to 1).
    """

    FIGSIZE = (7.0, 6.0)

    def __init__(self, fig: Figure, text: str) -> None:
        T = len(text)
        self.ax = ax = fig.subplots()
        fig.subplots_adjust(left=0.12, right=0.84, bottom=0.12, top=0.94)
        self.image = ax.imshow(np.zeros((T, T)), cmap="viridis", vmin=0, vmax=1)
        labels = char_labels(text)
        self.text = text.replace("\n", "⏎")
        ax.set_xticks(range(T), labels, fontsize=8)
        ax.set_yticks(range(T), labels, fontsize=8)
        ax.set_xlabel("key (the character attended to)")
        ax.set_ylabel("query (the character predicting the next)")
        colorbar_ax = fig.add_axes((0.86, 0.12, 0.02, 0.82))
        fig.colorbar(self.image, cax=colorbar_ax, label="attention weight")

    def update(self, weights: torch.Tensor, title: str = "") -> None:
        """Show weights [T, T] (T = the text's length) under `title`."""
        shape = self.image.get_array().shape
        if tuple(weights.shape) != shape:
            raise ValueError(f"this view shows {list(shape)} weights, got {list(weights.shape)}")
        self.image.set_data(weights.detach().cpu().numpy())
        self.ax.set_title(title)
        describe(
            self.ax,
            f"One attention head's weights{' (' + title + ')' if title else ''} on “{self.text}”: "
            "query (the character predicting the next) down, key (the character attended to) "
            f"across, 0 to 1 (viridis); {weight_on_later_keys(weights)}.",
        )


def plot_attention_grid(maps: torch.Tensor, text: str, size: float = 2.0) -> Figure:
    """Every layer (rows) and head (columns) of maps [L, h, T, T] as small heatmaps.

    Each panel has queries down and keys across, like `AttentionMapView`; too small for one
    label per character, the outer panels mark every tenth position instead (8 pt), so that a
    position named in a table can be found. The title shows `text` whole up to 60 characters.
    """
    L, h = maps.shape[:2]
    fig, axes = plt.subplots(
        L, h, figsize=(size * h + 0.8, size * L + 0.6), squeeze=False, constrained_layout=True
    )
    ticks = list(range(0, maps.shape[-1], 10))
    for layer in range(L):
        for head in range(h):
            ax = axes[layer, head]
            image = ax.imshow(maps[layer, head].cpu().numpy(), cmap="viridis", vmin=0, vmax=1)
            ax.set_xticks(ticks, ticks if layer == L - 1 else [], fontsize=8)
            ax.set_yticks(ticks, ticks if head == 0 else [], fontsize=8)
            if layer == 0:
                ax.set_title(f"head {head}", fontsize=9)
            if head == 0:
                ax.set_ylabel(f"layer {layer}\nquery position", fontsize=9)
            if layer == L - 1:
                ax.set_xlabel("key position", fontsize=9)
    fig.colorbar(image, ax=axes, shrink=0.6, label="attention weight")
    shown = (text if len(text) <= 60 else text[:59] + "…").replace("\n", "⏎")
    fig.suptitle(f"attention of every layer and head on “{shown}”")
    describe(
        fig,
        f"Attention weights of every layer ({L}, rows) and head ({h}, columns) on “{shown}”, as "
        "small heatmaps: query position down, key position across, 0 to 1 (viridis); "
        f"{weight_on_later_keys(maps)}.",
    )
    return fig


def weight_on_later_keys(weights: torch.Tensor) -> str:
    """Whether weights [..., T, T] put any weight on a key after its query, in words (exact:
    a causal mask leaves those weights exactly 0)."""
    later = bool((weights.detach().triu(1) != 0).any())
    return (
        "some weight goes to later keys (above the diagonal)"
        if later
        else "no weight goes to a later key (above the diagonal)"
    )
