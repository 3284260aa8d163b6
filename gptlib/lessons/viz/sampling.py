"""The next-character distribution as a bar chart (notebook 07)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import torch
from matplotlib.axes import Axes


def printable(char: str) -> str:
    """A visible label for a character: newline as ↵, space as ␣."""
    return {"\n": "↵", " ": "␣"}.get(char, char)


def plot_next_char_distribution(
    chars: str, probs: torch.Tensor, ax: Axes | None = None, top: int = 20, title: str = ""
) -> Axes:
    """Bars for the `top` most likely characters; probs [V] over the vocabulary `chars`."""
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 2.8))
    values, ids = torch.topk(probs, min(top, len(chars)))
    ax.bar(range(len(ids)), values.tolist(), color="tab:purple")
    ax.set_xticks(range(len(ids)), [printable(chars[i]) for i in ids.tolist()])
    ax.set_ylim(0, 1)
    ax.set_ylabel("probability")
    ax.set_title(title)
    return ax
