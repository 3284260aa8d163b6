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
    span: tuple[int, str] | None = None,
) -> Axes:
    """Per-step training loss (faint), estimates of the training and held-out loss (lines and
    dots), on the run's own step axis. With `vocab_size`, a dotted line marks ln V, the loss of a
    uniform guess; `span` = (steps, label) shades the first `steps` steps, labelled (the part of
    a stored run that another run repeats)."""
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 3.6))
    if curves.losses:
        ax.plot(range(len(curves.losses)), curves.losses, color="tab:blue", alpha=0.2, lw=0.6,
                label="training batch")  # fmt: skip
    dots = "-" if len(curves.eval_steps) > 20 else ".-"
    ax.plot(curves.eval_steps, curves.train, dots, color="tab:blue", label="train (estimate)")
    ax.plot(curves.eval_steps, curves.val, dots, color="tab:orange", label="held-out (estimate)")
    if span is not None:
        ax.axvspan(0, span[0], color="gray", alpha=0.15, lw=0, label=span[1])
    if vocab_size is not None:
        ax.axhline(
            math.log(vocab_size), color="gray", ls=":", lw=1, label=f"ln V = ln {vocab_size}"
        )
    ax.set_xlim(0, max(len(curves.losses), curves.eval_steps[-1]))
    ax.set_xlabel("step")
    ax.set_ylabel("cross-entropy (nats per character)")
    ax.set_title(title, fontsize=10)
    ax.legend(frameon=False)
    ax.grid(alpha=0.3)
    _, labels = ax.get_legend_handles_labels()
    describe(
        ax,
        f"{title + ': ' if title else ''}cross-entropy (nats per character) against the "
        f"training step, with lines for {'; '.join(labels)}.",
    )
    return ax
