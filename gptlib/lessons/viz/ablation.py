"""What each piece buys: the ablation ladder's bars, and one head against several (notebook 08)."""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from gptlib.lessons.experiments.ablation import LadderResult
from gptlib.lessons.experiments.two_lookups import HeadsRun


def plot_ladder(
    result: LadderResult, vocab_size: int, counted_bigram: float | None = None
) -> Figure:
    """Two panels, one bar per rung, top to bottom in the ladder's order: the held-out loss
    (with ln V and, if given, the counted bigram's loss as labelled lines), and how much each
    rung lowered it compared with the rung before (the last rung: compared with the full model).
    """
    names = [r.name for r in result.rungs]
    losses = [r.val_loss for r in result.rungs]
    gains = result.gains()
    y = np.arange(len(names))
    fig, (left, right) = plt.subplots(
        1, 2, figsize=(10, 0.45 * len(names) + 1.6), sharey=True, constrained_layout=True
    )
    left.barh(y, losses, color="tab:blue")
    for yi, loss in zip(y, losses, strict=True):
        left.text(0.08, yi, f"{loss:z.3f}", va="center", color="white", fontsize=9)
    left.axvline(
        math.log(vocab_size), color="gray", ls=":", label=f"uniform guess, ln {vocab_size}"
    )
    if counted_bigram is not None:
        left.axvline(counted_bigram, color="tab:green", ls="--", label="counted bigram")
    left.set_yticks(y, names, fontsize=9)
    left.invert_yaxis()
    left.set_xlim(0, math.log(vocab_size) + 0.6)
    left.set_xlabel("held-out loss (nats per character)")
    left.set_title("held-out loss", fontsize=10)
    left.legend(fontsize=8, loc="lower right")
    gain_values = [gains.get(n, 0.0) for n in names]
    colors = ["tab:green" if g > 0 else "tab:red" for g in gain_values]
    right.barh(y[1:], gain_values[1:], color=colors[1:])
    for yi, g in zip(y[1:], gain_values[1:], strict=True):
        right.text(g, yi, f" {g:+z.3f} ", va="center", ha="left" if g >= 0 else "right", fontsize=9)
    right.axvline(0, color="black", lw=0.8)
    span = max(abs(g) for g in gain_values[1:])
    right.set_xlim(-1.35 * span, 1.35 * span)
    right.set_xlabel("loss lowered by this rung (nats per character)")
    right.set_title("change from the rung before (last: from the full model)", fontsize=10)
    fig.suptitle(
        f"Each rung after {result.steps} steps ({result.tokens_per_step} characters each), "
        "one seed",
        fontsize=11,
    )
    return fig


def plot_heads(runs: list[HeadsRun]) -> Figure:
    """Accuracy of each model on the two-lookups task, and the attention weight its best heads
    put on the latest letter and the latest digit (positions that hold a dot)."""
    names = [r.name.replace(", ", ",\n") for r in runs]
    x = np.arange(len(runs))
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.6), constrained_layout=True)
    left.bar(x, [r.accuracy for r in runs], color="tab:blue")
    for xi, r in zip(x, runs, strict=True):
        left.text(xi, r.accuracy + 0.02, f"{r.accuracy:z.3f}", ha="center", fontsize=9)
    left.set(ylim=(0, 1.12), ylabel="accuracy on held-out sequences")
    left.set_xticks(x, names, fontsize=9)
    left.set_title("answers right", fontsize=10)
    width = 0.38
    right.bar(x - width / 2, [r.letter_weight for r in runs], width, label="latest letter")
    right.bar(x + width / 2, [r.digit_weight for r in runs], width, label="latest digit")
    right.axhline(0.5, color="gray", ls=":", label="half of one softmax")
    right.set(ylim=(0, 1.12), ylabel="attention weight (best head)")
    right.set_xticks(x, names, fontsize=9)
    right.set_title("where a dot looks", fontsize=10)
    right.legend(fontsize=8, loc="upper left", ncols=3)
    return fig
