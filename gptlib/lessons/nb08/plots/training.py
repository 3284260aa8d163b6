"""Loss curves of a training run (notebook 08)."""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
from matplotlib.axes import Axes

from gptlib.lessons.engine.figures import describe
from gptlib.lessons.nb08.experiments.long_runs import Curves


def plot_loss_curves(
    curves: Curves,
    ax: Axes | None = None,
    vocab_size: int | None = None,
    title: str = "",
    live: Curves | None = None,
) -> Axes:
    """Per-step training loss (faint), estimates of the training and held-out loss (lines);
    `live`, another run's estimates, as markers on top. With `vocab_size`, a dotted line marks
    ln V, the loss of a uniform guess."""
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 3.6))
    if curves.losses:
        ax.plot(range(len(curves.losses)), curves.losses, color="tab:blue", alpha=0.2, lw=0.6,
                label="training batch")  # fmt: skip
    ax.plot(curves.eval_steps, curves.train, "-", color="tab:blue", label="train (estimate)")
    ax.plot(curves.eval_steps, curves.val, "-", color="tab:orange", label="held-out (estimate)")
    if live is not None:
        ax.plot(live.eval_steps, live.val, "o", color="black", ms=4, mfc="none",
                label="your run, held-out")  # fmt: skip
    if vocab_size is not None:
        ax.axhline(
            math.log(vocab_size), color="gray", ls=":", lw=1, label=f"ln V = ln {vocab_size}"
        )
    ax.set_xlabel("step")
    ax.set_ylabel("cross-entropy (nats per character)")
    ax.set_title(title)
    ax.legend(frameon=False)
    ax.grid(alpha=0.3)
    _, labels = ax.get_legend_handles_labels()
    describe(
        ax,
        f"{title + ': ' if title else ''}cross-entropy (nats per character) against the "
        f"training step, with lines for {'; '.join(labels)}.",
    )
    return ax
