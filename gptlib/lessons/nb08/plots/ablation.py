"""What each piece buys: the leave-one-out table's curves and bars, and one head against
several (notebook 08)."""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from gptlib.lessons.engine.figures import describe
from gptlib.lessons.nb08.experiments.ablation import ROWS, Ablation
from gptlib.lessons.nb08.experiments.two_lookups import HeadsRun


def plot_ablation(
    ablation: Ablation, vocab_size: int, counted_bigram: float | None = None
) -> Figure:
    """Left: each row's held-out estimate (20 fixed batches, mean over the seeds) against the
    step, from the first estimate after the start. Right: each row's loss on every held-out
    character at the end, the bar at the seeds' mean, a line over their range and a cross at
    seed 0 trained at the other learning rate; the counted bigram's loss on the same characters
    as a labelled line on both."""
    names = [r.name for r in ROWS]
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2), constrained_layout=True)
    steps = ablation.curves(names[0])[0].eval_steps[1:]
    for name in names:
        left.plot(steps, [ablation.estimate(name, s) for s in steps], label=name)
    y = np.arange(len(names))
    means = [ablation.mean(n) for n in names]
    low = [m - min(ablation.loss(n)) for m, n in zip(means, names, strict=True)]
    high = [max(ablation.loss(n)) - m for m, n in zip(means, names, strict=True)]
    right.barh(y, means, xerr=[low, high], color="tab:blue", ecolor="black", capsize=3)
    right.plot([ablation.other[n] for n in names], y, "x", color="tab:orange", ms=8,
               label=f"seed 0 at learning rate {ablation.other_lr:zg}")  # fmt: skip
    for yi, m in zip(y, means, strict=True):
        right.text(0.05, yi, f"{m:z.3f}", va="center", color="white", fontsize=9)
    right.set_yticks(y, names, fontsize=9)
    right.invert_yaxis()
    right.set_xlim(0, math.log(vocab_size))
    for ax in (left, right):
        if counted_bigram is not None:
            draw = ax.axhline if ax is left else ax.axvline
            draw(counted_bigram, color="gray", ls="--", lw=1, label="counted bigram")
    seeds = ", ".join(map(str, ablation.seeds))
    left.set(xlabel="step", ylabel="held-out estimate (nats per character)")
    left.set_title(f"stored runs: mean of seeds {seeds}, 20 fixed batches", fontsize=10)
    left.legend(fontsize=8, ncols=2)
    left.grid(alpha=0.3)
    right.set_xlabel("loss on every held-out character (nats)")
    right.set_title(
        f"stored runs after {ablation.steps:,} steps: mean and range of the seeds", fontsize=10
    )
    right.legend(fontsize=8, loc="upper right")
    bigram = "; the counted bigram's loss dashed on both" if counted_bigram is not None else ""
    describe(
        fig,
        f"Leave-one-out from the full GPT: {', '.join(names)}. Left: each model's held-out "
        f"estimate (nats per character on 20 fixed batches, mean of seeds {seeds}) against the "
        f"training step. Right: each model's loss on every held-out character after "
        f"{ablation.steps:,} steps, a bar at the seeds' mean with a line over their range and a "
        f"cross at seed 0 trained at learning rate {ablation.other_lr:zg}{bigram}.",
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
    describe(
        fig,
        f"{len(runs)} models on the two-lookups task ({'; '.join(r.name for r in runs)}). Left: "
        "each one's accuracy on held-out sequences, as labelled bars. Right: the attention "
        "weight its best head puts on the latest letter and on the latest digit, half of one "
        "softmax (0.5) dotted.",
    )
    return fig
