"""The next-character distribution as bars (notebook 08's sampling explorer)."""

from __future__ import annotations

import numpy as np
import torch
from matplotlib.figure import Figure

from gptlib.lessons.engine.figures import describe
from gptlib.lessons.engine.labels import char_labels


class NextCharView:
    """Bars of the `top` likeliest next characters, probs [V] over a vocabulary of V characters.

    Built once for a vocabulary and a prompt (shown whole in the title up to 60 characters);
    `update(chars, probs)` re-sorts the bars and relabels them. The dotted line is the uniform
    1/V.
    """

    FIGSIZE = (7.5, 3.0)

    def __init__(self, fig: Figure, vocab_size: int, prompt: str, top: int = 20) -> None:
        self.top = min(top, vocab_size)
        self.ax = ax = fig.subplots()
        fig.subplots_adjust(left=0.1, right=0.98, bottom=0.17, top=0.88)
        self.bars = ax.bar(np.arange(self.top), np.zeros(self.top), color="tab:purple")
        uniform = f"uniform 1/{vocab_size}"
        ax.axhline(1 / vocab_size, color="gray", linestyle=":", linewidth=1, label=uniform)
        ax.set_xticks(range(self.top))
        ax.set(ylim=(0, 1), ylabel="probability", xlabel=f"the {self.top} likeliest characters")
        shown = (prompt if len(prompt) <= 60 else "…" + prompt[-59:]).replace("\n", "⏎")
        ax.set_title(f"next character after “{shown}”", fontsize=10)
        ax.legend(fontsize=8, loc="upper right")
        describe(
            fig,
            f"Bars of the {self.top} likeliest next characters after “{shown}”, likeliest first, "
            f"with their probabilities (0 to 1); uniform 1/{vocab_size} dotted.",
        )

    def update(self, chars: str, probs: torch.Tensor) -> None:
        """Show probs [V] over the vocabulary `chars`, likeliest first."""
        if len(chars) != len(probs):
            raise ValueError(f"one probability per character: {len(chars)} chars, {len(probs)}")
        values, ids = torch.topk(probs, self.top)
        for bar, value in zip(self.bars, values.tolist(), strict=True):
            bar.set_height(value)
        self.ax.set_xticklabels(char_labels(chars[i] for i in ids.tolist()))
