"""Loss curves of a training run (notebook 08)."""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
from matplotlib.axes import Axes

from gptlib.train import History


def plot_loss_curves(
    history: History, ax: Axes | None = None, vocab_size: int | None = None, title: str = ""
) -> Axes:
    """Per-step training loss (faint), held-out estimates of train and validation loss (lines).

    With `vocab_size`, a dotted line marks ln V, the loss of a uniform guess.
    """
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 3.6))
    ax.plot(history.step, history.train_loss, color="tab:blue", alpha=0.25, lw=0.8,
            label="training batch")  # fmt: skip
    ax.plot(history.eval_step, history.eval_train_loss, "o-", color="tab:blue", ms=3,
            label="train (estimate)")  # fmt: skip
    ax.plot(history.eval_step, history.eval_val_loss, "o-", color="tab:orange", ms=3,
            label="held-out")  # fmt: skip
    if vocab_size is not None:
        ax.axhline(
            math.log(vocab_size), color="gray", ls=":", lw=1, label=f"ln V = ln {vocab_size}"
        )
    ax.set_xlabel("step")
    ax.set_ylabel("cross-entropy (nats per character)")
    ax.set_title(title)
    ax.legend(frameon=False)
    ax.grid(alpha=0.3)
    return ax
