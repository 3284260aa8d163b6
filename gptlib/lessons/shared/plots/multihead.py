"""Per-head attention patterns, one panel per head (notebooks 03 and 04)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch
from matplotlib.figure import Figure

from gptlib.lessons.engine.figures import describe
from gptlib.lessons.engine.labels import char_labels
from gptlib.lessons.shared.plots.trained_attention import weight_on_later_keys

# Space around the panels, in inches: tick labels and "query" on the left, "key" below, the
# title above, the colorbar on the right.
_MARGINS = {"left": 0.8, "right": 1.0, "bottom": 0.75, "top": 0.7}
_GAP = 0.25  # between panels, in inches


class HeadPatternsView:
    """Heatmaps of attention weights, one per head, `cols` per row (notebooks 03 and 04).

    Built once with room for `max_heads` panels over a sequence of `labels`; `update` fills the
    first h panels and hides the rest, so the explorer redraws without rebuilding axes. Only
    the first panel carries the character ticks (queries down, keys across; every panel shows
    the same sentence): labelling them all would make a redraw several times slower. One
    colorbar serves every panel (weights 0 to 1). Give the figure `figsize(...)`: panels large
    enough for one 8 pt label per character.
    """

    LABEL_PT = 8

    @staticmethod
    def figsize(max_heads: int, T: int, cols: int = 4) -> tuple[float, float]:
        """A figure size for `max_heads` panels of T characters, `cols` to a row."""
        side = max(2.0, T * HeadPatternsView.LABEL_PT / 72)  # one 8 pt line per character
        cols = min(max_heads, cols)
        rows = math.ceil(max_heads / cols)
        m = _MARGINS
        return (
            cols * side + (cols - 1) * _GAP + m["left"] + m["right"],
            rows * side + (rows - 1) * (_GAP + 0.3) + m["top"] + m["bottom"],
        )

    def __init__(
        self, fig: Figure, labels: Sequence[str], max_heads: int = 8, cols: int = 4
    ) -> None:
        T = len(labels)
        cols = min(max_heads, cols)
        rows = math.ceil(max_heads / cols)
        axes = fig.subplots(rows, cols, squeeze=False).flat
        width, height = fig.get_size_inches()
        m = _MARGINS
        right = 1 - m["right"] / width
        fig.subplots_adjust(
            left=m["left"] / width,
            right=right,
            bottom=m["bottom"] / height,
            top=1 - m["top"] / height,
            wspace=0.1,
            hspace=0.25,
        )
        self.axes = list(axes)
        self.images = [
            ax.imshow(np.zeros((T, T)), cmap="viridis", vmin=0, vmax=1) for ax in self.axes
        ]
        ticks = char_labels(labels)
        self.text = "".join(labels).replace("\n", "⏎")
        for i, ax in enumerate(self.axes):
            ax.set_title(f"head {i}", fontsize=9)
            if i == 0:
                ax.set_xticks(range(T), ticks, fontsize=self.LABEL_PT)
                ax.set_yticks(range(T), ticks, fontsize=self.LABEL_PT)
                ax.set_xlabel("key", fontsize=9)
                ax.set_ylabel("query", fontsize=9)
            else:
                ax.set_xticks([])
                ax.set_yticks([])
        bottom, top = m["bottom"] / height, 1 - m["top"] / height
        colorbar_ax = fig.add_axes((right + 0.25 / width, bottom, 0.12 / width, top - bottom))
        fig.colorbar(self.images[0], cax=colorbar_ax, label="attention weight")
        self.title = fig.suptitle("")

    def update(self, weights: torch.Tensor, title: str = "") -> None:
        """Show weights [h, T, T] (h <= max_heads) under `title`."""
        h = weights.shape[0]
        if h > len(self.axes):
            raise ValueError(f"this view has {len(self.axes)} panels, got {h} heads")
        for i, (ax, image) in enumerate(zip(self.axes, self.images, strict=True)):
            ax.set_visible(i < h)
            if i < h:
                image.set_data(weights[i].detach().numpy())
        self.title.set_text(title)
        describe(
            self.axes[0],
            f"Attention weights of {h} head{'s' if h > 1 else ''}"
            f"{' (' + title + ')' if title else ''} as heatmaps over “{self.text}”, queries down "
            f"and keys across, 0 to 1 (viridis); {weight_on_later_keys(weights)}.",
        )
